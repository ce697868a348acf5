/* Cross-memory attach (CMA) between the processes of one host: a point-to-point message
 * travels as its location, and the receiver reads it from the sender's ordinary (malloc)
 * buffer with process_vm_readv: one copy instead of two through the ring.
 *
 * Which messages (COLLIE_SHM_CMA, docs/tuning.md): every one from 64 KiB that is not part
 * of a reduction, when COLLIE_SHM_CMA is 1 or 2, or, unset, when CMA won the exchange timed
 * at creation (shm_cma_choice.c: the ring won in the AMD VM's usual state, CMA in its slow
 * one and on an Intel VM). Weighing the two message by message from measured copy costs,
 * with a message now and then the other way to keep both figures current, lost more than
 * it chose well: a way's first use of memory costs 2 to 4 ns a byte on that VM (a first
 * CMA read of a page, a slot's first copy), and each switch paid it again (2 ranks, 1 to
 * 64 MiB, median of 3: 10.4, 10.1, 4.9, 5.4 GB/s busbw against 14.5, 13.7, 9.4, 6.9 by CMA
 * alone); the measurement at creation switches once. The shared-memory collectives use
 * the same calls (algo/native/shm_direct.c), the broadcast's root also process_vm_writev
 * into its receiver's buffer.
 *
 * Linux allows the read when the reader may ptrace the target: same user, and with Yama's
 * ptrace_scope 1 only a declared tracer, hence prctl(PR_SET_PTRACER). A probe at creation
 * reads a value every rank knows from every peer, so that PID namespaces, seccomp or a
 * stricter Yama turn it off instead of failing later. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/copy.h"
#include "core/error.h"
#include "core/log.h"
#include "core/params.h"
#include "transport/shm.h"
#include "transport/transport.h"

#define PROBE_MAGIC 0x434d4150524f4245ull /* "CMAPROBE" */
/* A rank's cma_peers in its segment header: it could read every peer, and it leaves the
 * choice to the measurement at creation. */
#define CMA_PEERS_READ 1u
#define CMA_PEERS_MEASURE 2u

static void probe_value(const collie_comm_t *comm, int local_index, uint64_t v[2]) {
  v[0] = PROBE_MAGIC ^ comm->comm_hash;
  v[1] = comm->comm_hash + (uint64_t)local_index;
}

void collie_shm_cma_offer(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  /* Unset: on, unless the measurement after creation finds the ring faster. */
  const bool measure = !strcmp(collie_param_source(COLLIE_P_SHM_CMA), "unset");
  st->cma_mode = measure ? 1 : (int)collie_param_int(COLLIE_P_SHM_CMA);
  st->cma_measure = measure;
  if (st->cma_mode <= 0) return;
#ifdef PR_SET_PTRACER
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* EINVAL without Yama: nothing to allow */
#endif
  probe_value(comm, comm->local_rank, st->cma_probe);
  st->mine->cma_pid = (int32_t)getpid();
  st->mine->cma_addr = (uint64_t)(uintptr_t)st->cma_probe;
}

void collie_shm_cma_probe(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  bool ok = st->cma_mode > 0 && !st->one_process; /* threads reach each other directly */
  for (int li = 0; ok && li < comm->nlocal; li++) {
    if (li == comm->local_rank) continue;
    const collie_shm_seg_hdr_t *h = st->segs[li];
    uint64_t got[2] = {0, 0}, want[2];
    probe_value(comm, li, want);
    struct iovec local = {got, sizeof(got)}, remote = {(void *)(uintptr_t)h->cma_addr, sizeof(got)};
    ssize_t n = h->cma_addr ? process_vm_readv(h->cma_pid, &local, 1, &remote, 1, 0) : -1;
    const bool read_ok = n == (ssize_t)sizeof(got) && !memcmp(got, want, sizeof(got));
    /* The broadcast also writes the peer's buffer (algo/native/shm_direct.c): the value
     * it holds is written back, so a concurrent probe of another rank reads it unchanged. */
    if (read_ok && process_vm_writev(h->cma_pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(got)) continue;
    ok = false;
    collie_shm_probe_failed(comm, li, read_ok ? "process_vm_writev" : "process_vm_readv",
                            !h->cma_addr ? "it offered nothing"
                            : read_ok || n < 0 ? strerror(errno)
                                               : "it read another process");
  }
  atomic_store(&st->mine->cma_peers, ok ? CMA_PEERS_READ | (st->cma_measure ? CMA_PEERS_MEASURE : 0u) : 0u);
}

void collie_shm_cma_settle(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  bool ok = st->cma_mode > 0, measure = true;
  for (int li = 0; li < comm->nlocal; li++) {
    const uint32_t peers = st->segs[li] ? atomic_load(&((collie_shm_seg_hdr_t *)st->segs[li])->cma_peers) : 0u;
    if (!(peers & CMA_PEERS_READ)) ok = false;
    if (!(peers & CMA_PEERS_MEASURE)) measure = false; /* a rank that set COLLIE_SHM_CMA: no one measures */
  }
  st->cma_ok = st->cma_msgs = ok;
  st->cma_measure = ok && measure;
  if (ok && !st->cma_measure)
    COLLIE_INFO(COLLIE_SUB_TRANSPORT, comm->rank, "process_vm_readv on for messages of %d KiB and more%s",
                COLLIE_CMA_MIN / 1024,
                st->cma_mode == 2 ? ", and in the shared-memory all-to-all, all-gather and broadcast"
                                  : ", and in the shared-memory all-to-all");
}

/* True when process pid no longer runs or is on its way out: gone, a zombie, or exiting
 * (PF_EXITING in /proc/PID/stat's flags, set before its memory is torn down). A read from
 * such a peer fails with ESRCH (no memory left) or EFAULT (its mappings went mid-read);
 * either way the peer died, which the caller reports as a dead rank rather than as a local
 * system fault. */
static bool peer_gone(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return errno == ENOENT;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *paren = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  char state = 0;
  unsigned flags = 0;
  if (!paren || sscanf(paren + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2) return false;
  return state == 'Z' || state == 'X' || (flags & 0x4u) != 0; /* 0x4: PF_EXITING */
}

static int rw_fail(collie_comm_t *comm, int peer, pid_t pid, uint64_t len, bool write, int err) {
  char pd[160];
  const char *call = write ? "process_vm_writev" : "process_vm_readv";
  if (atomic_load(&comm->failed)) return -1;
  collie_peer_desc(comm, peer, pd, sizeof(pd));
  const bool gone = err == ESRCH || (err == EFAULT && peer_gone(pid));
  if (gone && collie_comm_await_failure(comm)) return -1;
  if (gone)
    collie_comm_fail(comm, COLLIE_ERR_REMOTE, false,
                     "%s died while rank %d was %s its %llu-byte buffer (%s: %s); check that rank's log and exit "
                     "status",
                     pd, comm->rank, write ? "writing" : "reading", (unsigned long long)len, call, strerror(err));
  else
    collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false,
                     "rank %d could not %s %llu bytes %s %s with %s: %s%s; if the peer is alive, set "
                     "COLLIE_SHM_CMA=0 to copy through shared memory",
                     comm->rank, write ? "write" : "read", (unsigned long long)len, write ? "to" : "from", pd, call,
                     err ? strerror(err) : "short transfer", collie_memory_hint(err));
  return -1;
}

/* Moves len bytes between local and the address addr in process pid: reads them into local,
 * or with `write` writes them from local. 0, or the failing errno (-1: short). */
static int rw_direct(pid_t pid, char *local, uint64_t addr, size_t len, bool write) {
  while (len) {
    struct iovec l = {local, len}, remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = write ? process_vm_writev(pid, &l, 1, &remote, 1, 0) : process_vm_readv(pid, &l, 1, &remote, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno ? errno : -1;
    if (n == 0) return -1;
    local += n;
    addr += (uint64_t)n;
    len -= (size_t)n;
  }
  return 0;
}

/* The kernel's copy meets the slow path memcpy does (core/copy.h): reading 512 KiB into a
 * destination 8 bytes past the source modulo 4 KiB ran at 2.7 GB/s against 11 to 13 at
 * other distances (AMD EPYC VM). Such a pair goes through a buffer at the remote address's
 * offset in its page, a cache-sized piece at a time: the kernel copies at full speed, and
 * collie_copy_vector, which has no slow path, moves the piece on while it is hot. */
enum { CMA_ALIAS_PIECE = 64 << 10 };

static int rw_bounced(pid_t pid, char *local, uint64_t addr, size_t len, bool write) {
  char *mem = malloc(CMA_ALIAS_PIECE + 4096);
  if (!mem) return ENOMEM;
  char *b = mem + ((addr - (uint64_t)(uintptr_t)mem) & 4095);
  int e = 0;
  for (size_t off = 0; off < len && !e; off += CMA_ALIAS_PIECE) {
    const size_t n = len - off < CMA_ALIAS_PIECE ? len - off : CMA_ALIAS_PIECE;
    if (write) {
      collie_copy_vector(b, local + off, n);
      e = rw_direct(pid, b, addr + off, n, true);
    } else if (!(e = rw_direct(pid, b, addr + off, n, false))) {
      collie_copy_vector(local + off, b, n);
    }
  }
  free(mem);
  return e;
}

static int rw_all(pid_t pid, char *local, uint64_t addr, size_t len, bool write) {
  const void *remote = (const void *)(uintptr_t)addr;
  if (write ? collie_copy_aliases(remote, local, len) : collie_copy_aliases(local, remote, len))
    return rw_bounced(pid, local, addr, len, write);
  return rw_direct(pid, local, addr, len, write);
}

int collie_shm_cma_copy(collie_comm_t *comm, int peer, char *dst, const collie_shm_bufloc_t *loc, uint64_t off,
                        size_t len) {
  int e = rw_all((pid_t)loc->pid, dst, loc->addr + off, len, false);
  return e ? rw_fail(comm, peer, (pid_t)loc->pid, len, false, e > 0 ? e : 0) : 0;
}

int collie_shm_cma_put(collie_comm_t *comm, int peer, const collie_shm_bufloc_t *loc, uint64_t off, const char *src,
                       size_t len) {
  int e = rw_all((pid_t)loc->pid, (char *)src, loc->addr + off, len, true);
  return e ? rw_fail(comm, peer, (pid_t)loc->pid, len, true, e > 0 ? e : 0) : 0;
}

int collie_shm_cma_read(collie_comm_t *comm, int peer, collie_xfer_t *x, const collie_shm_bufloc_t *loc, char *bounce) {
  const pid_t pid = (pid_t)loc->pid;
  if (!x->reduce) return collie_shm_cma_copy(comm, peer, x->rbuf, loc, 0, x->nbytes);
  /* Receive-reduce: a cache-sized piece at a time, reduced while it is hot. The bounce
   * size is a multiple of every element size. */
  for (uint64_t off = 0; off < x->nbytes; off += COLLIE_CMA_BOUNCE) {
    size_t len = x->nbytes - off < COLLIE_CMA_BOUNCE ? (size_t)(x->nbytes - off) : COLLIE_CMA_BOUNCE;
    int e = rw_all(pid, bounce, loc->addr + off, len, false);
    if (e) return rw_fail(comm, peer, pid, x->nbytes, false, e > 0 ? e : 0);
    collie_xfer_deliver(x, off, bounce, len, true);
  }
  return 0;
}

void collie_shm_cma_locate(const void *p, size_t len, collie_shm_bufloc_t *loc) {
  memset(loc, 0, sizeof(*loc));
  loc->kind = COLLIE_BUFLOC_CMA;
  loc->pid = (int32_t)getpid();
  loc->addr = (uint64_t)(uintptr_t)p;
  loc->len = len;
}
