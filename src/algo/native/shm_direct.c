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

bool collie_direct_wanted(const collie_comm_t *comm, const collie_op_t *op) {
  if (!comm->shm->direct_ok) return false; /* COLLIE_SHM_DIRECT=0, or the probe failed */
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

bool collie_direct_publish(collie_comm_t *comm, collie_op_t *op, uint64_t g) {
  collie_shm_bufloc_t *loc = shm_area_of(comm, comm->rank)->loc[g & 1];
  bool reachable = true;
  for (int w = SEND; w <= RECV; w++) {
    size_t len = needed(comm, op, comm->rank, w);
    collie_shm_locate(comm, op->bufs[w == SEND ? COLLIE_BUF_SEND : COLLIE_BUF_RECV], len, &loc[w]);
    if (len && loc[w].kind == COLLIE_BUFLOC_NONE) reachable = false;
  }
  return reachable;
}

bool collie_direct_agreed(collie_comm_t *comm, const collie_op_t *op, uint64_t g) {
  for (int r = 0; r < comm->nranks; r++)
    for (int w = SEND; w <= RECV; w++) {
      const collie_shm_bufloc_t *loc = &shm_area_of(comm, r)->loc[g & 1][w];
      if (needed(comm, op, r, w) && loc->kind == COLLIE_BUFLOC_NONE) return false;
      if (loc->kind == COLLIE_BUFLOC_ADDR && !comm->shm->one_process) return false;
    }
  return true;
}

/* Rank r's buffer w, as this rank may use it (its own: the op's pointer). */
static char *buffer(collie_comm_t *comm, collie_op_t *op, int r, int w, uint64_t g) {
  if (r == comm->rank) return op->bufs[w == SEND ? COLLIE_BUF_SEND : COLLIE_BUF_RECV];
  return collie_shm_peer_buffer(comm, r, &shm_area_of(comm, r)->loc[g & 1][w]);
}

int collie_direct_run(collie_comm_t *comm, collie_op_t *op, uint64_t g) {
  const int me = comm->rank, n = comm->nranks, root = op->root;
  const size_t e = op->nat_esz, c = op->nat_count, v = c * e;
  char *send[n], *recv[n]; /* n is the rank count of one host: small */
  for (int r = 0; r < n; r++) {
    send[r] = needed(comm, op, r, SEND) || r == me ? buffer(comm, op, r, SEND, g) : NULL;
    recv[r] = needed(comm, op, r, RECV) || r == me ? buffer(comm, op, r, RECV, g) : NULL;
    if ((needed(comm, op, r, SEND) && !send[r]) || (needed(comm, op, r, RECV) && !recv[r])) return -1;
  }
  switch (op->coll) {
    case COLLIE_COLL_ALLGATHER:
      for (int r = 0; r < n; r++) shm_put(op, recv[me] + (size_t)r * v, send[r], v, false);
      break;
    case COLLIE_COLL_ALLTOALL:
      for (int r = 0; r < n; r++) shm_put(op, recv[me] + (size_t)r * v, send[r] + (size_t)me * v, v, false);
      break;
    case COLLIE_COLL_BROADCAST: shm_put(op, recv[me], send[root], v, false); break;
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
