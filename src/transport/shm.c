/* Shared-memory rings between the ranks of one host (see shm.h). */
#include "transport/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "algo/algo.h"
#include "bootstrap/socket.h"
#include "core/error.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/params.h"
#include "core/futex.h"

#define SEG_MAGIC 0x636f6c6c69657368ull /* "colliesh" */

typedef struct {
  _Atomic uint64_t head; /* slots published by the sender */
  char pad0[56];
  _Atomic uint64_t tail; /* slots released by the receiver */
  char pad1[56];
  _Atomic uint64_t acks; /* single-copy messages the receiver has finished reading */
  char pad2[56];
} ring_ctl_t;

/* wire header flag: the slot carries where the payload is (a collie_shm_bufloc_t), not the
 * payload; the receiver copies straight from the sender's buffer and acknowledges. */
#define FLAG_SINGLE_COPY 1u
/* Messages at least this large from a reachable buffer go single-copy (shm_direct.c uses
 * the same threshold for the collectives). */
#define SINGLE_COPY_MIN 65536

typedef struct {
  collie_wire_hdr_t hdr; /* valid in the first slot of a message */
  uint64_t len;          /* payload bytes in this slot */
  uint64_t pad;
} slot_hdr_t;

typedef struct {
  ring_ctl_t *out_ctl;  /* my ring in the peer's segment */
  char *out_slots;
  ring_ctl_t *in_ctl;   /* the peer's ring in my segment */
  char *in_slots;
  collie_shm_seg_hdr_t *peer_hdr;
  uint64_t out_head, out_tail_seen;
  uint64_t in_tail, in_head_seen;
  uint64_t acks_wanted; /* single-copy messages sent so far (the head one waits for its ack) */
  char *cma_bounce;     /* receive-reduce by CMA: the piece read, allocated on first use */
  collie_store_choice_t slot_stores; /* how copies into my ring's slots store (core/store_choice.h) */
  uint64_t *taken; /* lazy rings: per slot, the bytes this process mapped, out's slots then in's */
} shm_peer_t;

static size_t ring_bytes(uint64_t nslots, uint64_t slot_size) {
  return sizeof(ring_ctl_t) + nslots * (sizeof(slot_hdr_t) + slot_size);
}

static char *ring_at(void *seg, int idx, uint64_t nslots, uint64_t slot_size) {
  return (char *)seg + sizeof(collie_shm_seg_hdr_t) + (size_t)idx * ring_bytes(nslots, slot_size);
}

static slot_hdr_t *slot_at(char *slots, uint64_t i, uint64_t nslots, uint64_t slot_size) {
  return (slot_hdr_t *)(slots + (i % nslots) * (sizeof(slot_hdr_t) + slot_size));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Maps the pages under [p, p+len) now, writable, instead of at first use: a fault on a
 * shared page costs several microseconds, and each of the first operations would pay one
 * per slot (8 small allreduces took 7-15 us each instead of 1 us). On tmpfs it also gives
 * the pages their memory, and where /dev/shm is full it fails (EFAULT) where a write would
 * have killed the process with SIGBUS. 0, or an errno value: EINVAL where the kernel
 * (before 5.14) does not know the advice. */
static int populate(void *p, size_t len) {
  uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095, b = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;
  return madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
}
static bool prefault(void *p, size_t len) { return populate(p, len) == 0; }

/* Also writes a word into each page, distinct from page to page. On the VMs measured a
 * page's first write cost tens of microseconds even after the advice above had mapped it
 * (its zeroed content, it seems, still shared by the host): 2 ranks, 32 KiB all-to-all,
 * the first use of each of the 8 slots 70 to 90 us, then 3 us; written at creation, 2 us
 * from the first. Only where the advice worked: a write past a full /dev/shm would kill
 * the process (SIGBUS). */
static int prewrite(char *p, size_t len) {
  int e = populate(p, len);
  const uintptr_t end = (uintptr_t)p + len; /* aligned words within [p, end): the first, then each page's */
  for (uintptr_t a = ((uintptr_t)p + 7) & ~(uintptr_t)7; !e && a + 8 <= end; a = (a + 4096) & ~(uintptr_t)4095)
    *(volatile uint64_t *)a = (uint64_t)a | 1;
  return e;
}

/* Staging buffers are mapped whole at creation while the part of a rank's segment that
 * creation prepares holds at most this much (st->prewrite): beyond it only the pages small
 * calls use are, and the rest when they are first used. */
#define PREWRITE_MAX_BYTES (16u << 20)

/* [p, p+len) as this process will use it: written through this process's mapping
 * (prewrite; every process mapping a staging buffer does so: with only the writer's
 * writes, each slot's first use still cost 25 to 35 us); past PREWRITE_MAX_BYTES only its
 * first `small` bytes are mapped, those small calls use. */
static void prepare(const collie_shm_state_t *st, char *p, size_t len, size_t small) {
  if (st->prewrite) prewrite(p, len);
  else prefault(p, small);
}

/* Rings get their memory when a pair first uses them (lazy_rings), not at creation: a
 * ring is 1 MiB with the defaults and a host of n ranks has n (n - 1) of them, while most
 * communicators move their data through the collective area and use few rings or none.
 * Prepared at creation, an 8-rank communicator took 62 MiB of /dev/shm and 33 ms to create
 * on 2 cores, so that Docker's default /dev/shm of 64 MiB held one such communicator and
 * no second. A sender maps (populate) the bytes of the ring's slots a message needs beyond
 * what they had (ring_take), which on a full /dev/shm fails with a sentence instead of a
 * SIGBUS; the receiver maps what it is about to read. Only each ring's counters are
 * prepared at creation. Where the kernel lacks the advice, creation reserves whole rings
 * as before. */
static size_t ring_off(const collie_shm_state_t *st, int idx) {
  return sizeof(collie_shm_seg_hdr_t) + (size_t)idx * ring_bytes(st->nslots, st->slot_size);
}

/* About the bytes of a segment that creation reserves: all of it but the ring at the
 * rank's own index, which no one uses; with lazy rings its header, the other rings'
 * counters and the collective area (a page each, as tmpfs gives them). */
static size_t eager_bytes(const collie_shm_state_t *st, int nlocal) {
  if (!st->lazy_rings) return st->seg_bytes - ring_bytes(st->nslots, st->slot_size);
  return (size_t)nlocal * 4096 + (st->area_off ? st->seg_bytes - st->area_off : 0);
}

/* Whether this kernel knows MADV_POPULATE_WRITE (Linux 5.14), which lazy rings need:
 * asked once per process, on a private page. */
static bool populate_known(void) {
  static _Atomic int known = -1;
  int k = atomic_load(&known);
  if (k < 0) {
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    k = p != MAP_FAILED && populate(p, 4096) != EINVAL;
    if (p != MAP_FAILED) munmap(p, 4096);
    atomic_store(&known, k);
  }
  return k;
}

/* One ring's counters (its slots are prepared as they are used: lazy_rings). */
static void prefault_ring(char *ring) { prefault(ring, sizeof(ring_ctl_t)); }

/* Records the segment mapped for local index li, and where its collective area lies: the
 * collectives look the areas up many times a call (collie_shm_area). */
static void set_seg(collie_shm_state_t *st, int li, void *seg) {
  st->segs[li] = seg;
  st->areas[li] = st->area_off ? (collie_shm_area_t *)((char *)seg + st->area_off) : NULL;
}

/* The collective area's counters and both staging buffers (a: st->areas[li], NULL: none). */
static void prefault_area(const collie_shm_state_t *st, collie_shm_area_t *a) {
  if (!a) return;
  prefault(a, sizeof(*a));
  for (int parity = 0; parity < 2; parity++) prepare(st, collie_shm_area_buf(a, parity, st->area_size), st->area_size, 4096);
}

static double mib(unsigned long long bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* posix_fallocate, again when a signal interrupts it; 0 or an errno value. */
static int reserve_range(int fd, size_t off, size_t len) {
  int e = 0;
  if (len) {
    do e = posix_fallocate(fd, (off_t)off, (off_t)len);
    while (e == EINTR);
  }
  return e;
}

/* The free and total MiB of the filesystem holding fd (/dev/shm); false when unknown. */
static bool shm_space(int fd, double *free_mib, double *total_mib) {
  struct statvfs v;
  if (fstatvfs(fd, &v) != 0) return false;
  *free_mib = mib((unsigned long long)v.f_bavail * v.f_frsize);
  *total_mib = mib((unsigned long long)v.f_blocks * v.f_frsize);
  return true;
}

static const char shm_remedy[] =
    "enlarge /dev/shm (docker run --shm-size=1g or --ipc=host; Kubernetes: an emptyDir volume with medium "
    "Memory on /dev/shm; elsewhere mount -o remount,size=... /dev/shm), lower COLLIE_SHM_NSLOTS, "
    "COLLIE_SHM_SLOT_SIZE or COLLIE_SHM_COLL_SIZE, or set COLLIE_TRANSPORT=tcp";

/* posix_fallocate of the part of the segment creation prepares (eager_bytes); 0 or an
 * errno value. */
static int reserve_eager(const collie_comm_t *comm, const collie_shm_state_t *st, int fd) {
  const size_t own_off = ring_off(st, comm->local_rank), own_len = ring_bytes(st->nslots, st->slot_size);
  if (!st->lazy_rings) {
    int e = reserve_range(fd, 0, own_off);
    return e ? e : reserve_range(fd, own_off + own_len, st->seg_bytes - own_off - own_len);
  }
  int e = reserve_range(fd, 0, sizeof(collie_shm_seg_hdr_t));
  for (int li = 0; !e && li < comm->nlocal; li++)
    if (li != comm->local_rank) e = reserve_range(fd, ring_off(st, li), sizeof(ring_ctl_t));
  if (!e && st->area_off) e = reserve_range(fd, st->area_off, st->seg_bytes - st->area_off);
  return e;
}

/* tmpfs gives a segment its pages when they are first written, and when /dev/shm is full
 * (a container's default is 64 MiB) that write kills the process with SIGBUS, during
 * creation or in the middle of a job. What creation prepares (eager_bytes) is reserved
 * first while it is written whole (st->prewrite), so that a full /dev/shm becomes a
 * sentence; rings taken on use fail with one then (ring_take). A larger part is written
 * only where it is used (staging buffers of many MiB), so it is only compared with the
 * free space, and a shortfall is a warning. */
static collie_result_t reserve_segment(collie_comm_t *comm, const collie_shm_state_t *st, int fd) {
  size_t need = eager_bytes(st, comm->nlocal);
  double free_mib, total_mib;
  unsigned long long host_need = (unsigned long long)need * (unsigned long long)comm->nlocal;
  if (!st->prewrite) {
    if (shm_space(fd, &free_mib, &total_mib) && free_mib < mib(need))
      COLLIE_WARN(COLLIE_SUB_TRANSPORT, comm->rank,
                  "/dev/shm has %.1f MiB free of %.1f MiB, less than this rank's shared memory segment may use "
                  "(%.1f MiB; %.1f MiB for the %d ranks of this host): a rank whose pages run out there is "
                  "killed by SIGBUS. To avoid that, %s",
                  free_mib, total_mib, mib(need), mib(host_need), comm->nlocal, shm_remedy);
    return COLLIE_SUCCESS;
  }
  int e = reserve_eager(comm, st, fd);
  if (e == 0) return COLLIE_SUCCESS;
  char where[96] = ""; /* the free space the other ranks' reservations left */
  if (shm_space(fd, &free_mib, &total_mib))
    snprintf(where, sizeof(where), " (/dev/shm: %.1f MiB free of %.1f MiB)", free_mib, total_mib);
  char rings[96] = ""; /* taken later, as pairs exchange messages */
  if (st->lazy_rings)
    snprintf(rings, sizeof(rings), ", and up to %.1f MiB more for each pair of them that exchanges messages",
             mib(ring_bytes(st->nslots, st->slot_size)));
  return collie_error(comm, COLLIE_ERR_SYSTEM,
                      "rank %d could not reserve %.1f MiB of shared memory for its segment %s: %s%s; the %d ranks "
                      "of this host need about %.1f MiB there%s: %s",
                      comm->rank, mib(need), st->name, strerror(e), where, comm->nlocal, mib(host_need), rings,
                      shm_remedy);
}

/* What to do after a shm_open failed with e: the limit of open files where the process ran
 * out of descriptors, else `otherwise`. */
static const char *shm_open_advice(int e, const char *otherwise, char *buf, size_t len) {
  return e == EMFILE || e == ENFILE ? collie_fd_advice(e, buf, len) : otherwise;
}

static void seg_name(const collie_comm_t *comm, int rank, char *buf, size_t len) {
  snprintf(buf, len, "/collie-%016llx-%d", (unsigned long long)comm->comm_hash, rank);
}

/* The collective area's buffers (COLLIE_SHM_COLL_SIZE): 1 MiB unset, with rounds of 1 MiB
 * where the host's ranks outnumber its online CPUs and of 256 KiB (the parameter's
 * default) where they do not. With a CPU per rank 1 MiB rounds measured level with 256 KiB
 * ones, and the buffers' size serves the slot layout of broadcasts and one-round
 * all-gathers (algo/native/shm_native.c: 8 slots of 256 KiB instead of 2). With more
 * ranks than CPUs every round of an all-reduce, reduce-scatter or all-to-all waits for
 * every rank to have run, which there means a process switch, so fewer, larger rounds
 * win (4 ranks on 2 cores, medians of 5, busbw GB/s, 256 KiB against 1 MiB: all-reduce
 * 1 MiB 5.6 / 6.9, 64 MiB 3.2 / 3.6; all-to-all 5.6 / 7.5 and 3.1 / 3.6; reduce-scatter
 * 3.8 / 5.2 and 3.2 / 3.8; 8 ranks, all-reduce 2.2 / 2.9 and 1.5 / 2.2; 2M and 4M no
 * better). Only while the host's segments stay within 48 MiB, below Docker's default
 * /dev/shm of 64 MiB, with every ring counted whole as if every pair used its own (8 ranks
 * would need 72; 256 KiB otherwise). The online CPU count,
 * not this process's affinity, so that every rank of the host sizes its segment alike. */
enum { AREA_LARGE = 1 << 20, AREA_HOST_BUDGET = 48 << 20 };

/* The rings' geometry from COLLIE_SHM_NSLOTS and COLLIE_SHM_SLOT_SIZE, as every rank of a
 * host computes it. */
static void ring_geometry(uint64_t *nslots, uint64_t *slot_size) {
  *nslots = (uint64_t)collie_param_int(COLLIE_P_SHM_NSLOTS);
  *slot_size = (uint64_t)collie_param_int(COLLIE_P_SHM_SLOT_SIZE);
  if (*nslots < 2) *nslots = 2;
  *slot_size = (*slot_size + 63) & ~63ull;
  if (*slot_size < 4096) *slot_size = 4096;
}

/* A segment's header and rings for nlocal ranks. */
static size_t rings_bytes(int nlocal) {
  uint64_t nslots, slot_size;
  ring_geometry(&nslots, &slot_size);
  return sizeof(collie_shm_seg_hdr_t) + (size_t)nlocal * ring_bytes(nslots, slot_size);
}

/* Whether nlocal ranks outnumber the host's online CPUs: every rank of the host counts
 * alike (a rank's own affinity mask or cgroup quota may differ from its neighbours'). */
static bool host_crowded(int nlocal) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus >= 1 && nlocal > cpus;
}

collie_shm_area_sizes_t collie_shm_area_sizes(int nlocal) {
  const size_t set = (size_t)collie_param_int(COLLIE_P_SHM_COLL_SIZE);
  if (collie_param_from_env(COLLIE_P_SHM_COLL_SIZE)) return (collie_shm_area_sizes_t){set, set};
  const size_t host = (size_t)nlocal * (rings_bytes(nlocal) + 2 * AREA_LARGE + 8192);
  if (host > AREA_HOST_BUDGET || set >= AREA_LARGE) return (collie_shm_area_sizes_t){set, set};
  return (collie_shm_area_sizes_t){AREA_LARGE, host_crowded(nlocal) ? AREA_LARGE : set};
}

/* Whether the CPU has PREFETCHW (CPUID 0x80000001, ECX bit 8: AMD since the K8, Intel
 * since Broadwell). */
static bool cpu_has_prefetchw(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & bit_PRFCHW);
#else
  return false;
#endif
}

collie_result_t collie_shm_create(collie_comm_t *comm) {
  collie_shm_state_t *st = calloc(1, sizeof(*st));
  if (!st) return collie_init_no_memory(comm, comm->rank, "its shared-memory state");
  comm->shm = st;
  collie_store_init(&st->fill_stores);
  for (int i = 0; i < COLLIE_SHM_DRAIN_KINDS; i++) collie_store_init_even(&st->drain_stores[i]);
  ring_geometry(&st->nslots, &st->slot_size);
  st->seg_bytes = rings_bytes(comm->nlocal);
  st->crowded = host_crowded(comm->nlocal);
  st->inl_slots = st->crowded ? COLLIE_SHM_INLINE_SLOTS : COLLIE_SHM_INLINE_SLOTS_UNCROWDED;
  st->prefetchw = cpu_has_prefetchw();
  /* The collective area exists when every rank shares this host: the shared-memory
   * collectives need all ranks' areas. Its pages are touched only when used. */
  const collie_shm_area_sizes_t coll = collie_shm_area_sizes(comm->nlocal);
  if (coll.buffer && comm->nlocal == comm->nranks) {
    st->area_size = (coll.buffer + 4095) & ~(size_t)4095;
    st->round_size = (coll.round + 4095) & ~(size_t)4095;
    st->area_off = (st->seg_bytes + 4095) & ~(size_t)4095;
    st->seg_bytes = st->area_off + sizeof(collie_shm_area_t) + 2 * st->area_size;
    COLLIE_INFO(COLLIE_SUB_INIT, comm->rank, "collective area of 2 x %zu KiB per rank, rounds of %zu KiB (%s)",
                st->area_size >> 10, st->round_size >> 10,
                collie_param_from_env(COLLIE_P_SHM_COLL_SIZE) ? "COLLIE_SHM_COLL_SIZE"
                : st->area_size != AREA_LARGE                 ? "default: the host's segments would outgrow 48 MiB"
                : st->crowded                                 ? "default: more ranks than online CPUs"
                                                              : "default");
    st->inl_bytes = calloc((size_t)comm->nranks, COLLIE_SHM_INLINE_BYTES); /* whole lines copied */
    if (!st->inl_bytes)
      return collie_init_no_memory(comm, comm->rank, "its shared-memory state");
  }
  st->lazy_rings = populate_known();
  st->prewrite = eager_bytes(st, comm->nlocal) <= PREWRITE_MAX_BYTES;
  seg_name(comm, comm->rank, st->name, sizeof(st->name));
  int fd = shm_open(st->name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    const int e = errno;
    char advice[400];
    return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not create shared memory segment %s: %s; %s",
                        comm->rank, st->name, strerror(e),
                        shm_open_advice(e, "check that /dev/shm is mounted and writable, or set COLLIE_TRANSPORT=tcp",
                                        advice, sizeof(advice)));
  }
  if (ftruncate(fd, (off_t)st->seg_bytes) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(st->name);
    return collie_error(comm, COLLIE_ERR_SYSTEM,
                        "rank %d could not size shared memory segment %s to %zu bytes: %s; /dev/shm may be "
                        "full",
                        comm->rank, st->name, st->seg_bytes, strerror(e));
  }
  collie_result_t reserved = reserve_segment(comm, st, fd);
  if (reserved != COLLIE_SUCCESS) {
    close(fd);
    shm_unlink(st->name);
    return reserved;
  }
  void *p = mmap(NULL, st->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(st->name);
    return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not map shared memory segment %s: %s%s",
                        comm->rank, st->name, strerror(e), collie_memory_hint(e));
  }
  st->mine = p;
  st->mine->nslots = st->nslots;
  st->mine->slot_size = st->slot_size;
  st->mine->nrings = (uint64_t)comm->nlocal;
  st->mine->magic = SEG_MAGIC;
  st->segs = calloc((size_t)comm->nlocal, sizeof(void *));
  st->areas = calloc((size_t)comm->nlocal, sizeof(*st->areas));
  if (!st->segs || !st->areas) return collie_init_no_memory(comm, comm->rank, "its table of shared-memory segments");
  set_seg(st, comm->local_rank, p);
  collie_shm_probe_offer(comm);
  collie_shm_cma_offer(comm);
  for (int li = 0; li < comm->nlocal; li++)
    if (li != comm->local_rank) prefault_ring(ring_at(p, li, st->nslots, st->slot_size));
  prefault_area(st, st->areas[comm->local_rank]);
  return COLLIE_SUCCESS;
}

collie_result_t collie_shm_connect(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  st->one_process = true;
  for (int r = 0; comm->cards && r < comm->nranks; r++)
    if (comm->cards[r].pid != comm->cards[comm->rank].pid || strcmp(comm->cards[r].host_id, comm->cards[comm->rank].host_id))
      st->one_process = false;
  if (!comm->cards) st->one_process = false;
  char name[64], pd[160];
  for (int li = 0; li < comm->nlocal; li++) {
    int r = comm->local_ranks[li];
    if (r == comm->rank) continue;
    seg_name(comm, r, name, sizeof(name));
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
      const int e = errno;
      char advice[400];
      return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not open the shared memory segment %s of %s: %s; %s",
                          comm->rank, name, collie_peer_desc(comm, r, pd, sizeof(pd)), strerror(e),
                          shm_open_advice(e, "if the ranks run in different containers, set COLLIE_HOST_ID "
                                             "differently per container or COLLIE_TRANSPORT=tcp",
                                          advice, sizeof(advice)));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size != st->seg_bytes) {
      close(fd);
      return collie_error(comm, COLLIE_ERR_SYSTEM,
                          "rank %d found the shared memory segment of %s with an unexpected size; all ranks "
                          "must use the same COLLIE_SHM_NSLOTS, COLLIE_SHM_SLOT_SIZE and COLLIE_SHM_COLL_SIZE "
                          "(unset, the last follows the online CPUs this rank sees: %ld; set it on every rank "
                          "where containers see different counts)",
                          comm->rank, collie_peer_desc(comm, r, pd, sizeof(pd)), sysconf(_SC_NPROCESSORS_ONLN));
    }
    void *p = mmap(NULL, st->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
      return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not map the segment of %s: %s%s", comm->rank,
                          collie_peer_desc(comm, r, pd, sizeof(pd)), strerror(e), collie_memory_hint(e));
    set_seg(st, li, p);
    shm_peer_t *sp = calloc(1, sizeof(*sp));
    if (sp && !(sp->taken = calloc(2 * st->nslots, sizeof(*sp->taken)))) {
      free(sp);
      sp = NULL;
    }
    if (!sp) return collie_init_no_memory(comm, comm->rank, "the state of a shared-memory peer");
    collie_store_init(&sp->slot_stores);
    char *out = ring_at(p, comm->local_rank, st->nslots, st->slot_size);
    char *in = ring_at(st->mine, li, st->nslots, st->slot_size);
    sp->out_ctl = (ring_ctl_t *)out;
    sp->out_slots = out + sizeof(ring_ctl_t);
    sp->in_ctl = (ring_ctl_t *)in;
    sp->in_slots = in + sizeof(ring_ctl_t);
    sp->peer_hdr = p;
    prefault_ring(out);
    prefault_area(st, st->areas[li]);
    comm->peers[r].tp = &collie_transport_shm;
    comm->peers[r].tp_state = sp;
  }
  collie_shm_probe_peers(comm);
  collie_shm_cma_probe(comm);
  return COLLIE_SUCCESS;
}

void collie_shm_unlink(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  if (st && st->mine && !st->unlinked) {
    shm_unlink(st->name);
    st->unlinked = 1;
  }
}

void collie_shm_unlink_peers(collie_comm_t *comm) {
  char name[96];
  for (int li = 0; comm->local_ranks && li < comm->nlocal; li++) {
    seg_name(comm, comm->local_ranks[li], name, sizeof(name));
    shm_unlink(name); /* ENOENT for those already removed */
  }
}

void collie_shm_destroy(collie_comm_t *comm) {
  collie_shm_state_t *st = comm->shm;
  if (!st) return;
  collie_shm_unlink(comm);
  collie_mem_free(st->probe);
  collie_shm_unmap_peers(st);
  for (int li = 0; st->segs && li < comm->nlocal; li++)
    if (st->segs[li]) munmap(st->segs[li], st->seg_bytes);
  free(st->segs);
  free(st->areas);
  free(st->inl_bytes);
  free(st->fold_piece);
  free(st);
  comm->shm = NULL;
}

static void wake_if_sleeping(collie_shm_seg_hdr_t *h) {
  if (atomic_load_explicit(&h->sleeping, memory_order_relaxed)) {
    atomic_fetch_add(&h->doorbell, 1);
    collie_futex_wake(&h->doorbell);
  }
}

/* Wakes the peer if it sleeps: the fence pairs with the sleeper's store to `sleeping`
 * before its last look at the rings (no lost wake-up). */
static void notify(collie_shm_seg_hdr_t *h) {
  atomic_thread_fence(memory_order_seq_cst);
  wake_if_sleeping(h);
}

void collie_shm_notify_others(collie_comm_t *comm) {
  atomic_thread_fence(memory_order_seq_cst); /* once for all: as in notify() */
  for (int li = 0; li < comm->nlocal; li++)
    if (li != comm->local_rank) wake_if_sleeping(comm->shm->segs[li]);
}

void collie_shm_post_failure(collie_comm_t *comm, collie_result_t res, const char *msg) {
  collie_shm_state_t *st = comm->shm;
  collie_shm_seg_hdr_t *h = st ? st->mine : NULL;
  if (!h || !st->segs || atomic_exchange(&h->fail_claim, 1)) return;
  snprintf(h->fail_text, sizeof(h->fail_text), "%s", msg);
  atomic_store_explicit(&h->failed, (uint32_t)res, memory_order_release);
  /* as collie_shm_notify_others, but a failure while the communicator is being created may
   * come before every peer's segment is mapped */
  atomic_thread_fence(memory_order_seq_cst);
  for (int li = 0; li < comm->nlocal; li++)
    if (li != comm->local_rank && st->segs[li]) wake_if_sleeping(st->segs[li]);
}

collie_result_t collie_shm_peer_failure(const collie_comm_t *comm, int *rank, char *text, size_t len) {
  const collie_shm_state_t *st = comm->shm;
  for (int li = 0; st && st->segs && li < comm->nlocal; li++) {
    const collie_shm_seg_hdr_t *h = st->segs[li];
    if (li == comm->local_rank || !h) continue;
    const uint32_t f = atomic_load_explicit(&h->failed, memory_order_acquire);
    if (!f) continue;
    snprintf(text, len, "%.*s", (int)sizeof(h->fail_text) - 1, h->fail_text); /* bounded: another process wrote it */
    *rank = comm->local_ranks[li];
    return f <= COLLIE_ERR_INTERNAL ? (collie_result_t)f : COLLIE_ERR_REMOTE;
  }
  return COLLIE_SUCCESS;
}

void collie_shm_post_waits(collie_comm_t *comm, const char *text, const char *end) {
  collie_shm_seg_hdr_t *h = comm->shm ? comm->shm->mine : NULL;
  if (!h) return;
  const uint64_t seq = atomic_load_explicit(&h->waits_seq, memory_order_relaxed);
  atomic_store_explicit(&h->waits_seq, seq + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release); /* odd before the text changes */
  snprintf(h->waits_text, sizeof(h->waits_text), "%s", text);
  snprintf(h->waits_end, sizeof(h->waits_end), "%s", end);
  atomic_store_explicit(&h->waits_ns, collie_now_ns(), memory_order_relaxed);
  atomic_store_explicit(&h->waits_seq, seq + 2, memory_order_release);
}

bool collie_shm_peer_waits(const collie_comm_t *comm, int rank, int64_t since_ns, char *text, char *end) {
  const collie_shm_state_t *st = comm->shm;
  for (int li = 0; st && st->segs && li < comm->nlocal; li++) {
    const collie_shm_seg_hdr_t *h = st->segs[li];
    if (comm->local_ranks[li] != rank || li == comm->local_rank || !h) continue;
    const uint64_t seq = atomic_load_explicit(&h->waits_seq, memory_order_acquire);
    if (!seq || (seq & 1) || atomic_load_explicit(&h->waits_ns, memory_order_relaxed) < since_ns) return false;
    /* bounded: another process writes them */
    snprintf(text, COLLIE_WAITS_TEXT, "%.*s", (int)sizeof(h->waits_text) - 1, h->waits_text);
    snprintf(end, COLLIE_WAITS_TEXT, "%.*s", (int)sizeof(h->waits_end) - 1, h->waits_end);
    atomic_thread_fence(memory_order_acquire); /* the copies before the second read */
    return atomic_load_explicit(&h->waits_seq, memory_order_relaxed) == seq;
  }
  return false;
}

static bool reduces(int c) {
  return c == COLLIE_COLL_ALLREDUCE || c == COLLIE_COLL_REDUCE || c == COLLIE_COLL_REDUCE_SCATTER ||
         c == COLLIE_COLL_REDUCE_SCATTERV;
}

/* Publishes a large message from a buffer the receiver can reach as its location only
 * (one slot). Returns false when the message must be copied through the ring instead. */
static bool send_location(collie_comm_t *comm, shm_peer_t *sp, collie_xfer_t *x, slot_hdr_t *slot) {
  collie_shm_state_t *st = comm->shm;
  collie_shm_bufloc_t loc;
  if (x->nbytes < SINGLE_COPY_MIN) return false;
  if (!st->direct_ok || !collie_shm_locate(comm, x->sbuf, x->nbytes, &loc)) {
    /* An ordinary buffer: by CMA (shm_cma.c); not for reductions, whose pipelines stall
     * while each send waits for its read to end (2 ranks, 512 KiB allreduce 81 us against
     * 38 through the ring). */
    if (reduces(x->hdr.coll) || !st->cma_ok || !st->cma_msgs || x->nbytes < COLLIE_CMA_MIN) return false;
    collie_shm_cma_locate(x->sbuf, x->nbytes, &loc);
  }
  slot->hdr = x->hdr;
  slot->hdr.flags |= FLAG_SINGLE_COPY;
  memcpy(slot + 1, &loc, sizeof(loc));
  slot->len = sizeof(loc);
  x->hdr_done = 1;
  x->tp_init = 1; /* sent; complete once acknowledged */
  x->done = x->nbytes;
  sp->acks_wanted++;
  return true;
}

/* Fails the communicator: the pages of the ring that carries x to the peer could not be
 * had (errno e of the mapping, EFAULT where /dev/shm is full). Returns -1. */
static int ring_full(collie_comm_t *comm, const collie_peer_t *peer, const collie_xfer_t *x, int e) {
  const collie_shm_state_t *st = comm->shm;
  char pd[160], what[96], where[96] = "";
  if (x->hdr.seq) /* a collective's number; point to point has none */
    snprintf(what, sizeof(what), "%s #%llu", collie_coll_name((collie_coll_t)x->hdr.coll), (unsigned long long)x->hdr.seq);
  else
    snprintf(what, sizeof(what), "a %s", collie_coll_name((collie_coll_t)x->hdr.coll));
  struct statvfs v;
  if (statvfs("/dev/shm", &v) == 0)
    snprintf(where, sizeof(where), " (/dev/shm: %.1f MiB free of %.1f MiB)",
             mib((unsigned long long)v.f_bavail * v.f_frsize), mib((unsigned long long)v.f_blocks * v.f_frsize));
  collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false,
                   "rank %d could not get the shared memory to send %llu bytes of %s to %s: %s%s; each pair of "
                   "ranks of this host that exchanges messages takes up to %.1f MiB there as it does (a ring of "
                   "COLLIE_SHM_NSLOTS x COLLIE_SHM_SLOT_SIZE): %s",
                   comm->rank, (unsigned long long)x->nbytes, what,
                   collie_peer_desc(comm, peer->rank, pd, sizeof(pd)),
                   e == EFAULT ? "there is no space left on /dev/shm" : strerror(e), where,
                   mib(ring_bytes(st->nslots, st->slot_size)), shm_remedy);
  return -1;
}

/* Maps the first `bytes` of slot `i` of the ring to the peer (x: the message about to be
 * written there) or from it (x NULL) before this rank writes or reads them, where it has
 * not yet (lazy_rings, above), and the same bytes of the ring's other slots with it: a
 * pair that sends a message of some size sends more like it, and each slot's first use
 * would cost each of the next calls tens of microseconds (4 ranks, gather of 256 KiB, 20
 * calls after 5 warm-ups: 24 to 27 us a call with each slot taken alone, 8 prepared at
 * creation). The sender writes a word into each page (prewrite) of the slots it may fill
 * next, which hold nothing unread; the receiver maps every slot, leaving their bytes
 * alone. 0, or -1 after failing the communicator where the sender's pages could not be had
 * (/dev/shm is full). A receiver's mapping only saves faults (the sender's took the
 * pages), so it cannot fail. */
static int ring_take(collie_comm_t *comm, collie_peer_t *peer, shm_peer_t *sp, const collie_xfer_t *x, uint64_t i,
                     size_t bytes) {
  collie_shm_state_t *st = comm->shm;
  const uint64_t n = st->nslots;
  uint64_t *taken = sp->taken + (x ? 0 : n);
  if (!st->lazy_rings || bytes <= taken[i % n]) return 0;
  const uint64_t end = x ? sp->out_tail_seen + n : i + n; /* the sender: up to the last free slot it knows */
  for (uint64_t j = i; j < end; j++) {
    uint64_t *t = &taken[j % n];
    if (bytes <= *t) continue;
    char *from = (char *)slot_at(x ? sp->out_slots : sp->in_slots, j, n, st->slot_size) + *t;
    int e = x ? prewrite(from, bytes - *t) : populate(from, bytes - *t);
    if (e && x) return ring_full(comm, peer, x, e);
    *t = bytes;
  }
  return 0;
}

static int shm_send(collie_comm_t *comm, collie_peer_t *peer, shm_peer_t *sp) {
  collie_shm_state_t *st = comm->shm;
  int moved = 0;
  collie_xfer_t *x;
  while ((x = peer->sendq) && x->ready) {
    if (x->tp_init) { /* single copy: the receiver reads our buffer until it acknowledges */
      if (atomic_load_explicit(&sp->out_ctl->acks, memory_order_acquire) < sp->acks_wanted) return moved;
      collie_xfer_complete(comm, peer, x);
      moved = 1;
      continue;
    }
    do {
      if (sp->out_head - sp->out_tail_seen >= st->nslots) {
        sp->out_tail_seen = atomic_load_explicit(&sp->out_ctl->tail, memory_order_acquire);
        if (sp->out_head - sp->out_tail_seen >= st->nslots) return moved;
      }
      slot_hdr_t *slot = slot_at(sp->out_slots, sp->out_head, st->nslots, st->slot_size);
      const uint64_t left = x->nbytes - x->done;
      size_t carry = sizeof(*slot) + (size_t)(left < st->slot_size ? left : st->slot_size);
      if (!x->hdr_done && carry < sizeof(*slot) + sizeof(collie_shm_bufloc_t))
        carry = sizeof(*slot) + sizeof(collie_shm_bufloc_t); /* a location instead of the bytes */
      if (ring_take(comm, peer, sp, x, sp->out_head, carry) < 0) return -1;
      if (!x->hdr_done && send_location(comm, sp, x, slot)) {
        atomic_store_explicit(&sp->out_ctl->head, ++sp->out_head, memory_order_release);
        moved = 1;
        break;
      }
      if (!x->hdr_done) {
        slot->hdr = x->hdr;
        x->hdr_done = 1;
      }
      uint64_t n = x->nbytes - x->done;
      if (n > st->slot_size) n = st->slot_size;
      if (n && x->tee && x->teed == x->done) { /* reading the bytes once for both (untimed) */
        collie_copy_twice(slot + 1, x->tee + x->done, x->sbuf + x->done, n, collie_store_streams(&sp->slot_stores),
                          x->stream);
        x->teed += n;
      } else if (n) {
        collie_store_copy(&sp->slot_stores, slot + 1, x->sbuf + x->done, n);
      }
      slot->len = n;
      x->done += n;
      atomic_store_explicit(&sp->out_ctl->head, ++sp->out_head, memory_order_release);
      moved = 1;
    } while (x->done < x->nbytes);
    if (x->tp_init) continue; /* waits for its acknowledgement above */
    collie_xfer_complete(comm, peer, x);
  }
  return moved;
}

static int read_by_cma(collie_comm_t *comm, collie_peer_t *peer, shm_peer_t *sp, collie_xfer_t *x,
                       const collie_shm_bufloc_t *loc) {
  if (x->reduce && !sp->cma_bounce && !(sp->cma_bounce = malloc(COLLIE_CMA_BOUNCE))) {
    char pd[160];
    collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false,
                     "rank %d ran out of memory for the %d-byte buffer it reads the data of %s into to reduce it: "
                     COLLIE_MEMORY_ADVICE,
                     comm->rank, (int)COLLIE_CMA_BOUNCE, collie_peer_desc(comm, peer->rank, pd, sizeof(pd)));
    return -1;
  }
  return collie_shm_cma_read(comm, peer->rank, x, loc, sp->cma_bounce);
}

static int shm_recv(collie_comm_t *comm, collie_peer_t *peer, shm_peer_t *sp) {
  collie_shm_state_t *st = comm->shm;
  int moved = 0;
  collie_xfer_t *x;
  while ((x = peer->recvq) && x->ready) {
    if (sp->in_tail == sp->in_head_seen) {
      sp->in_head_seen = atomic_load_explicit(&sp->in_ctl->head, memory_order_acquire);
      if (sp->in_tail == sp->in_head_seen) return moved;
    }
    slot_hdr_t *slot = slot_at(sp->in_slots, sp->in_tail, st->nslots, st->slot_size);
    if (!x->hdr_done) {
      if (collie_xfer_check_header(comm, peer, x, &slot->hdr) < 0) return -1;
      x->hdr_done = 1;
      if (slot->hdr.flags & FLAG_SINGLE_COPY) {
        /* Straight from the sender's buffer (copied or reduced in place), then released. */
        collie_shm_bufloc_t loc;
        ring_take(comm, peer, sp, NULL, sp->in_tail, sizeof(*slot) + sizeof(loc));
        memcpy(&loc, slot + 1, sizeof(loc));
        if (loc.kind == COLLIE_BUFLOC_CMA && loc.len == x->nbytes) {
          if (read_by_cma(comm, peer, sp, x, &loc) < 0) return -1;
        } else {
          const char *src = loc.len == x->nbytes ? collie_shm_peer_buffer(comm, peer->rank, &loc) : NULL;
          if (!src) {
            if (!atomic_load(&comm->failed))
              collie_comm_fail(comm, COLLIE_ERR_INTERNAL, false,
                               "rank %d received a single-copy message of %llu bytes from rank %d that it cannot "
                               "read",
                               comm->rank, (unsigned long long)loc.len, peer->rank);
            return -1;
          }
          collie_xfer_deliver(x, 0, src, x->nbytes, false);
        }
        x->done = x->nbytes;
        atomic_store_explicit(&sp->in_ctl->tail, ++sp->in_tail, memory_order_release);
        atomic_fetch_add_explicit(&sp->in_ctl->acks, 1, memory_order_release);
        moved = 1;
        collie_xfer_complete(comm, peer, x);
        continue;
      }
    }
    uint64_t n = slot->len;
    if (n > st->slot_size || n > x->nbytes - x->done || (n < st->slot_size && x->done + n < x->nbytes)) {
      char pd[160];
      collie_comm_fail(comm, COLLIE_ERR_INTERNAL, false,
                       "rank %d found a corrupt shared-memory slot (%llu bytes) from %s; the segment was "
                       "overwritten by something other than collie",
                       comm->rank, (unsigned long long)n, collie_peer_desc(comm, peer->rank, pd, sizeof(pd)));
      return -1;
    }
    ring_take(comm, peer, sp, NULL, sp->in_tail, sizeof(*slot) + n);
    collie_xfer_deliver(x, x->done, slot + 1, n, true);
    x->done += n;
    atomic_store_explicit(&sp->in_ctl->tail, ++sp->in_tail, memory_order_release);
    moved = 1;
    if (x->done == x->nbytes) collie_xfer_complete(comm, peer, x);
  }
  return moved;
}

static int shm_progress(collie_comm_t *comm, collie_peer_t *peer) {
  shm_peer_t *sp = peer->tp_state;
  int s = shm_send(comm, peer, sp);
  if (s < 0) return -1;
  int r = shm_recv(comm, peer, sp);
  if (r < 0) return -1;
  if (s || r) notify(sp->peer_hdr);
  return s || r;
}

static void shm_close(collie_comm_t *comm, collie_peer_t *peer) {
  (void)comm;
  shm_peer_t *sp = peer->tp_state;
  if (sp) {
    free(sp->cma_bounce);
    free(sp->taken);
  }
  free(peer->tp_state);
  peer->tp_state = NULL;
}

const collie_transport_t collie_transport_shm = {"shm", shm_progress, shm_close};

uint32_t collie_shm_sleep_prepare(collie_comm_t *comm) {
  collie_shm_seg_hdr_t *h = comm->shm->mine;
  uint32_t v = atomic_load(&h->doorbell);
  atomic_fetch_add(&h->sleeping, 1); /* a count: a waiter and the progress thread may both sleep */
  return v;
}

void collie_shm_sleep(collie_comm_t *comm, uint32_t seen, int timeout_ms) {
  collie_futex_wait(&comm->shm->mine->doorbell, seen, timeout_ms);
}

void collie_shm_sleep_done(collie_comm_t *comm) { atomic_fetch_sub(&comm->shm->mine->sleeping, 1); }

void collie_shm_yield(collie_comm_t *comm) {
  _Atomic uint32_t *away = &comm->shm->mine->away;
  atomic_store_explicit(away, 1, memory_order_relaxed);
  sched_yield();
  atomic_store_explicit(away, 0, memory_order_relaxed);
}

void collie_shm_wake_self(collie_comm_t *comm) {
  if (!comm->shm || !comm->shm->mine) return;
  atomic_fetch_add(&comm->shm->mine->doorbell, 1);
  collie_futex_wake(&comm->shm->mine->doorbell);
}
