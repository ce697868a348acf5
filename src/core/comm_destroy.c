/* Ending communicators: destroy (orderly, bounded by the timeout), abort (at once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/control.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "coll/sched_cache.h"
#include "core/log.h"
#include "sched/executor.h"
#include "transport/shm.h"
#include "transport/tcp.h"

static void stop_progress_thread(collie_comm_t *comm) {
  if (!comm->has_progress_thread) return;
  atomic_store(&comm->stop_progress, 1);
  collie_progress_kick(comm);
  pthread_join(comm->progress_thread, NULL);
  comm->has_progress_thread = false;
}

void collie_comm_teardown(collie_comm_t *comm) {
  stop_progress_thread(comm);
  collie_ctl_close(comm);
  collie_lock(&comm->lock);
  if (comm->ops) {
    if (!atomic_load(&comm->failed))
      collie_comm_fail(comm, COLLIE_ERR_ABORTED, true, "rank %d: the communicator was destroyed or aborted",
                       comm->rank);
    collie_fail_all_ops(comm);
  }
  for (int r = 0; comm->peers && r < comm->nranks; r++)
    if (comm->peers[r].tp && comm->peers[r].tp->close) comm->peers[r].tp->close(comm, &comm->peers[r]);
  collie_unlock(&comm->lock);
  collie_tcp_destroy(comm);
  /* The shared segments stay mapped until the last reference goes (collie_comm_free): a
   * thread still inside a wait on this communicator may be about to sleep on its doorbell. */
}

/* A destroyed communicator's memory is kept, marked dead, until QUARANTINE more have been
 * destroyed: a program that calls collie_comm_destroy after collie_comm_abort (or destroys
 * twice, or calls a collective after either) then gets COLLIE_ERR_INVALID_USAGE instead of
 * reading freed memory (heap-use-after-free under ASan; a crash or a stranger's data
 * without). And a call that had passed its checks when another thread, or a signal
 * handler on its own, aborted the communicator reads memory still there, and finds the
 * failure under the lock before it posts. What the OS holds (segments, sockets, threads)
 * goes at once; the struct (~2.5 KB) and its tables stay. */
enum { QUARANTINE = 16 };
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static collie_comm_t *quarantine[QUARANTINE];
static unsigned quarantine_next;

static void quarantine_comm(collie_comm_t *comm) {
  comm->magic = COLLIE_COMM_DEAD;
  pthread_mutex_lock(&quarantine_lock);
  collie_comm_t *old = quarantine[quarantine_next];
  quarantine[quarantine_next] = comm;
  quarantine_next = (quarantine_next + 1) % QUARANTINE;
  pthread_mutex_unlock(&quarantine_lock);
  if (!old) return;
  free(old->cards);
  free(old->peers);
  free(old->local_ranks);
  free(old->algo);
  free(old->proto);
  free(old->algo_spec);
  collie_sched_cache_free(old);
  collie_comm_free_scratch(old);
  pthread_mutex_destroy(&old->err_lock);
  free(old);
}

void collie_comm_free(collie_comm_t *comm) {
  collie_shm_destroy(comm);
  collie_comm_free_scratch(comm);
  quarantine_comm(comm);
}

/* Leaves together with the other ranks (at most exec_timeout), then releases everything.
 * A rank that gives up waiting tells the others why (collie_comm_fail), not only its log:
 * a rank still waiting in an operation this rank never made (or completed at once, e.g.
 * with count 0 here only) otherwise saw the connection close and reported that this rank
 * "died or closed its connection without destroying the communicator". */
static void depart_and_release(collie_comm_t *comm) {
  if (!atomic_load(&comm->failed)) {
    int64_t deadline = collie_now_ns() + (int64_t)comm->exec_timeout_ms * 1000000;
    if (collie_ctl_depart(comm, deadline) != COLLIE_SUCCESS)
      collie_comm_fail(comm, COLLIE_ERR_REMOTE, false,
                       "rank %d destroyed its communicator after issuing %llu collective(s) on it, and gave up "
                       "waiting %d s for the other ranks to destroy theirs; a rank still in an operation waits "
                       "for a call rank %d did not make (refused with an argument error on some ranks only, "
                       "a count of 0 on some ranks only, or operations in a different order): every rank must "
                       "issue the same operations before destroying",
                       comm->rank, (unsigned long long)comm->coll_seq, comm->exec_timeout_ms / 1000, comm->rank);
  }
  collie_comm_teardown(comm);
  collie_comm_release(comm);
}

/* The departures under way (one thread each, see collie_comm_destroy); the process waits
 * for them when it exits, so that a rank still leaves only once the others have. */
static pthread_mutex_t departing_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t departing_cv = PTHREAD_COND_INITIALIZER;
static int departing;
static pthread_once_t departing_once = PTHREAD_ONCE_INIT;

static void departing_add(int n) {
  pthread_mutex_lock(&departing_lock);
  departing += n;
  pthread_cond_broadcast(&departing_cv);
  pthread_mutex_unlock(&departing_lock);
}

static void wait_departures(void) { /* atexit: each is bounded by its exec timeout */
  pthread_mutex_lock(&departing_lock);
  while (departing > 0) pthread_cond_wait(&departing_cv, &departing_lock);
  pthread_mutex_unlock(&departing_lock);
}

/* A forked child has none of its parent's departure threads (nor its communicators). The
 * forking thread holds the lock across fork, so the child's copy is consistent. */
static void departing_before_fork(void) { pthread_mutex_lock(&departing_lock); }
static void departing_in_parent(void) { pthread_mutex_unlock(&departing_lock); }
static void departing_in_child(void) {
  departing = 0;
  pthread_mutex_unlock(&departing_lock);
}

static void departing_register(void) {
  atexit(wait_departures);
  pthread_atfork(departing_before_fork, departing_in_parent, departing_in_child);
}

static void *depart_main(void *p) {
  depart_and_release(p);
  departing_add(-1);
  return NULL;
}

collie_result_t collie_comm_destroy(collie_comm_t *comm) {
  collie_result_t res = collie_comm_check_handle(comm, "collie_comm_destroy");
  if (res) return res;
  if (atomic_exchange(&comm->destroyed, 1)) {
    collie_comm_end_abort(comm); /* an abort from a signal handler left half done */
    return collie_error(comm, COLLIE_ERR_INVALID_USAGE,
                        "collie_comm_destroy on rank %d: the communicator was already destroyed or aborted; a "
                        "communicator is destroyed or aborted once",
                        comm->rank);
  }
  /* Finish what was issued here; the resources are released either way, and a failure of
   * the communicator itself was already returned by the operations it failed. */
  res = collie_comm_synchronize_internal(comm);
  (void)res;
  /* Then leave together, so that nobody's last operation fails because a rank left, but
   * in a thread of its own: waiting here for every rank to destroy this communicator made
   * ranks that destroy several in different orders wait for each other, each destroy
   * until COLLIE_EXEC_TIMEOUT (2 ranks, 6 communicators in opposite orders, timeout 2 s:
   * 6 s; 100 with the default 600 s: hours). */
  atomic_store(&comm->handle_gone, 1);
  if (!atomic_load(&comm->failed) && comm->nranks > 1) {
    pthread_once(&departing_once, departing_register);
    departing_add(1);
    pthread_t t;
    if (collie_thread_start(&t, depart_main, comm) == 0) {
      pthread_detach(t);
      return COLLIE_SUCCESS;
    }
    departing_add(-1);
  }
  depart_and_release(comm);
  return COLLIE_SUCCESS;
}

enum { ABORT_LOCK_MS = 100 };

collie_result_t collie_comm_abort(collie_comm_t *comm) {
  collie_result_t res = collie_comm_check_handle(comm, "collie_comm_abort");
  if (res) return res;
  if (atomic_load(&comm->handle_gone)) /* destroyed, still departing in its own thread */
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE,
                        "collie_comm_abort on rank %d: the communicator was already destroyed; its handle may not "
                        "be used again (create a new communicator)",
                        comm->rank);
  if (atomic_exchange(&comm->aborted, 1)) return COLLIE_SUCCESS;
  const bool destroying = atomic_exchange(&comm->destroyed, 1);
  collie_comm_fail(comm, COLLIE_ERR_ABORTED, true,
                   "rank %d: the communicator was aborted (collie_comm_abort); its pending operations did not "
                   "complete",
                   comm->rank);
  /* A collie_comm_destroy in another thread (waiting for operations or for the other ranks)
   * now returns at once, and it tears down and drops the handle: both doing it tore down
   * twice and freed the communicator under the destroy. */
  if (destroying) return COLLIE_SUCCESS;
  /* The other ranks are told, best effort (not while another thread sends on the control
   * channel): they reported that this rank "died or closed its connection without
   * destroying the communicator". */
  char msg[256];
  snprintf(msg, sizeof(msg),
           "rank %d aborted its communicator (collie_comm_abort); every rank now fails its pending and next "
           "operations on it: destroy it, and create a new one to go on",
           comm->rank);
  collie_ctl_try_send_fail(comm, COLLIE_ERR_REMOTE, msg);
  /* Called from a signal handler that interrupted this thread inside the library, with the
   * lock held (or just taken, its owner not yet written): the teardown would wait for it
   * forever (it hung so, 9 times in 12 with an abort from SIGALRM during a loop of
   * all-reduces). The failure is set, so the interrupted call fails when the handler
   * returns; its wait, or the next call, ends the abort (collie_comm_end_abort). A lock
   * another thread holds for long is treated alike: deferring is always safe. */
  if (collie_lock_mine(&comm->lock) || !collie_lock_within(&comm->lock, ABORT_LOCK_MS)) {
    atomic_store(&comm->abort_deferred, 1);
    return COLLIE_SUCCESS;
  }
  collie_unlock(&comm->lock);
  collie_comm_teardown(comm);
  collie_comm_release(comm);
  return COLLIE_SUCCESS;
}

void collie_comm_end_abort(collie_comm_t *comm) {
  if (!atomic_load(&comm->abort_deferred) || !atomic_exchange(&comm->abort_deferred, 0)) return;
  collie_comm_teardown(comm);
  collie_comm_release(comm);
}
