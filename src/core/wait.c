/* Waiting: drive progress, never burn a core another rank needs, honour the exec timeout.
 *
 * A waiter polls for COLLIE_SPIN microseconds, then yields for COLLIE_YIELD microseconds
 * (polling a little between yields while the peer it waits for runs, yield_once), then sleeps:
 * on its shared-memory doorbell (peers wake it with a futex) and/or in poll() on its TCP
 * sockets. Sleeps are short and bounded so that deadlines are always checked. */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/native/shm_native.h"
#include "bootstrap/control.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/futex.h"
#include "core/log.h"
#include "core/own_waits.h"
#include "core/params.h"
#include "core/progress_others.h"
#include "sched/executor.h"
#include "transport/shm.h"
#include "transport/tcp.h"

/* After this long without progress (or half the exec timeout, if shorter), and again every
 * as long, a rank tells rank 0 which collective it is stuck in and for which message, so
 * that calls that disagree without any message showing it fail as a mismatch now
 * (bootstrap/stall.c) instead of at the exec timeout. */
enum { STALL_REPORT_MS = 2000 };

/* Under comm->lock: the stall report of collective op: its fingerprint, and the message
 * or shared-memory round it waits for, if any (what collie_describe_wait names). */
static void report_collective(collie_comm_t *comm, const collie_op_t *op, collie_stall_t *st) {
  collie_op_fingerprint(op, comm->rank, &st->call);
  int p;
  const collie_xfer_t *x = op->native ? NULL : collie_op_waited_xfer(comm, op, &p);
  st->peer = x ? p : -1;
  if (x) {
    st->dir = x->is_send ? COLLIE_STALL_SEND : COLLIE_STALL_RECV;
    st->pos = x->pseq;
  } else if (op->native && op->nat_wait >= 0 && op->nat_wait != comm->rank &&
             (op->nat_wait_flag == COLLIE_SHM_READY || op->nat_wait_flag == COLLIE_SHM_STAGED)) {
    /* waiting for a peer to enter (or stage) this round: a peer that issued this operation
     * without ever reaching the round (a count of 0 there, which completes at once, or a
     * collective sent as messages) never will (stall.c) */
    st->peer = op->nat_wait;
    st->dir = COLLIE_STALL_SHM;
    st->pos = op->nat_round;
  }
}

/* Under comm->lock: reports the oldest pending collective (point-to-point operations carry
 * no operation number to compare; one whose steps are done waits only for those before
 * it), and the message it waits for, if any (what collie_describe_wait names). When only
 * sends and receives wait, the report just asks the peer of the first what it waits for
 * (core/own_waits.h). */
static void report_stall(collie_comm_t *comm) {
  const collie_op_t *op = comm->ops;
  while (op && (op->coll == COLLIE_COLL_SEND || op->coll == COLLIE_COLL_RECV || op->steps_done)) op = op->next;
  collie_stall_t st;
  memset(&st, 0, sizeof(st));
  if (!op) { /* only sends and receives wait: ask the peer of the first what it waits for */
    for (op = comm->ops; op && op->steps_done; op = op->next) continue;
    int p = -1;
    if (!op) p = collie_native_deferred_root(comm); /* only a comparison with a root's call waits */
    else if (op->native || !collie_op_waited_xfer(comm, op, &p)) return;
    if (p < 0) return;
    st.peer = p;
    st.dir = COLLIE_STALL_ASK;
  } else {
    report_collective(comm, op, &st);
  }
  if (st.peer >= 0 && st.peer != comm->rank) { /* the report also asks that peer what it waits for */
    comm->stall_asked = st.peer;
    comm->stall_asked_ns = collie_now_ns();
  }
  collie_ctl_report_stall(comm, &st);
  collie_own_waits_post(comm);
  /* Posted again once the relay's silence (own_waits.c: RELAY_SILENT_NS) can be told: a
   * first post cannot say yet that rank 0 left this question unacknowledged, and the next
   * report comes an interval later, after a local peer's timeout perhaps. */
  comm->waits_repost_ns = collie_now_ns() + 600 * 1000000LL;
}


/* At the timeout, the answer held from the peer waited for may be up to a report interval
 * old: the peer may since have reached this operation and wait there for a third rank, or
 * have heard more of its own chain, and the sentence should name where the chain ends
 * (fault campaign, 5 ranks, rank 4 frozen: rank 3 timed out waiting for rank 2, whose
 * answer of 2 s before said it had not reached the all-gatherv where it then waited for
 * rank 4, and no rank's error named rank 4). So when the peer has answered during this
 * stall, the timeout asks again every REASK_EVERY_MS for REASK_WAIT_MS before it fails;
 * the peer counts as waiting once it has waited 50 ms (own_waits.c). Returns whether the
 * timeout waits. Under comm->lock. */
enum { REASK_WAIT_MS = 500, REASK_EVERY_MS = 50 };
static bool timeout_reasks(collie_comm_t *comm, int64_t now) {
  if (comm->timeout_reask_ns) {
    if (now - comm->timeout_reask_ns >= REASK_WAIT_MS * 1000000LL) return false;
    /* Asked, each rank of the chain answers at once with what it holds and asks its own
     * peer (own_waits.c): each question of the window takes the answer one rank deeper. */
    if (now >= comm->stall_next_ns) {
      comm->stall_next_ns = now + REASK_EVERY_MS * 1000000LL;
      report_stall(comm);
    }
    return true;
  }
  /* no answer to renew (a stopped peer, one of this process); a recent answer may still
   * carry an old end of its own chain */
  if (!collie_peer_answered(comm)) return false;
  comm->timeout_reask_ns = now;
  comm->stall_next_ns = now + REASK_EVERY_MS * 1000000LL;
  report_stall(comm);
  return true;
}

/* collie_check_idle (comm_internal.h) fails the communicator when nothing moved for
 * exec_timeout, in a wait on it. Progress only counts (comm->progress_count); the clock is read every 64th idle check, or at
 * every one when `timed` (before sleeping): a clock read per idle check cost a tenth of
 * a small collective, and a timeout of seconds needs no finer grain. */
void collie_check_idle(collie_comm_t *comm, bool timed, bool may_time_out) {
  /* A comparison left to make counts as an operation: a synchronize waiting for one whose
   * root was frozen waited for good (coll_fuzz_stop_hosts_root_4, about 1 run in 8 under ASan). */
  if (!collie_comm_pending(comm) || atomic_load(&comm->failed)) return;
  if (comm->progress_seen != comm->progress_count) {
    comm->progress_seen = comm->progress_count;
    comm->last_progress_ns = 0; /* the idle time starts at the next clock read */
    comm->idle_checks = 0;
    comm->timeout_reask_ns = 0;
    comm->ask_soon = false;
    return;
  }
  if ((++comm->idle_checks & 63) && !timed) return;
  /* A local peer that failed says so in its segment, which also serves where rank 0, that
   * passes failures on, is stopped (collie_shm_post_failure). */
  if (collie_comm_fail_as_local_peer(comm)) {
    collie_progress(comm);
    return;
  }
  int64_t now = collie_now_ns();
  if (!comm->last_progress_ns) {
    comm->last_progress_ns = now;
    return;
  }
  int64_t idle = now - comm->last_progress_ns;
  const int report_ms = comm->exec_timeout_ms / 2 < STALL_REPORT_MS ? comm->exec_timeout_ms / 2 : STALL_REPORT_MS;
  /* every interval, or soon when asked; past the timeout timeout_reasks asks on its own schedule */
  const bool ask = comm->ask_soon || (idle >= (int64_t)report_ms * 1000000 && now >= comm->stall_next_ns);
  if (ask && !comm->timeout_reask_ns) {
    comm->ask_soon = false;
    comm->stall_next_ns = now + (int64_t)report_ms * 1000000;
    report_stall(comm);
  } else if (comm->waits_repost_ns && now >= comm->waits_repost_ns) {
    comm->waits_repost_ns = 0;
    collie_own_waits_post(comm);
  }
  if (!may_time_out || idle < (int64_t)comm->exec_timeout_ms * 1000000 || timeout_reasks(comm, now)) return;
  char what[512], said[1024];
  collie_describe_wait(comm, what, sizeof(what));
  collie_peer_said(comm, said, sizeof(said));
  collie_comm_fail(comm, COLLIE_ERR_TIMEOUT, false,
                   "rank %d timed out after %d s without progress in %s%s; the peer may be stuck, slow or "
                   "calling a different operation (COLLIE_EXEC_TIMEOUT sets the limit)",
                   comm->rank, comm->exec_timeout_ms / 1000, what, said);
  collie_progress(comm);
}

/* One locked pass; returns >0 if anything moved. */
static int progress_once(collie_comm_t *comm, bool timed) {
  collie_lock(&comm->lock);
  int moved = collie_progress(comm);
  if (!moved) collie_check_idle(comm, timed, true);
  collie_unlock(&comm->lock);
  return moved;
}

static void sleep_once(collie_comm_t *comm, _Atomic int *done) {
  struct pollfd fds[64];
  collie_lock(&comm->lock);
  int nfds = comm->tcp ? collie_tcp_pollfds(comm, fds, 64) : 0;
  collie_unlock(&comm->lock);
  bool shm = comm->shm && comm->shm->mine;
  if (shm) {
    uint32_t seen = collie_shm_sleep_prepare(comm);
    int moved = progress_once(comm, true);
    if (!moved && !atomic_load(done) && !atomic_load(&comm->failed)) {
      if (nfds) poll(fds, (nfds_t)nfds, 1);
      else collie_shm_sleep(comm, seen, 20);
    }
    collie_shm_sleep_done(comm);
  } else if (nfds) {
    /* a pass that reads the clock: the untimed ones read it every 64th, 0.64 s of such
     * sleeps, which put a TCP timeout and a question asked soon (own_waits.c) that late */
    if (!progress_once(comm, true) && !atomic_load(done) && !atomic_load(&comm->failed)) poll(fds, (nfds_t)nfds, 10);
  } else {
    sched_yield();
  }
}

/* With more ranks than cores, a rank that waits for a peer that has no core only keeps it
 * off this one: it yields at once. But a peer that runs on another core right now answers
 * within a progress pass, sooner than a yield comes back, so a waiter polls, up to
 * COLLIE_OS_POLLS polls per yield, while the peer it waits for has not said that it
 * yields or sleeps. */
enum { COLLIE_OS_POLLS = 16 };
static void yield_once(collie_comm_t *comm, collie_waiter_t *w) {
  if (comm->shm && comm->oversubscribed) {
    const int peer = atomic_load_explicit(&comm->wait_peer, memory_order_relaxed);
    if (peer >= 0 && w->polls_left > 0 && collie_shm_peer_on_cpu(comm, peer)) {
      w->polls_left--;
      collie_cpu_relax();
      return;
    }
    w->polls_left = COLLIE_OS_POLLS;
    collie_shm_yield(comm);
    return;
  }
  sched_yield();
}

/* w->rounds counts idle rounds; the phases are measured in time (COLLIE_SPIN and
 * COLLIE_YIELD are microseconds), because what matters is how long a peer usually takes to
 * answer, not how fast this CPU polls. The clock starts at round 16 and is read every 64
 * rounds after, so rounds 1 to 63 count as time 0 (polls, or yields with more ranks than
 * cores), and each phase lasts at least that long: most waits end there, and a clock read
 * cost a tenth of a small collective (and 1% of a 4-rank one on 2 cores, where every
 * operation waits). */
enum { COLLIE_FIRST_TIMED = 16 };
void collie_idle(collie_comm_t *comm, collie_waiter_t *w, _Atomic int *done) {
  int n = ++w->rounds;
  int64_t us = 0;
  if (n == 1) w->polls_left = COLLIE_OS_POLLS;
  if (n == COLLIE_FIRST_TIMED) {
    w->since_ns = collie_now_ns();
    w->ns = 0;
  } else if (n > COLLIE_FIRST_TIMED && (n & 63) == 0) {
    w->ns = collie_now_ns() - w->since_ns;
  }
  if (n >= COLLIE_FIRST_TIMED) us = w->ns / 1000;
  if (us < comm->spin) {
    collie_cpu_relax();
    return;
  }
  if (w->may_count && !w->counted) {
    atomic_fetch_add(&comm->waiters, 1);
    w->counted = true;
    if (atomic_load(done)) return;
  }
  if (us < (int64_t)comm->spin + comm->yield) yield_once(comm, w);
  else sleep_once(comm, done);
}

/* A finished request is kept, marked dead, until QUARANTINE more have finished in the
 * same thread: waiting for it again (MPI sets the handle to MPI_REQUEST_NULL, collie cannot)
 * or testing it after collie_test said done then gets COLLIE_ERR_INVALID_USAGE instead of
 * reading freed memory, or waiting for whichever request reused it. Per thread, without a
 * lock; when a thread exits, its last ones move to a shared ring (under a mutex, rarely
 * taken), since another thread may still hold them: a waiter thread that exited freed
 * the request a second waiter then read. */
enum { QUARANTINE = 64 };
typedef struct {
  collie_request_t *slot[QUARANTINE];
  unsigned next;
} quarantine_t;
static _Thread_local quarantine_t *quarantine;
static pthread_key_t quarantine_key;
static pthread_once_t quarantine_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t exited_lock = PTHREAD_MUTEX_INITIALIZER;
static quarantine_t exited; /* the requests of threads that exited */

/* Puts req into q's oldest slot; returns what was there, to free. */
static collie_request_t *quarantine_put(quarantine_t *q, collie_request_t *req) {
  collie_request_t *old = q->slot[q->next];
  q->slot[q->next] = req;
  q->next = (q->next + 1) % QUARANTINE;
  return old;
}

static void quarantine_exit(void *p) {
  quarantine_t *q = p;
  for (int i = 0; i < QUARANTINE; i++) {
    if (!q->slot[i]) continue;
    pthread_mutex_lock(&exited_lock);
    collie_request_t *old = quarantine_put(&exited, q->slot[i]);
    pthread_mutex_unlock(&exited_lock);
    free(old);
  }
  free(q);
}

static void quarantine_key_make(void) {
  if (pthread_key_create(&quarantine_key, quarantine_exit)) abort();
}

static void retire_request(collie_request_t *req) {
  if (req->in_frame) return;
  if (!quarantine) {
    pthread_once(&quarantine_once, quarantine_key_make);
    quarantine = calloc(1, sizeof(*quarantine));
    if (!quarantine || pthread_setspecific(quarantine_key, quarantine)) {
      free(quarantine);
      quarantine = NULL;
      free(req);
      return;
    }
  }
  free(quarantine_put(quarantine, req));
}

static collie_result_t check_request(const collie_request_t *req, const char *fn) {
  collie_result_t res = collie_check_magic(req, COLLIE_REQ_LIVE, COLLIE_REQ_DEAD, fn, "request");
  if (res != COLLIE_ERR_INVALID_USAGE) return res;
  return collie_error(NULL, res,
                      "%s: the request already completed and was freed by collie_wait, or by collie_test when it "
                      "reported done; a request is waited for (or tested until done) once",
                      fn);
}

/* A thread that waits moves the data itself, progress thread or not: the progress thread
 * is for overlap while the application computes. Left to it, a waiter could only poll,
 * yield or sleep until that thread finished, and where threads outnumber the cores (a
 * rank and its progress thread on one) they took turns: a blocking 8 B all-reduce on 2
 * ranks took 15 to 30 us instead of 0.2. The progress thread stands aside while any
 * thread drives (progress_main); the last to leave wakes it if operations remain. */
static void drive_begin(collie_comm_t *comm) {
  if (comm->has_progress_thread) atomic_fetch_add(&comm->driving, 1);
}

static void drive_end(collie_comm_t *comm) {
  if (!comm->has_progress_thread || atomic_fetch_sub(&comm->driving, 1) != 1) return;
  /* The thread reads `driving` and marks itself asleep under the lock, so either it sees
   * the count at 0, or this sees it asleep and wakes it. */
  collie_lock(&comm->lock);
  bool kick = comm->ops && comm->progress_asleep;
  collie_unlock(&comm->lock);
  if (kick) collie_progress_kick(comm);
}

collie_result_t collie_request_wait(collie_request_t *req) {
  collie_comm_t *comm = req->comm;
  collie_waiter_t w = {.may_count = true}; /* counted from its first yield or sleep on */
  unsigned passes = 0;
  drive_begin(comm);
  while (!atomic_load_explicit(&req->done, memory_order_acquire)) {
    if (progress_once(comm, false)) {
      w.rounds = 0;
    } else if (!atomic_load_explicit(&req->done, memory_order_acquire)) {
      collie_idle(comm, &w, &req->done);
    }
    /* This thread's other communicators, every 16th pass, busy or idle: a peer may need
     * them to move before it can serve this one. */
    if ((++passes & 15) == 0) collie_others_progress(comm);
  }
  drive_end(comm);
  if (w.counted) atomic_fetch_sub(&comm->waiters, 1);
  /* One completion per request: two threads waiting for (or testing) it at once both got
   * here, and each released it and its communicator. (A blocking call's request is its
   * own: no atomic operation for it.) */
  uint32_t live = COLLIE_REQ_LIVE;
  if (!req->in_frame && !atomic_compare_exchange_strong(&req->magic, &live, COLLIE_REQ_DEAD))
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE,
                        "collie_wait/collie_test on rank %d: another thread waited for or tested this request "
                        "at the same time and completed it; one thread waits for a request",
                        comm->rank);
  collie_result_t res = req->result;
  if (res != COLLIE_SUCCESS) {
    pthread_mutex_lock(&comm->err_lock);
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", comm->fail_msg);
    pthread_mutex_unlock(&comm->err_lock);
    collie_error(comm, res, "%s", msg);
  }
  if (req->claimed) atomic_store_explicit(&comm->coll_thread, 0, memory_order_relaxed);
  retire_request(req);
  collie_comm_end_abort(comm);
  collie_comm_release(comm);
  return res;
}

collie_result_t collie_wait(collie_request_t *req) {
  collie_result_t res = check_request(req, "collie_wait");
  return res ? res : collie_request_wait(req);
}

collie_result_t collie_test(collie_request_t *req, int *done) {
  if (!done) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_test: done is NULL");
  collie_result_t res = check_request(req, "collie_test");
  if (res) return res;
  if (!atomic_load_explicit(&req->done, memory_order_acquire) && !req->comm->has_progress_thread)
    progress_once(req->comm, true); /* called at the user's pace: every call may be the last for a while */
  if (!atomic_load_explicit(&req->done, memory_order_acquire)) {
    /* A loop of tests is this thread's wait: its other communicators' operations, which
     * peers may wait for before they can serve this one, move too (as MPI_Test moves all). */
    if (!req->comm->has_progress_thread) collie_others_progress(req->comm);
    *done = 0;
    return COLLIE_SUCCESS;
  }
  *done = 1;
  return collie_request_wait(req);
}

/* Waits until every operation issued so far on comm has completed. */
collie_result_t collie_comm_synchronize_internal(collie_comm_t *comm) {
  collie_waiter_t w = {0}; /* counted for the whole wait: its look at the operations is no flag */
  _Atomic int never = 0;
  unsigned passes = 0;
  atomic_fetch_add(&comm->waiters, 1);
  drive_begin(comm);
  for (;;) {
    collie_lock(&comm->lock);
    int moved = collie_progress(comm);
    if (!moved) collie_check_idle(comm, false, true);
    bool empty = !collie_comm_pending(comm);
    collie_unlock(&comm->lock);
    if (empty) break;
    if (moved) w.rounds = 0;
    else collie_idle(comm, &w, &never);
    /* as in collie_request_wait: two ranks synchronizing different communicators, each
     * with an operation the other's needs, waited for each other until the timeout */
    if ((++passes & 15) == 0) collie_others_progress(comm);
  }
  drive_end(comm);
  atomic_fetch_sub(&comm->waiters, 1);
  int f = atomic_load(&comm->failed);
  return (collie_result_t)f;
}

collie_result_t collie_comm_synchronize(collie_comm_t *comm) {
  collie_result_t res = collie_comm_check(comm, "collie_comm_synchronize");
  if (res) return res;
  /* A reference for the wait, as a request holds one: another thread's collie_comm_abort
   * drops the handle's, and the last one unmaps the segments this wait sleeps on (it read
   * a NULL segment state after the sleep). Taken under the lock, with the failure checked:
   * an abort fails the communicator before its teardown and release. */
  collie_lock(&comm->lock);
  int f = atomic_load(&comm->failed);
  if (!f) collie_comm_retain(comm);
  collie_unlock(&comm->lock);
  if (f) return collie_error(comm, (collie_result_t)f, "%s", comm->fail_msg);
  res = collie_comm_synchronize_internal(comm);
  if (res) collie_error(comm, res, "%s", comm->fail_msg);
  collie_comm_release(comm);
  return res;
}

/* With more ranks than cores, the progress thread naps instead of sleeping while
 * nonblocking calls keep coming. A nonblocking post, or a waiter that leaves operations
 * behind, wakes a sleeping thread: a futex call, and a context switch that some rank needed
 * (a nonblocking 8 B all-reduce on 4 ranks on 2 cores took 13 to 24 us instead of 2.3). A
 * napping thread is not woken: it looks again after NAP_US by itself, so work posted for
 * overlap starts within that. After NAP_IDLE naps without a nonblocking post it sleeps until
 * woken, as before: naps that go on cost as much (200 us naps for 10 ms after the perf
 * test's set-up made its blocking 4-rank loop 20% slower). */
enum { NAP_US = 1000, NAP_IDLE = 2 };

/* COLLIE_PROGRESS_THREAD=1: nonblocking operations move while the user computes. */
static void *progress_main(void *p) {
  collie_comm_t *comm = p;
  int idle = 0, naps = NAP_IDLE;
  collie_lock(&comm->lock);
  for (;;) {
    /* Read before the checks: a kick after them changes it, and the futex returns at once. */
    uint32_t kick = atomic_load(&comm->progress_kick);
    if (atomic_load(&comm->stop_progress)) break;
    if (!comm->ops || atomic_load(&comm->driving)) { /* nothing to do, or a waiter does it (drive_end) */
      const bool nap = comm->oversubscribed && naps < NAP_IDLE;
      const uint64_t before = comm->posts;
      comm->progress_asleep = !nap; /* a post wakes it only then */
      collie_unlock(&comm->lock);
      collie_futex_wait_us(&comm->progress_kick, kick, nap ? NAP_US : 1000000);
      collie_lock(&comm->lock);
      if (comm->posts != before) naps = 0; /* nonblocking calls came: nap next time */
      else if (nap) naps++;
      comm->progress_asleep = false;
      idle = 0;
      continue;
    }
    int moved = collie_progress(comm);
    if (!moved) collie_check_idle(comm, idle >= comm->spin + comm->yield, true); /* timed once it sleeps */
    collie_unlock(&comm->lock);
    if (moved) idle = 0;
    else {
      /* The thread goes through the same phases as a waiter, without the lock, but counts
       * them in rounds, not microseconds. */
      int n = ++idle;
      if (n < comm->spin) collie_cpu_relax();
      else if (n < comm->spin + comm->yield) sched_yield();
      else {
        struct pollfd fds[64];
        collie_lock(&comm->lock);
        int nfds = comm->tcp ? collie_tcp_pollfds(comm, fds, 64) : 0;
        collie_unlock(&comm->lock);
        if (comm->shm && comm->shm->mine && !nfds) {
          uint32_t seen = collie_shm_sleep_prepare(comm);
          collie_lock(&comm->lock);
          int m = collie_progress(comm);
          collie_unlock(&comm->lock);
          if (!m) collie_shm_sleep(comm, seen, 20);
          collie_shm_sleep_done(comm);
        } else {
          poll(fds, (nfds_t)nfds, 1);
        }
      }
    }
    collie_lock(&comm->lock);
  }
  collie_unlock(&comm->lock);
  return NULL;
}

void collie_progress_kick(collie_comm_t *comm) {
  atomic_fetch_add(&comm->progress_kick, 1);
  collie_futex_wake(&comm->progress_kick);
}

collie_result_t collie_start_progress_thread(collie_comm_t *comm) {
  if (collie_param_int(COLLIE_P_PROGRESS_THREAD) <= 0) return COLLIE_SUCCESS;
  int rc = collie_thread_start(&comm->progress_thread, progress_main, comm);
  if (rc != 0)
    return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d could not start its progress thread: %s; %s", comm->rank,
                        strerror(rc), collie_thread_advice(rc));
  comm->has_progress_thread = true;
  return COLLIE_SUCCESS;
}
