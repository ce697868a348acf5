/* The fast lane of the blocking small all-reduce, reduce, all-gather, reduce-scatter,
 * all-to-all and broadcast, and the barrier, on one host.
 *
 * A blocking all-reduce of a few bytes on a communicator whose ranks share this host is
 * one cache line each way, yet the generic path (argument checks, cost-model memo,
 * operation and request, post, progress passes, retirement) took about 1100 CPU cycles
 * from seeing the peers' data to publishing the next call's, four fifths of each call
 * (2 ranks on 2 cores, 8 B, cycles between those two points counted with rdtsc). When it
 * repeats the last shared-memory call (the memo says that call was an inline all-reduce of
 * one round), with nothing else pending, the fast lane stages the round
 * itself, polls the peers' lines for a while, and returns: no operation, no request, one
 * lock. A barrier is the same round without data; an all-gather, reduce-scatter or
 * all-to-all the same round with other copies (2 cores, 4 B a rank, float32, us a call,
 * out of place, the commit before against the lane: 2 ranks all-gather 0.56 against 0.26, all-to-all 0.33
 * against 0.24, reduce-scatter 0.35 against 0.25, Open MPI's all-gather and all-to-all
 * 0.27 to 0.39 in the runs beside them; 4 ranks 1.95 / 2.63 / 2.22 against 1.51 / 1.47 /
 * 1.53; 8 ranks, three alternating runs, 5.9 to 7.7 against 4.4 to 4.9). A broadcast's
 * round too, where its root waits for nobody (it stages, claims the operation as its root
 * and returns, up to the inline slots ahead of its readers) and the others wait for the
 * root alone (8 B, three alternating runs, before against the lane: 2 ranks 0.21 to 0.29
 * against 0.11 to 0.15, Open MPI 0.10 to 0.14; 4 ranks 0.44 to 0.48 against 0.18 to 0.30;
 * 8 ranks 0.92 to 1.08 against 0.35 to 0.91). A reduce's round too: its root waits for
 * everyone and folds as an all-reduce does, its other ranks stage and return, leaving the
 * comparison of their call with the root's for later (verify_deferred: at the start of
 * the next call here, or in any progress pass) as the generic path does (8 B, three
 * alternating runs of -n 20000, us, before against the lane: 2 ranks 0.57 to 0.59
 * against 0.32 to 0.36, 4 ranks 0.88 to 1.02 against 0.45 to 0.51, 8 ranks 2.11 against
 * 1.07 to 1.17; Open MPI 0.26 to 0.37, 0.50 to 2.8). Rounds of more than one line
 * spread and gather their bytes as fill and drain do (2 ranks, 64 to 256 B, us, 406fe51
 * against the lane: all-reduce 0.58 to 0.74 against 0.36 to 0.45, broadcast 0.45 to 0.53
 * against 0.19 to 0.25, all-gather 0.50 to 0.61 against 0.26 to 0.39; Open MPI 0.52 to
 * 0.67, 0.20 to 0.29, 0.39 to 0.48). Wide rounds too, of 9 to 65 lines (a broadcast's up
 * to 4 KiB; an all-reduce's, all-gather's, all-to-all's or reduce-scatter's up to 2 KiB a
 * rank:
 * shm_native.c, inline_lines_max, has the figures; 2 ranks, 2 KiB broadcast 0.84 to 0.94
 * us staged, 0.32 to 0.43 in the lane).
 *
 * Whatever the lane cannot finish within a short wait becomes the operation the generic
 * path would have posted, in the state it would have reached (collie_op_adopt), and the
 * generic wait takes over with its timeouts and stall reports: a late or sleeping peer, a
 * call that differs on another rank (explained as always), a failure or an abort
 * meanwhile. The lane holds comm->lock throughout, as a progress pass does, so an abort
 * from another thread waits for it or defers, and a collective another thread calls
 * meanwhile waits for it rather than overlapping it. */
#include "coll/fast_lane.h"

#include <stdint.h>
#include <string.h>

#include "algo/native/shm_native.h"
#include "coll/coll.h"
#include "core/comm.h"
#include "sched/executor.h"
#include "transport/shm.h"

/* How long the lane waits before the generic wait takes over. With a CPU per rank, polls:
 * a peer inside the same call answers within a few hundred nanoseconds, and a pause is
 * some 40 cycles, so this is a few microseconds, far below COLLIE_SPIN. With more ranks
 * than CPUs (or COLLIE_SPIN=0), yields, as the generic wait does there (core/wait.c,
 * yield_once): a few polls while the late peer runs on another CPU, else give this CPU
 * to it at once. */
enum { FAST_LANE_POLLS = 256, FAST_LANE_YIELDS = 32, FAST_LANE_POLLS_PER_YIELD = 16 };

/* Waits, within those bounds, for every other rank to stage round g: collie_native_fast_arrived's answer. */
static int wait_arrival(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t g, uint64_t seq) {
  int late = -1;
  int arrived = collie_native_fast_arrived(comm, c, g, seq, &late);
  if (arrived) return arrived;
  collie_shm_notify_others(comm); /* a peer asleep on its doorbell waits for this round */
  if (!comm->oversubscribed && comm->spin > 0) {
    for (int i = 0; i < FAST_LANE_POLLS && !arrived; i++) {
      collie_cpu_relax();
      arrived = collie_native_fast_arrived(comm, c, g, seq, &late);
    }
    return arrived;
  }
  int polls = FAST_LANE_POLLS_PER_YIELD;
  for (int yields = 0; yields < FAST_LANE_YIELDS && !arrived;) {
    if (polls > 0 && collie_shm_peer_on_cpu(comm, late)) {
      polls--;
      collie_cpu_relax();
    } else {
      polls = FAST_LANE_POLLS_PER_YIELD;
      yields++;
      collie_shm_yield(comm);
    }
    arrived = collie_native_fast_arrived(comm, c, g, seq, &late);
  }
  return arrived;
}

bool collie_fast_lane_serves(const collie_op_t *op) {
  switch (op->coll) {
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE:
      if (!op->nat_small) return false;
      break;
    case COLLIE_COLL_ALLGATHER:
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL:
    case COLLIE_COLL_BROADCAST:
    case COLLIE_COLL_BARRIER: break;
    default: return false; /* the v-variants, scatter, gather */
  }
  return op->nat_inline && op->nat_nrounds == 1 && !op->nat_may_direct;
}

/* Whether c is in place, as collie_iallreduce and the others (api.c) say. */
static bool in_place(const collie_comm_t *comm, const collie_fast_call_t *c) {
  const size_t own = (size_t)comm->rank * c->count * collie_datatype_size(c->dt);
  switch (c->coll) {
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_ALLTOALL: return c->sendbuf == c->recvbuf;
    case COLLIE_COLL_ALLGATHER: return (const char *)c->sendbuf == (const char *)c->recvbuf + own;
    case COLLIE_COLL_REDUCE_SCATTER: return (const char *)c->recvbuf == (const char *)c->sendbuf + own;
    case COLLIE_COLL_BROADCAST:
    case COLLIE_COLL_REDUCE: return comm->rank == c->root && c->sendbuf == c->recvbuf;
    default: return false;
  }
}

/* The call as the generic path would have posted it, in the state the lane left it, and
 * the generic wait (under comm->lock, which it gives back). */
static collie_result_t adopt_and_wait(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t seq, uint64_t g) {
  collie_frame_t frame;
  collie_coll_args_t a = {.coll = c->coll,
                          .root = c->root,
                          .count = c->count,
                          .in_place = in_place(comm, c),
                          .nranks = comm->nranks,
                          .rank = comm->rank,
                          .elem_size = collie_datatype_size(c->dt),
                          .group_of = comm->group_of,
                          .ngroups = comm->ngroups};
  /* in a frame, without scratch: cannot fail */
  collie_op_t *op = collie_op_create(comm, collie_coll_no_steps(), false, c->sendbuf, c->recvbuf, c->coll, c->count,
                                     c->dt, c->redop, c->root, &frame);
  op->stream = collie_coll_streams(comm, c->bytes);
  op->stream_timed = collie_coll_streams(comm, 2 * c->bytes);
  collie_native_prepare(op, &a);
  collie_request_t *req;
  collie_op_adopt(comm, op, &req, seq, g);
  collie_coll_hold(comm, req); /* another thread's collective now fails, as on the generic path */
  collie_unlock(&comm->lock);
  return collie_wait(req);
}

/* Whether comm's last shared-memory call (the memo, coll/coll.c, under comm->lock) was c's
 * collective and size, and may take the lane. */
static bool memo_says(const collie_comm_t *comm, const collie_fast_call_t *c) {
  return comm->native_memo.fast && comm->native_memo.coll == (int)c->coll && comm->native_memo.bytes == c->bytes &&
         comm->native_memo.elem_size == collie_datatype_size(c->dt);
}

/* The lane, for a call whose arguments hold on a live communicator (the callers check
 * them): true with its result in *res, false having changed nothing. */
static bool lane(collie_comm_t *comm, const collie_fast_call_t *c, collie_result_t *res) {
  if (collie_in_group() || atomic_load_explicit(&comm->has_progress_thread, memory_order_relaxed) ||
      atomic_load(&comm->destroyed))
    return false;
  collie_lock(&comm->lock);
  uint64_t seq, g;
  /* settle: a reduce's comparisons deferred by this rank, where their roots have come */
  if (!memo_says(comm, c) || comm->ops || atomic_load_explicit(&comm->failed, memory_order_acquire) ||
      atomic_load_explicit(&comm->coll_thread, memory_order_relaxed) || collie_native_settle(comm) < 0 ||
      collie_native_fast_publish(comm, c, &seq, &g) < 0) {
    collie_unlock(&comm->lock);
    return false;
  }
  collie_comm_check_left(comm); /* a peer that destroyed its communicator before this call */
  const int arrived = atomic_load_explicit(&comm->failed, memory_order_acquire) ? 0 : wait_arrival(comm, c, g, seq);
  if (arrived > 0 && !atomic_load_explicit(&comm->failed, memory_order_acquire) &&
      collie_native_fast_finish(comm, c, g) == 0) {
    collie_unlock(&comm->lock);
    collie_comm_end_abort(comm); /* an abort from a signal handler deferred meanwhile */
    *res = COLLIE_SUCCESS;
    return true;
  }
  *res = adopt_and_wait(comm, c, seq, g);
  return true;
}

/* Whether comm is a communicator collie returned and has not freed. Anything unusual, bad
 * arguments included, takes the generic path, which explains it. */
static bool live(const collie_comm_t *comm) {
  uint32_t magic;
  if (!comm) return false;
  memcpy(&magic, comm, sizeof(magic));
  return magic == COLLIE_COMM_LIVE;
}

/* Whether buffers of sbytes and rbytes either do not overlap or are the in-place form
 * (api.c accepts nothing else): anything else takes the generic path, which explains it. */
static bool apart_or(const void *sendbuf, size_t sbytes, const void *recvbuf, size_t rbytes, bool in_place) {
  const uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;
  return in_place || s >= r + rbytes || r >= s + sbytes;
}

/* The arguments every lane call needs; the lane's rounds hold at most
 * COLLIE_SHM_INLINE_BYTES, hence elements, so no product below overflows. */
static bool plain(const void *sendbuf, const void *recvbuf, size_t count, collie_datatype_t dt, collie_comm_t *comm) {
  return live(comm) && count && count <= COLLIE_SHM_INLINE_BYTES && sendbuf && recvbuf &&
         (unsigned)dt < COLLIE_NUM_DATATYPES;
}

bool collie_fast_allreduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                           collie_redop_t redop, collie_comm_t *comm, collie_result_t *res) {
  if (!plain(sendbuf, recvbuf, count, dt, comm) || (unsigned)redop >= COLLIE_NUM_OPS || redop == COLLIE_AVG)
    return false;
  const size_t bytes = count * collie_datatype_size(dt);
  if (!apart_or(sendbuf, bytes, recvbuf, bytes, sendbuf == recvbuf)) return false;
  const collie_fast_call_t c = {COLLIE_COLL_ALLREDUCE, sendbuf, recvbuf, count, bytes, dt, redop, -1};
  return lane(comm, &c, res);
}

/* A reduce's other ranks ignore recvbuf (it may be NULL there). */
bool collie_fast_reduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt, collie_redop_t redop,
                        int root, collie_comm_t *comm, collie_result_t *res) {
  if (!live(comm) || root < 0 || root >= comm->nranks || (unsigned)redop >= COLLIE_NUM_OPS || redop == COLLIE_AVG)
    return false;
  const bool at_root = comm->rank == root;
  if (!plain(sendbuf, at_root ? recvbuf : sendbuf, count, dt, comm)) return false;
  const size_t bytes = count * collie_datatype_size(dt);
  if (at_root && !apart_or(sendbuf, bytes, recvbuf, bytes, sendbuf == recvbuf)) return false;
  const collie_fast_call_t c = {COLLIE_COLL_REDUCE, sendbuf, at_root ? recvbuf : NULL, count, bytes, dt, redop,
                                root}; /* collie_ireduce's */
  return lane(comm, &c, res);
}

/* All-gather, reduce-scatter and all-to-all: a block of count elements per rank. */
static bool fast_blocks(collie_coll_t coll, const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                        collie_redop_t redop, collie_comm_t *comm, collie_result_t *res) {
  if (!plain(sendbuf, recvbuf, count, dt, comm)) return false;
  const size_t block = count * collie_datatype_size(dt), all = block * (size_t)comm->nranks;
  /* bytes: what the cost model weighs and the memo holds, the whole exchange (api.c) */
  const collie_fast_call_t c = {coll, sendbuf, recvbuf, count, all, dt, redop, -1};
  const size_t sbytes = coll == COLLIE_COLL_ALLGATHER ? block : all;
  const size_t rbytes = coll == COLLIE_COLL_REDUCE_SCATTER ? block : all;
  if (!apart_or(sendbuf, sbytes, recvbuf, rbytes, in_place(comm, &c))) return false;
  return lane(comm, &c, res);
}

bool collie_fast_allgather(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                           collie_comm_t *comm, collie_result_t *res) {
  return fast_blocks(COLLIE_COLL_ALLGATHER, sendbuf, recvbuf, count, dt, COLLIE_SUM, comm, res);
}

bool collie_fast_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                                collie_redop_t redop, collie_comm_t *comm, collie_result_t *res) {
  if ((unsigned)redop >= COLLIE_NUM_OPS || redop == COLLIE_AVG) return false;
  return fast_blocks(COLLIE_COLL_REDUCE_SCATTER, sendbuf, recvbuf, count, dt, redop, comm, res);
}

bool collie_fast_alltoall(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                          collie_comm_t *comm, collie_result_t *res) {
  return fast_blocks(COLLIE_COLL_ALLTOALL, sendbuf, recvbuf, count, dt, COLLIE_SUM, comm, res);
}

/* A broadcast's other ranks ignore sendbuf (it may be NULL there). */
bool collie_fast_broadcast(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt, int root,
                           collie_comm_t *comm, collie_result_t *res) {
  if (!live(comm) || root < 0 || root >= comm->nranks) return false;
  const bool at_root = comm->rank == root;
  if (!plain(at_root ? sendbuf : recvbuf, recvbuf, count, dt, comm)) return false;
  const size_t bytes = count * collie_datatype_size(dt);
  if (at_root && !apart_or(sendbuf, bytes, recvbuf, bytes, sendbuf == recvbuf)) return false;
  const collie_fast_call_t c = {COLLIE_COLL_BROADCAST, at_root ? sendbuf : NULL, recvbuf, count, bytes, dt,
                                COLLIE_SUM, root}; /* collie_ibroadcast's */
  return lane(comm, &c, res);
}

bool collie_fast_barrier(collie_comm_t *comm, collie_result_t *res) {
  if (!live(comm)) return false;
  /* collie_ibarrier's call */
  const collie_fast_call_t c = {COLLIE_COLL_BARRIER, NULL, NULL, 0, 0, COLLIE_UINT8, COLLIE_SUM, -1};
  return lane(comm, &c, res);
}
