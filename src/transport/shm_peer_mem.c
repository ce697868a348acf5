/* Peers' collie_mem_alloc allocations, mapped into this process (see shm.h). A peer's
 * allocation is a memfd it keeps open; this process opens it through /proc/<pid>/fd/<fd>
 * (allowed for processes of the same user) and checks the header's id, so that a
 * descriptor number reused for another allocation is remapped, never misread. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/params.h"
#include "transport/shm.h"

struct collie_shm_peer_map {
  int32_t pid, fd;
  uint64_t id;
  char *base;
  size_t bytes;
};

static struct collie_shm_peer_map *find_slot(collie_shm_state_t *st, int32_t pid, int32_t fd) {
  for (int i = 0; i < st->nmaps; i++)
    if (st->maps[i].pid == pid && st->maps[i].fd == fd) return &st->maps[i];
  if (st->nmaps == st->maps_cap) {
    int cap = st->maps_cap ? 2 * st->maps_cap : 8;
    struct collie_shm_peer_map *m = realloc(st->maps, (size_t)cap * sizeof(*m));
    if (!m) return NULL;
    st->maps = m;
    st->maps_cap = cap;
  }
  struct collie_shm_peer_map *m = &st->maps[st->nmaps++];
  memset(m, 0, sizeof(*m));
  m->pid = pid;
  m->fd = fd;
  return m;
}

/* Why a mapping failed when it was for want of memory (address space, ulimit -v), or
 * because the allocation's descriptor is gone: the advice is then not the one about users
 * and namespaces. */
static const char OUT_OF_MEMORY[] = "out of memory";
static const char PEER_GONE[] = "no such file: that process has exited, or closed the allocation (collie_mem_free) "
                                "while this collective used it";
static const char REUSED[] = "it holds a different allocation (freed while in use, or another process namespace)";

/* The local address of loc's buffer, mapping the allocation on first use; NULL with *why
 * set when it cannot be reached. */
static char *try_map(collie_comm_t *comm, const collie_shm_bufloc_t *loc, const char **why) {
  if (loc->kind == COLLIE_BUFLOC_ADDR) return (char *)(uintptr_t)loc->addr;
  *why = "it is not shared";
  if (loc->kind != COLLIE_BUFLOC_MEM) return NULL;
  collie_shm_state_t *st = comm->shm;
  struct collie_shm_peer_map *m = find_slot(st, loc->pid, loc->fd);
  *why = OUT_OF_MEMORY;
  if (!m) return NULL;
  if (m->base && m->id != loc->id) { /* the descriptor now holds another allocation */
    munmap(m->base, m->bytes);
    m->base = NULL;
  }
  if (!m->base) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)loc->pid, (int)loc->fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      *why = errno == ENOENT ? PEER_GONE : strerror(errno);
      return NULL;
    }
    struct stat sb;
    void *p = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= COLLIE_MEM_HEADER)
      p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
      *why = e == ENOMEM ? OUT_OF_MEMORY : strerror(e);
      return NULL;
    }
    const collie_mem_header_t *h = p;
    if (h->magic != COLLIE_MEM_MAGIC || h->id != loc->id) {
      munmap(p, (size_t)sb.st_size);
      *why = REUSED;
      return NULL;
    }
    m->base = p;
    m->bytes = (size_t)sb.st_size;
    m->id = loc->id;
  }
  *why = "the buffer lies outside it";
  if (loc->off > m->bytes || loc->len > m->bytes - loc->off) return NULL;
  return m->base + loc->off;
}

static char *fail(collie_comm_t *comm, int rank, const collie_shm_bufloc_t *loc, const char *why) {
  char pd[160];
  if (why == PEER_GONE) {
    collie_comm_fail(comm, COLLIE_ERR_REMOTE, false,
                     "rank %d could not map the collie_mem_alloc buffer of %s (/proc/%d/fd/%d): %s; check that "
                     "rank's log and exit status, and that it frees a buffer only after the calls that use it",
                     comm->rank, collie_peer_desc(comm, rank, pd, sizeof(pd)), (int)loc->pid, (int)loc->fd, why);
    return NULL;
  }
  collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false,
                   "rank %d could not map the collie_mem_alloc buffer of %s (/proc/%d/fd/%d): %s; %s, or set "
                   "COLLIE_SHM_DIRECT=0 (the buffers are then copied through shared memory)",
                   comm->rank, collie_peer_desc(comm, rank, pd, sizeof(pd)), (int)loc->pid, (int)loc->fd, why,
                   why == OUT_OF_MEMORY ? COLLIE_MEMORY_ADVICE : "the ranks must run as one user in one process namespace");
  return NULL;
}

char *collie_shm_peer_buffer(collie_comm_t *comm, int rank, const collie_shm_bufloc_t *loc) {
  const char *why = "";
  char *p = try_map(comm, loc, &why);
  if (p) return p;
  /* A rank that freed its allocations (its descriptor number may hold a newer one) or
   * exited may have done so because the communicator failed elsewhere. Without this wait,
   * 4 runs in 35 of the out-of-memory test fault_alloc_fail_tuned blamed the missing file
   * of a rank that had exited after rank 0 ran out of memory, and 1 in 40 the different
   * allocation found under its descriptor number. */
  if ((why == PEER_GONE || why == REUSED) && collie_comm_await_failure(comm)) return NULL;
  return fail(comm, rank, loc, why);
}

void collie_shm_probe_failed(collie_comm_t *comm, int li, const char *what, const char *why) {
  char pd[160];
  COLLIE_INFO(COLLIE_SUB_TRANSPORT, comm->rank, "%s off: rank %d cannot reach %s (%s); buffers are copied through "
              "shared memory", what, comm->rank, collie_peer_desc(comm, comm->local_ranks[li], pd, sizeof(pd)), why);
}

void collie_shm_probe_offer(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  collie_mem_loc_t m;
  if (!collie_param_int(COLLIE_P_SHM_DIRECT) || collie_mem_alloc(&st->probe, 64) != COLLIE_SUCCESS) return;
  if (!collie_mem_locate(st->probe, 64, &m)) return;
  st->mine->probe_pid = m.pid;
  st->mine->probe_fd = m.fd;
  st->mine->probe_id = m.id;
}

void collie_shm_probe_peers(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  bool ok = st->probe != NULL;
  for (int li = 0; ok && li < comm->nlocal; li++) {
    if (li == comm->local_rank || st->one_process) continue;
    const collie_shm_seg_hdr_t *h = st->segs[li];
    collie_shm_bufloc_t loc = {.kind = COLLIE_BUFLOC_MEM, .pid = h->probe_pid, .fd = h->probe_fd,
                               .id = h->probe_id, .off = COLLIE_MEM_HEADER, .len = 64};
    const char *why = "";
    if (h->probe_id && try_map(comm, &loc, &why)) continue;
    ok = false;
    collie_shm_probe_failed(comm, li, "single copy of collie_mem_alloc buffers", h->probe_id ? why : "it offered none");
  }
  atomic_store(&st->mine->maps_peers, ok ? 1u : 0u);
}

void collie_shm_probe_settle(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  bool ok = true;
  for (int li = 0; li < comm->nlocal; li++) {
    const collie_shm_seg_hdr_t *h = st->segs[li];
    if (!h || !atomic_load(&((collie_shm_seg_hdr_t *)h)->maps_peers)) ok = false;
  }
  st->direct_ok = ok;
  collie_mem_free(st->probe); /* the peers keep their mapping of it until they are destroyed */
  st->probe = NULL;
}

bool collie_shm_locate(const collie_comm_t *comm, const void *p, size_t len, collie_shm_bufloc_t *loc) {
  memset(loc, 0, sizeof(*loc));
  loc->len = len;
  collie_mem_loc_t m;
  if (!p) return false;
  if (comm->shm->one_process) {
    loc->kind = COLLIE_BUFLOC_ADDR;
    loc->addr = (uint64_t)(uintptr_t)p;
  } else if (collie_mem_locate(p, len, &m)) {
    loc->kind = COLLIE_BUFLOC_MEM;
    loc->pid = m.pid;
    loc->fd = m.fd;
    loc->id = m.id;
    loc->off = m.off;
  }
  return loc->kind != COLLIE_BUFLOC_NONE;
}

void collie_shm_unmap_peers(collie_shm_state_t *st) {
  for (int i = 0; i < st->nmaps; i++)
    if (st->maps[i].base) munmap(st->maps[i].base, st->maps[i].bytes);
  free(st->maps);
  st->maps = NULL;
  st->nmaps = st->maps_cap = 0;
}
