/* The single-copy path of the shared-memory collectives: when every buffer a collective
 * needs from the other ranks is reachable (collie_mem_alloc memory, or any memory when the
 * ranks are threads of one process), each rank reads the others' send buffers and, for
 * allreduce and reduce, writes the others' receive buffers, directly. Nothing is staged:
 * a byte is copied (or reduced) once instead of into the staging area and out again.
 *
 * The first round's counters carry the agreement (shm_native.c): every rank publishes
 * where its buffers are with its fingerprint, and once all are `ready` each rank decides
 * alike. After its part a rank publishes every counter at the operation's last round and
 * waits until all others have too: until then they may still use its buffers. */
#include <string.h>

#include "algo/native/shm_native.h"
#include "algo/native/shm_rounds.h"

/* Below this the staged path's single synchronisation costs less than the agreement. */
#define DIRECT_MIN_BYTES 65536
/* Reductions go through the vectors in pieces of this many bytes, so that the partial
 * result stays in cache while every rank's operand is added to it. */
#define DIRECT_PIECE_BYTES 65536

enum { SEND, RECV };

/* Bytes of rank r's send and receive buffers that op touches, 0 when the others do not
 * need that buffer. */
static size_t needed(const collie_comm_t *comm, const collie_op_t *op, int r, int which) {
  const size_t v = op->nat_count * op->nat_esz, all = v * (size_t)comm->nranks;
  switch (op->coll) {
    case COLLIE_COLL_ALLREDUCE: return v;
    case COLLIE_COLL_REDUCE: return which == SEND || r == op->root ? v : 0;
    case COLLIE_COLL_BROADCAST: return which == SEND && r == op->root ? v : 0;
    case COLLIE_COLL_ALLGATHER: return which == SEND ? v : 0;
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL: return which == SEND ? all : 0;
    default: return 0;
  }
}

/* Collectives whose single-copy path only reads the others' buffers: those may be ordinary
 * memory read with process_vm_readv (CMA). The others write peers' receive buffers. */
static bool reads_only(collie_coll_t c) {
  return c == COLLIE_COLL_ALLGATHER || c == COLLIE_COLL_ALLTOALL || c == COLLIE_COLL_BROADCAST;
}

/* Whether op may reach ordinary buffers by CMA: all-to-all (where messages do: cma_msgs),
 * broadcast between two ranks, and with COLLIE_SHM_CMA=2 also all-gather and any broadcast.
 * Those measured level or worse by CMA on 4 ranks of 2 cores (Intel VM, median of 3: broadcast 256 KiB 3.6
 * against 5.4 GB/s busbw, 64 MiB 2.25 against 2.63, three readers pinning the root's pages
 * at once; all-gather within 10% either way), so by default they stage. Between two
 * ranks the broadcast's root writes part of the receiver's buffer while the receiver
 * reads the rest (bcast_root_share), which staging cannot match. The same answer on
 * every rank. */
static bool cma_serves(const collie_comm_t *comm, collie_coll_t coll) {
  const collie_shm_state_t *st = comm->shm;
  if (!st || !st->cma_ok) return false;
  return (coll == COLLIE_COLL_ALLTOALL && st->cma_msgs) || (st->cma_mode == 2 && reads_only(coll)) ||
         (coll == COLLIE_COLL_BROADCAST && comm->nranks == 2);
}

/* From which size the collectives above read ordinary buffers by CMA: COLLIE_CMA_MIN, as
 * messages do (transport/shm.c), except where the ring measured faster at creation
 * (transport/shm_cma_choice.c). Then only the 2-rank broadcast uses it, from
 * COLLIE_SHM_BCAST_CMA_FAR: in cache the ring's two user-space copies on two CPUs beat the
 * kernel's one, but beyond the caches its split single copy moves half the memory traffic
 * (AMD VM, in place, median of 3, busbw GB/s, ring against split CMA: 4 MiB 55.9 against
 * 26.4, 16 MiB 13.1 against 13.6, 64 MiB 10.2 against 13.2). 0: never. The same answer on
 * every rank. */
static size_t cma_min_bytes(const collie_comm_t *comm, collie_coll_t coll) {
  if (!cma_serves(comm, coll)) return 0;
  if (comm->shm->cma_msgs) return COLLIE_CMA_MIN;
  return coll == COLLIE_COLL_BROADCAST ? COLLIE_SHM_BCAST_CMA_FAR : 0;
}

size_t collie_native_bcast_split_min(const collie_comm_t *comm) {
  const size_t m = cma_min_bytes(comm, COLLIE_COLL_BROADCAST);
  return m && m < COLLIE_SHM_BCAST_SPLIT_BYTES ? COLLIE_SHM_BCAST_SPLIT_BYTES : m;
}

/* Whether this rank reads ordinary buffers by CMA in op. The same answer on every rank. */
static bool by_cma(const collie_comm_t *comm, const collie_op_t *op) {
  const size_t m = cma_min_bytes(comm, op->coll);
  return m && op->nat_count * op->nat_esz >= m;
}

bool collie_direct_wanted(const collie_comm_t *comm, const collie_op_t *op) {
  /* COLLIE_SHM_DIRECT=0 or the probe failed, and CMA does not serve this collective */
  if (!comm->shm->direct_ok && !cma_serves(comm, op->coll)) return false;
  switch (op->coll) {
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE:
    case COLLIE_COLL_BROADCAST:
    case COLLIE_COLL_ALLGATHER:
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL: return op->nat_count * op->nat_esz >= DIRECT_MIN_BYTES;
    default: return false;
  }
}

/* Bytes of this rank's buffer w that it offers beyond what op needs: a large broadcast's
 * receiver offers its receive buffer to the root (bcast_root_share). A receiver that
 * cannot offer it simply reads everything. */
static size_t offered(const collie_comm_t *comm, const collie_op_t *op, int w) {
  const size_t v = op->nat_count * op->nat_esz;
  return op->coll == COLLIE_COLL_BROADCAST && w == RECV && comm->rank != op->root &&
                 v >= COLLIE_SHM_BCAST_SPLIT_BYTES
             ? v
             : 0;
}

bool collie_direct_publish(collie_comm_t *comm, collie_op_t *op, uint64_t g) {
  collie_shm_bufloc_t *loc = shm_locs(comm, comm->rank, g);
  bool reachable = true;
  for (int w = SEND; w <= RECV; w++) {
    const size_t len = needed(comm, op, comm->rank, w), pub = len ? len : offered(comm, op, w);
    void *p = op->bufs[w == SEND ? COLLIE_BUF_SEND : COLLIE_BUF_RECV];
    /* An in-place all-to-all receives into the blocks the others would read: it offers
     * nothing, so that every rank stages (in place, piece by piece: shm_native.c). */
    if (op->coll == COLLIE_COLL_ALLTOALL && op->nat_in_place) p = NULL;
    /* by_cma holds only for collectives whose needed buffers are send buffers */
    if (!collie_shm_locate(comm, p, pub, &loc[w]) && p && pub && by_cma(comm, op))
      collie_shm_cma_locate(p, pub, &loc[w]);
    if (len && loc[w].kind == COLLIE_BUFLOC_NONE) reachable = false;
  }
  return reachable;
}

bool collie_direct_agreed(collie_comm_t *comm, const collie_op_t *op, uint64_t g) {
  for (int r = 0; r < comm->nranks; r++)
    for (int w = SEND; w <= RECV; w++) {
      const collie_shm_bufloc_t *loc = &shm_locs(comm, r, g)[w];
      if (needed(comm, op, r, w) && loc->kind == COLLIE_BUFLOC_NONE) return false;
      if (loc->kind == COLLIE_BUFLOC_ADDR && !comm->shm->one_process) return false;
      /* by CMA: the others' send buffers are read, and only a broadcast's root writes */
      if (loc->kind == COLLIE_BUFLOC_CMA && (!reads_only(op->coll) || (w == RECV && op->coll != COLLIE_COLL_BROADCAST)))
        return false;
    }
  return true;
}

/* Rank r's buffer w, as this rank may use it (its own: the op's pointer). A buffer read
 * by CMA has no local address: its location (cma[r]) is read instead. */
static char *buffer(collie_comm_t *comm, collie_op_t *op, int r, int w, uint64_t g,
                    const collie_shm_bufloc_t **cma) {
  if (r == comm->rank) return op->bufs[w == SEND ? COLLIE_BUF_SEND : COLLIE_BUF_RECV];
  const collie_shm_bufloc_t *loc = &shm_locs(comm, r, g)[w];
  if (loc->kind == COLLIE_BUFLOC_CMA) {
    *cma = loc;
    return NULL;
  }
  return collie_shm_peer_buffer(comm, r, loc);
}

/* n bytes at offset off of rank r's send buffer into dst: a copy, or a CMA read. */
static int get(collie_comm_t *comm, collie_op_t *op, char *dst, char *const *send,
               const collie_shm_bufloc_t *const *cma, int r, size_t off, size_t n) {
  if (cma[r]) return collie_shm_cma_copy(comm, r, dst, cma[r], off, n);
  shm_put(op, dst, send[r] + off, n, false);
  return 0;
}

/* The bytes at the start of receiver r's buffer that the root writes in a broadcast, while
 * r reads the rest from the root's: 1/n of it, so that the root's CPU copies as much as
 * each receiver's. Two ranks, 1 to 64 MiB: a broadcast then takes about 60% of the time
 * of the receiver's single read (AMD VM, process_vm_writev beside process_vm_readv:
 * 1 MiB 32-38 us against 61-76 us, 64 MiB 4.8-5.7 ms against 9.3-10.4 ms). Below 512 KiB
 * the extra step does not pay (256 KiB: 26 us either way). 0 where r offered no buffer
 * (collie_direct_publish). Root and receiver read the same published location, so they
 * agree. */
static size_t bcast_root_share(collie_comm_t *comm, const collie_op_t *op, uint64_t g, int r) {
  const size_t v = op->nat_count * op->nat_esz;
  if (r == op->root || v < COLLIE_SHM_BCAST_SPLIT_BYTES) return 0;
  const collie_shm_bufloc_t *loc = &shm_locs(comm, r, g)[RECV];
  if (loc->kind == COLLIE_BUFLOC_NONE || loc->len < v) return 0;
  return v / (size_t)comm->nranks & ~(size_t)63;
}

/* The root's part of a broadcast: the first bcast_root_share bytes of src into receiver r's
 * buffer. */
static int bcast_put(collie_comm_t *comm, collie_op_t *op, uint64_t g, int r, const char *src) {
  const size_t len = bcast_root_share(comm, op, g, r);
  if (!len) return 0;
  const collie_shm_bufloc_t *loc = &shm_locs(comm, r, g)[RECV];
  if (loc->kind == COLLIE_BUFLOC_CMA) return collie_shm_cma_put(comm, r, loc, 0, src, len);
  char *dst = collie_shm_peer_buffer(comm, r, loc);
  if (!dst) return -1;
  shm_put(op, dst, src, len, false);
  return 0;
}

int collie_direct_run(collie_comm_t *comm, collie_op_t *op, uint64_t g) {
  const int me = comm->rank, n = comm->nranks, root = op->root;
  const size_t e = op->nat_esz, c = op->nat_count, v = c * e;
  char *send[n], *recv[n]; /* n is the rank count of one host: small */
  const collie_shm_bufloc_t *cma[n];
  for (int r = 0; r < n; r++) {
    cma[r] = NULL;
    send[r] = needed(comm, op, r, SEND) || r == me ? buffer(comm, op, r, SEND, g, &cma[r]) : NULL;
    recv[r] = needed(comm, op, r, RECV) || r == me ? buffer(comm, op, r, RECV, g, &cma[r]) : NULL;
    if ((needed(comm, op, r, SEND) && !send[r] && !cma[r]) || (needed(comm, op, r, RECV) && !recv[r])) return -1;
  }
  switch (op->coll) {
    case COLLIE_COLL_ALLGATHER:
      /* Starting at this rank: the ranks read different peers at once. */
      for (int i = 0; i < n; i++) {
        const int r = (me + i) % n;
        if (get(comm, op, recv[me] + (size_t)r * v, send, cma, r, 0, v) < 0) return -1;
      }
      break;
    case COLLIE_COLL_ALLTOALL:
      for (int i = 0; i < n; i++) {
        const int r = (me + i) % n;
        if (get(comm, op, recv[me] + (size_t)r * v, send, cma, r, (size_t)me * v, v) < 0) return -1;
      }
      break;
    case COLLIE_COLL_BROADCAST:
      if (me == root) {
        const char *src = op->bufs[COLLIE_BUF_SEND];
        for (int i = 1; i < n; i++)
          if (bcast_put(comm, op, g, (me + i) % n, src) < 0) return -1;
        shm_put(op, op->bufs[COLLIE_BUF_RECV], src, v, false); /* out of place: the root's own copy */
      } else {
        const size_t lo = bcast_root_share(comm, op, g, me);
        if (get(comm, op, recv[me] + lo, send, cma, root, lo, v - lo) < 0) return -1;
      }
      break;
    case COLLIE_COLL_REDUCE_SCATTER: {
      const size_t piece = DIRECT_PIECE_BYTES / e;
      for (size_t lo = 0; lo < c; lo += piece) {
        size_t len = c - lo < piece ? c - lo : piece, off = ((size_t)me * c + lo) * e;
        shm_fold(comm, op, recv[me] + lo * e, (const char *const *)send, me, off, len);
      }
      break;
    }
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE: {
      /* This rank's slice, reduced into its own receive buffer (reduce: the root's), then
       * written into everyone else's (allreduce). Only this rank touches the slice, in
       * every rank's buffers; the buffer written is also an operand when in place, so its
       * owner's operand is read first. */
      size_t s0, sn;
      shm_slice(c, n, me, &s0, &sn);
      const size_t piece = DIRECT_PIECE_BYTES / e;
      const int owner = op->coll == COLLIE_COLL_REDUCE ? root : me;
      char *dst = recv[owner];
      for (size_t lo = s0; lo < s0 + sn; lo += piece) {
        size_t len = s0 + sn - lo < piece ? s0 + sn - lo : piece;
        shm_fold(comm, op, dst + lo * e, (const char *const *)send, owner, lo * e, len);
        if (op->coll == COLLIE_COLL_ALLREDUCE)
          for (int r = 0; r < n; r++)
            if (r != me) shm_put(op, recv[r] + lo * e, dst + lo * e, len * e, false);
      }
      break;
    }
    default: break;
  }
  return 0;
}
