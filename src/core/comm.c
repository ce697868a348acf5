/* Communicator state shared by everything: failure, last error, peer names, lifetime. */
#include "core/comm.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap/control.h"
#include "core/error.h"
#include "core/log.h"
#include "sched/executor.h"
#include "transport/shm.h"

int64_t collie_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int collie_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(thread, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

void collie_comm_set_last_error(collie_comm_t *comm, const char *msg) {
  pthread_mutex_lock(&comm->err_lock);
  snprintf(comm->last_error, sizeof(comm->last_error), "%s", msg);
  pthread_mutex_unlock(&comm->err_lock);
}

const char *collie_comm_last_error(const collie_comm_t *comm) { return comm->last_error; }

const char *collie_peer_desc(const collie_comm_t *comm, int rank, char *buf, size_t len) {
  if (comm->cards && rank >= 0 && rank < comm->nranks && comm->cards[rank].pid)
    snprintf(buf, len, "rank %d (pid %d on host %s)", rank, comm->cards[rank].pid, comm->cards[rank].hostname);
  else
    snprintf(buf, len, "rank %d", rank);
  return buf;
}

void collie_comm_wake(collie_comm_t *comm) {
  collie_shm_wake_self(comm);
  if (comm->has_progress_thread) collie_progress_kick(comm);
}

void collie_comm_fail(collie_comm_t *comm, collie_result_t res, bool from_remote, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  bool first = false;
  pthread_mutex_lock(&comm->err_lock);
  if (!atomic_load(&comm->failed)) {
    snprintf(comm->fail_msg, sizeof(comm->fail_msg), "%s", msg);
    comm->fail_from_remote = from_remote;
    snprintf(comm->last_error, sizeof(comm->last_error), "%s", msg);
    atomic_store_explicit(&comm->failed, (int)res, memory_order_release);
    first = true;
  }
  pthread_mutex_unlock(&comm->err_lock);
  if (!first) return;
  int sub = res == COLLIE_ERR_REMOTE ? COLLIE_SUB_TRANSPORT : res == COLLIE_ERR_SYSTEM ? COLLIE_SUB_INIT : COLLIE_SUB_COLL;
  if (res != COLLIE_ERR_ABORTED) COLLIE_WARN(sub, comm->rank, "%s", msg);
  if (!from_remote && res != COLLIE_ERR_ABORTED)
    collie_shm_post_failure(comm, res, msg); /* the local peers learn it without rank 0 */
  /* Rank 0 passes on every failure it learns, whichever way it came: a notice read in a
   * peer's segment or in its last words on a TCP connection reaches only the ranks that
   * read them, and a rank of another host, or one not waiting then, saw rank 0 leave
   * instead and blamed it (fault_zero_count_4, fault_alloc_fail_tcp). The origin gets its
   * own notice back, failed already. */
  if ((!from_remote || comm->rank == 0) && res != COLLIE_ERR_ABORTED) collie_ctl_send_fail(comm, res, msg);
  collie_comm_wake(comm);
}

bool collie_comm_fail_as_local_peer(collie_comm_t *comm) {
  char said[1024];
  int there;
  const collie_result_t pf = collie_shm_peer_failure(comm, &there, said, sizeof(said));
  if (pf) collie_comm_fail(comm, pf, true, "%s", said);
  return pf != COLLIE_SUCCESS;
}

bool collie_comm_await_failure(collie_comm_t *comm) {
  const int64_t until = collie_now_ns() + 300 * 1000000LL;
  while (!atomic_load(&comm->failed) && !collie_comm_fail_as_local_peer(comm) && collie_now_ns() < until) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return atomic_load(&comm->failed) != 0;
}

collie_result_t collie_init_no_memory(collie_comm_t *comm, int rank, const char *what) {
  return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d ran out of memory creating the communicator (%s): " COLLIE_MEMORY_ADVICE,
                      rank, what);
}

collie_result_t collie_comm_fail_no_memory(collie_comm_t *comm, const char *fn, const char *what, ...) {
  char w[256], msg[1024];
  va_list ap;
  va_start(ap, what);
  vsnprintf(w, sizeof(w), what, ap);
  va_end(ap);
  if (comm->nranks == 1)
    return collie_error(comm, COLLIE_ERR_SYSTEM, "%s on rank %d: out of memory (%s): " COLLIE_MEMORY_ADVICE, fn, comm->rank, w);
  snprintf(msg, sizeof(msg),
           "%s on rank %d failed: out of memory (%s); since the other ranks would wait for this rank's part, "
           "the communicator now fails on every rank: " COLLIE_MEMORY_ADVICE ", then create a new communicator",
           fn, comm->rank, w);
  collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false, "%s", msg);
  return collie_error(comm, COLLIE_ERR_SYSTEM, "%s", msg);
}

void collie_comm_check_left(collie_comm_t *comm) {
  uint64_t issued = atomic_load(&comm->left_after);
  if (comm->coll_seq <= issued || atomic_load(&comm->failed)) return;
  char pd[160];
  collie_comm_fail(comm, COLLIE_ERR_REMOTE, false,
                   "%s destroyed its communicator after %llu collectives, while rank %d issued collective #%llu, "
                   "which needs it: the ranks did not call the same collectives; check why that rank stopped early "
                   "(its errors and log)",
                   collie_peer_desc(comm, atomic_load(&comm->left_rank), pd, sizeof(pd)), (unsigned long long)issued,
                   comm->rank, (unsigned long long)comm->coll_seq);
}

void collie_comm_peer_left(collie_comm_t *comm, int rank, uint64_t issued, bool counts, uint64_t sent,
                           uint64_t recvd) {
  if (issued < atomic_load(&comm->left_after)) { /* the watchdog is the only writer: the rank first */
    atomic_store(&comm->left_rank, rank);
    atomic_store(&comm->left_after, issued);
  }
  collie_lock(&comm->lock);
  /* A later collective first: its sentence says more than that of its messages. */
  collie_comm_check_left(comm);
  if (counts && rank != comm->rank && !comm->peers[rank].gone) {
    collie_peer_t *peer = &comm->peers[rank];
    peer->gone_sent = sent;
    peer->gone_recvd = recvd;
    peer->gone = true;
    collie_check_departed(comm, peer);
  }
  collie_unlock(&comm->lock);
}

void collie_comm_retain(collie_comm_t *comm) { atomic_fetch_add(&comm->refs, 1); }

void collie_comm_free(collie_comm_t *comm);

void collie_comm_release(collie_comm_t *comm) {
  if (atomic_fetch_sub(&comm->refs, 1) == 1) collie_comm_free(comm);
}

collie_result_t collie_comm_check_handle(const collie_comm_t *comm, const char *fn) {
  collie_result_t res = collie_check_magic(comm, COLLIE_COMM_LIVE, COLLIE_COMM_DEAD, fn, "communicator");
  if (res != COLLIE_ERR_INVALID_USAGE) return res;
  return collie_error(NULL, res,
                      "%s on rank %d: the communicator was already destroyed or aborted; its handle may not be "
                      "used again (create a new communicator)",
                      fn, comm->rank);
}

collie_result_t collie_comm_check(collie_comm_t *comm, const char *fn) {
  collie_result_t res = collie_comm_check_handle(comm, fn);
  if (res) return res;
  if (atomic_load(&comm->destroyed)) {
    collie_comm_end_abort(comm);
    return collie_error(comm, COLLIE_ERR_INVALID_USAGE,
                        "%s on rank %d: the communicator was already destroyed or aborted; its handle may not be "
                        "used again (create a new communicator)",
                        fn, comm->rank);
  }
  int f = atomic_load_explicit(&comm->failed, memory_order_acquire);
  if (f) {
    collie_error(comm, (collie_result_t)f, "%s", comm->fail_msg);
    return (collie_result_t)f;
  }
  return COLLIE_SUCCESS;
}

collie_result_t collie_comm_rank(const collie_comm_t *comm, int *rank) {
  if (!rank) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_comm_rank: rank is NULL");
  collie_result_t res = collie_comm_check_handle(comm, "collie_comm_rank");
  if (res) return res;
  *rank = comm->rank;
  return COLLIE_SUCCESS;
}

collie_result_t collie_comm_size(const collie_comm_t *comm, int *size) {
  if (!size) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_comm_size: size is NULL");
  collie_result_t res = collie_comm_check_handle(comm, "collie_comm_size");
  if (res) return res;
  *size = comm->nranks;
  return COLLIE_SUCCESS;
}
