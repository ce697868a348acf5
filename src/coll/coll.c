/* From a collective call to a posted operation: choose an algorithm, build the schedule,
 * bind the buffers, post. Argument checks live with each collective (coll/api.c). */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

#include "algo/native/shm_native.h"
#include "coll/fast_lane.h"
#include "coll/sched_cache.h"
#include "core/error.h"
#include "core/progress_others.h"
#include "core/log.h"
#include "tune/tune.h"

/* Bytes of this rank's receive buffer that the collective writes. */
static uint64_t recv_bytes(const collie_coll_args_t *a) {
  uint64_t elems = a->count;
  switch (a->coll) {
    case COLLIE_COLL_ALLGATHER:
    case COLLIE_COLL_ALLTOALL:
    case COLLIE_COLL_GATHER: elems = (uint64_t)a->count * (uint64_t)a->nranks; break;
    case COLLIE_COLL_ALLGATHERV:
    case COLLIE_COLL_ALLTOALLV: {
      const size_t *c = a->coll == COLLIE_COLL_ALLTOALLV ? a->counts2 : a->counts;
      elems = 0;
      for (int r = 0; c && r < a->nranks; r++) elems += c[r];
      break;
    }
    case COLLIE_COLL_REDUCE_SCATTERV: elems = a->counts ? a->counts[a->rank] : 0; break;
    default: break;
  }
  return elems * a->elem_size;
}

/* The headers' counts_hash (wire.h): a hash of the recvcounts that every rank of an
 * allgatherv or reduce_scatterv passes alike, never 0; 0 for the other collectives. Ranks
 * whose arrays differed with the same sum got no error, and an all-gatherv laid the
 * blocks out by the senders' counts (wrong data on the rank that differed). */
static uint64_t counts_hash(const collie_coll_args_t *a) {
  if (a->coll != COLLIE_COLL_ALLGATHERV && a->coll != COLLIE_COLL_REDUCE_SCATTERV) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  for (int r = 0; r < a->nranks; r++) h = (h ^ (uint64_t)a->counts[r]) * 0x100000001b3ull;
  return h | 1;
}

/* Whether this call repeats the last one that chose the shared-memory collectives: the
 * choice depends on the collective and its size (the cost model), and on the element size
 * (whether a piece fits the staging area); the rest is fixed for the communicator. */
static bool memo_hit(const collie_comm_t *comm, const collie_coll_args_t *args, size_t bytes) {
  return comm->native_memo.algo && comm->native_memo.coll == (int)args->coll && comm->native_memo.bytes == bytes &&
         comm->native_memo.elem_size == args->elem_size;
}

/* One thread at a time issues collectives on a communicator. The ranks pair collectives
 * by their order, and two threads of a rank calling at once issue them in whichever order
 * they reach the lock, which differs from rank to rank: two threads' allreduces of the
 * same size were paired crosswise and returned wrong sums without an error (3 ranks of 2
 * threads, 3000 calls each: 2996 wrong). A blocking collective outside a group marks the
 * communicator as its thread's until its wait ends; a collective from another thread
 * meanwhile fails the communicator on every rank. Calls that do not overlap a blocking
 * one in time (nonblocking calls from two threads, groups) are not seen.
 *
 * usable_locked, under comm->lock: whether the communicator failed since the call's
 * checks (a peer, or an abort from another thread or from a signal handler on this one,
 * which may have torn it down: its shared memory is gone), or another thread is inside a
 * blocking collective on comm, which then fails the communicator. The caller gives the
 * lock back, then calls collie_comm_end_abort. */
static collie_result_t usable_locked(collie_comm_t *comm, const char *fn) {
  int failed = atomic_load_explicit(&comm->failed, memory_order_acquire);
  if (failed) return collie_error(comm, (collie_result_t)failed, "%s", comm->fail_msg);
  uintptr_t holder = atomic_load_explicit(&comm->coll_thread, memory_order_relaxed);
  if (!holder || holder == collie_thread_id()) return COLLIE_SUCCESS;
  char what[64];
  if (comm->coll_thread_coll < 0) snprintf(what, sizeof(what), "collie_comm_split");
  else
    snprintf(what, sizeof(what), "%s #%llu", collie_coll_name((collie_coll_t)comm->coll_thread_coll),
             (unsigned long long)comm->coll_thread_seq);
  collie_comm_fail(comm, COLLIE_ERR_INVALID_USAGE, false,
                   "rank %d: %s was called while another thread of this process was inside %s on the same "
                   "communicator; the ranks pair collectives by their order, which two threads calling at once "
                   "make different on each rank, so results would mix: issue the collectives of a communicator "
                   "from one thread at a time (in the same order on every rank), or give each thread its own "
                   "communicator (collie_comm_split)",
                   comm->rank, fn, what);
  return collie_error(comm, COLLIE_ERR_INVALID_USAGE, "%s", comm->fail_msg);
}

/* Marks comm as this thread's, as a blocking collective does, for a call made of several
 * (collie_comm_split: two threads splitting one communicator at once had their exchanges
 * paired crosswise, and each got a communicator of the wrong ranks without an error). */
collie_result_t collie_coll_claim(collie_comm_t *comm, const char *fn, bool *claimed) {
  *claimed = false;
  collie_lock(&comm->lock);
  collie_result_t res = usable_locked(comm, fn);
  if (!res && !atomic_load_explicit(&comm->coll_thread, memory_order_relaxed)) {
    atomic_store_explicit(&comm->coll_thread, collie_thread_id(), memory_order_relaxed);
    comm->coll_thread_coll = -1;
    *claimed = true;
  }
  collie_unlock(&comm->lock);
  if (res) collie_comm_end_abort(comm);
  return res;
}

void collie_coll_unclaim(collie_comm_t *comm, bool claimed) {
  if (claimed) atomic_store_explicit(&comm->coll_thread, 0, memory_order_relaxed);
}

void collie_coll_hold(collie_comm_t *comm, collie_request_t *req) {
  atomic_store_explicit(&comm->coll_thread, collie_thread_id(), memory_order_relaxed);
  comm->coll_thread_coll = (int)req->coll;
  comm->coll_thread_seq = req->seq;
  req->claimed = true;
}

/* What an operation without a schedule carries: a shared-memory collective's (its rounds
 * live in the op), a count-0 collective's behind others (collie_coll_done). */
static collie_sched_t no_steps;
collie_sched_t *collie_coll_no_steps(void) { return &no_steps; }

collie_result_t collie_coll_post(collie_comm_t *comm, collie_coll_args_t *args, const collie_coll_call_t *call,
                                 collie_request_t **req) {
  const char *fn = call->fn;
  collie_frame_t *frame = collie_frame_take();
  args->nranks = comm->nranks;
  args->rank = comm->rank;
  args->elem_size = collie_datatype_size(call->dt);
  args->group_of = comm->group_of;
  args->ngroups = comm->ngroups;
  if (!args->chunk_bytes) args->chunk_bytes = comm->chunk_bytes;
  args->chunk_bytes &= ~(args->elem_size - 1); /* a whole number of elements: sizes are powers of 2 */
  if (!args->chunk_bytes) args->chunk_bytes = args->elem_size;

  const collie_algo_t *cands[16];
  bool forced = false;
  int n = 0;
  const collie_algo_t *chosen = NULL;
  collie_sched_t *s = NULL;
  int *users = NULL;
  bool cached = false, native = false, relocked = false;
  collie_lock(&comm->lock);
  collie_result_t res = usable_locked(comm, fn);
  if (res) {
    collie_unlock(&comm->lock);
    collie_comm_end_abort(comm);
    return res;
  }
  if (memo_hit(comm, args, call->bytes)) {
    /* The same call as the last shared-memory one: the same choice, without the cost
     * model (2 ranks, 8 B all-reduce: it was a tenth of the call). */
    chosen = comm->native_memo.algo;
    native = cached = true;
    s = &no_steps;
  } else { /* the lock is given back meanwhile: usable_locked looks again before posting */
    collie_unlock(&comm->lock);
    n = collie_tune_candidates(comm, args->coll, call->bytes, cands, 16, &forced);
    collie_lock(&comm->lock);
    relocked = true;
  }
  bool no_memory = false;
  for (int i = 0; i < n && !chosen && !no_memory; i++) {
    if (!cands[i]->build) {
      if (!collie_native_usable(comm, args)) continue;
      chosen = cands[i];
      native = true;
      s = &no_steps;
      /* logged once per collective, not per call: there is no cached schedule to mark it */
      cached = (comm->native_logged >> args->coll) & 1;
      comm->native_logged |= 1u << args->coll;
      comm->native_memo.coll = (int)args->coll;
      comm->native_memo.bytes = call->bytes;
      comm->native_memo.elem_size = args->elem_size;
      comm->native_memo.algo = chosen;
      comm->native_memo.fast = false; /* until the operation is prepared, below */
      break;
    }
    s = collie_sched_cache_get(comm, args, cands[i], &users);
    if (s) {
      chosen = cands[i];
      cached = true;
      break;
    }
    s = malloc(sizeof(*s));
    if (!s) {
      no_memory = true;
      break;
    }
    collie_sched_init(s, comm->nranks, comm->rank, args->elem_size);
    collie_result_t r = cands[i]->build(args, s);
    if (r == COLLIE_SUCCESS && !s->failed) {
      chosen = cands[i];
      users = collie_sched_cache_put(comm, args, chosen, s);
      break;
    }
    collie_sched_free(s);
    free(s);
    s = NULL;
    /* Only a candidate that cannot serve these arguments falls back: every rank finds the
     * same. One that ran out of memory did so on this rank alone, and the next candidate
     * would move data in another pattern than the other ranks' (they waited until
     * COLLIE_EXEC_TIMEOUT, or a pattern that happened to fit gave wrong results). */
    if (r != COLLIE_ERR_INVALID_ARGUMENT) no_memory = true;
    if (r == COLLIE_ERR_INVALID_ARGUMENT && i == 0 && forced)
      COLLIE_INFO(COLLIE_SUB_TUNE, comm->rank, "%s: forced algorithm '%s' cannot serve %zu bytes on %d ranks; "
                  "falling back to automatic", collie_coll_name(args->coll), cands[i]->name, call->bytes, comm->nranks);
  }
  if (no_memory) {
    collie_result_t res = collie_comm_fail_no_memory(comm, fn, "building the schedule of %zu bytes on %d ranks",
                                                     call->bytes, comm->nranks);
    collie_unlock(&comm->lock);
    return res;
  }
  if (!chosen) {
    collie_unlock(&comm->lock);
    return collie_error(comm, COLLIE_ERR_INTERNAL, "%s on rank %d: no algorithm could build a schedule for %zu bytes "
                        "on %d ranks", fn, comm->rank, call->bytes, comm->nranks);
  }
  /* Created and posted under the same hold of the lock as the choice: each lock and unlock
   * is a few percent of a small collective. */
  collie_op_t *op = collie_op_create(comm, s, users == NULL && !native, call->sendbuf, call->recvbuf, args->coll,
                                     call->sig_count, call->dt, call->op, call->root, frame);
  if (!op) {
    const unsigned long long scratch = s->scratch_bytes;
    if (users) (*users)--;
    else if (!native) {
      collie_sched_free(s);
      free(s);
    }
    collie_result_t res =
        scratch ? collie_comm_fail_no_memory(comm, fn, "its operation with %llu bytes of scratch space", scratch)
                         : collie_comm_fail_no_memory(comm, fn, "its operation");
    collie_unlock(&comm->lock);
    return res;
  }
  op->sched_users = users;
  op->stream = collie_coll_streams(comm, recv_bytes(args));
  op->stream_timed = collie_coll_streams(comm, 2 * recv_bytes(args));
  if (native) {
    collie_native_prepare(op, args);
    /* the memo is this call's now: whether its repeats may take the fast lane */
    comm->native_memo.fast = collie_fast_lane_serves(op);
  }
  op->temp = call->temp;
  op->counts_hash = counts_hash(args);
  if (call->op == COLLIE_AVG && call->avg_count) {
    op->avg_buf = call->avg_buf;
    op->avg_count = call->avg_count;
  }
  /* Only after the lock was given back: on the memoized path it was held since the check
   * above, and the smallest calls paid for the second look. */
  if (relocked) res = usable_locked(comm, fn);
  if (res) {
    op->temp = NULL; /* not taken: the caller still owns it and gives it back */
    collie_op_discard(op);
    collie_unlock(&comm->lock);
    collie_comm_end_abort(comm);
    return res;
  }
  bool kick;
  /* a shared-memory broadcast claims when it runs; coll_seq + 1: the number the post gives */
  if (call->root == comm->rank && !native) collie_claim_root(comm, args->coll, call->root, comm->coll_seq + 1);
  res = collie_post_locked(comm, op, req, &kick);
  if (!res) collie_comm_check_left(comm);
  if (!res && frame) collie_coll_hold(comm, *req);
  collie_unlock(&comm->lock);
  if (kick) collie_progress_kick(comm);
  if (res) collie_comm_end_abort(comm);
  if (!res && !frame) collie_others_note(comm); /* may stay pending while this thread waits elsewhere */
  if (!cached) collie_tune_log_choice(comm, args->coll, call->bytes, cands, n, chosen, forced);
  return res;
}

collie_result_t collie_coll_done(collie_comm_t *comm, collie_coll_t coll, const collie_coll_call_t *call,
                                 collie_request_t **req) {
  collie_lock(&comm->lock);
  collie_result_t res = usable_locked(comm, call->fn);
  if (res) {
    collie_unlock(&comm->lock);
    collie_comm_end_abort(comm);
    return res;
  }
  if (comm->ops) {
    /* Operations complete in the order they were issued (API.md): behind others in flight,
     * an operation without steps, retired once they are (a count-0 broadcast returned
     * while an all-to-all posted before it was still moving data). Posting numbers it. */
    collie_op_t *op = collie_op_create(comm, &no_steps, false, call->sendbuf, call->recvbuf, coll, 0, call->dt,
                                       call->op, call->root, NULL);
    bool kick = false;
    res = op ? collie_post_locked(comm, op, req, &kick) : collie_comm_fail_no_memory(comm, call->fn, "its operation");
    collie_unlock(&comm->lock);
    if (kick) collie_progress_kick(comm);
    if (res) collie_comm_end_abort(comm);
    return res;
  }
  /* Nothing to move and nothing before it: complete at once, but count the collective so
   * that sequence numbers stay in step. */
  collie_request_t *r = calloc(1, sizeof(*r));
  if (!r) {
    res = collie_comm_fail_no_memory(comm, call->fn, "its request"); /* the numbering would go out of step */
    collie_unlock(&comm->lock);
    return res;
  }
  comm->coll_seq++;
  collie_unlock(&comm->lock);
  r->magic = COLLIE_REQ_LIVE;
  r->comm = comm;
  collie_comm_retain(comm);
  atomic_store(&r->done, 1);
  *req = r;
  return COLLIE_SUCCESS;
}
