/* Ending communicators: destroy (orderly, bounded by the timeout), abort (at once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/control.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/own_waits.h"
#include "core/progress_others.h"
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
  /* first: another communicator's watchdog describing this one reads its control state,
   * which goes below (the list's lock keeps it out from here on) */
  collie_own_waits_remove(comm);
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
  /* The shared segments go now, unless a thread is inside a wait on this communicator: it
   * may be about to sleep on its doorbell, and the last reference unmaps them then
   * (collie_comm_free). Requests that nobody waits for hold references too, and kept every
   * segment of every communicator destroyed with one (about 1 MB each) mapped for good;
   * their operations are done now, and a later wait for one touches no segment. A waiter
   * counts itself before its first yield or sleep, the only parts of a wait that read the
   * segments once the operations are done, and then looks at its request again
   * (collie_idle): either this look at the count sees it, or it sees its operation done.
   * The fence orders the operations' completion above before this look. */
  atomic_thread_fence(memory_order_seq_cst);
  collie_lock(&comm->lock);
  if (atomic_load(&comm->waiters) == 0) collie_shm_destroy(comm);
  collie_unlock(&comm->lock);
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
  free(old->group_of);
  free(old->algo);
  free(old->proto);
  free(old->algo_spec);
  collie_sched_cache_free(old);
  collie_comm_free_scratch(old);
  pthread_mutex_destroy(&old->err_lock);
  free(old);
}

void collie_comm_free(collie_comm_t *comm) {
  collie_own_waits_remove(comm); /* already, after a teardown */
  collie_shm_destroy(comm);
  collie_comm_free_scratch(comm);
  quarantine_comm(comm);
}

/* Once every rank has left, their goodbyes say how many messages each sent this rank and
 * received from it. A difference means calls that did not match but raised no error: a
 * collective with a count of 0 on some ranks only (it completes at once, and the message
 * another rank sent it stays unread), one rank calling a reduce where the others
 * broadcast, a small send without its receive (all returned success, and the data was lost
 * without a word). The destroy still releases everything; it returns COLLIE_ERR_MISMATCH
 * with a sentence that names the pair. */
static collie_result_t unmatched_messages(collie_comm_t *comm) {
  char msg[768] = "", pd[160];
  collie_lock(&comm->lock);
  for (int p = 0; p < comm->nranks && !msg[0] && !atomic_load(&comm->failed); p++) {
    const collie_peer_t *peer = &comm->peers[p];
    if (p == comm->rank || !peer->gone) continue;
    const bool unread = peer->gone_sent > peer->recv_seq;
    if (!unread && peer->send_seq <= peer->gone_recvd) continue;
    collie_peer_desc(comm, p, pd, sizeof(pd));
    const unsigned long long sent = unread ? peer->gone_sent : peer->send_seq,
                             got = unread ? peer->recv_seq : peer->gone_recvd;
    snprintf(msg, sizeof(msg),
             "collie_comm_destroy on rank %d: %s %s %llu message(s) that %s never received (%llu sent, %llu "
             "received): some calls did not match between the two ranks although they returned success (a "
             "collective with a count of 0 on some ranks only, a rank calling another collective, or a send "
             "without its receive); make every rank issue the same calls. The communicator is destroyed",
             comm->rank, unread ? pd : "this rank", unread ? "sent this rank" : "sent", sent - got,
             unread ? "this rank" : pd, sent, got);
  }
  collie_unlock(&comm->lock);
  if (!msg[0]) return COLLIE_SUCCESS;
  COLLIE_WARN(COLLIE_SUB_COLL, comm->rank, "%s", msg);
  return collie_error(NULL, COLLIE_ERR_MISMATCH, "%s", msg);
}

/* Leaves together with the other ranks (at most exec_timeout), reports messages never
 * received (unmatched_messages), then releases everything. A rank that gives up waiting
 * tells the others why (collie_comm_fail), not only its log:
 * a rank still waiting in an operation this rank never made (or completed at once, e.g.
 * with count 0 here only) otherwise saw the connection close and reported that this rank
 * "died or closed its connection without destroying the communicator". */
static collie_result_t depart_and_release(collie_comm_t *comm) {
  collie_result_t res = COLLIE_SUCCESS;
  if (!atomic_load(&comm->failed)) {
    int64_t deadline = collie_now_ns() + (int64_t)comm->exec_timeout_ms * 1000000;
    collie_result_t left = collie_ctl_depart(comm, deadline);
    if (left == COLLIE_SUCCESS) res = unmatched_messages(comm);
    else
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
  return res;
}

collie_result_t collie_comm_destroy(collie_comm_t *comm) {
  collie_result_t res = collie_comm_check_handle(comm, "collie_comm_destroy");
  if (res) return res;
  collie_others_forget(comm);
  if (atomic_exchange(&comm->destroyed, 1)) {
    collie_comm_end_abort(comm); /* an abort from a signal handler left half done */
    return collie_error(comm, COLLIE_ERR_INVALID_USAGE,
                        "collie_comm_destroy on rank %d: the communicator was already destroyed or aborted; a "
                        "communicator is destroyed or aborted once",
                        comm->rank);
  }
  /* Finish what was issued here; the resources are released either way, and a failure of
   * the communicator itself was already returned by the operations it failed, except a
   * mismatch found only now: a small reduce's other ranks compare their calls with the
   * root's after returning (algo/native/shm_native.c), and ranks that each named the other
   * as the root (so that none reduced) learn it here at the latest. */
  const bool failed_before = atomic_load(&comm->failed) != 0;
  char found[sizeof(comm->fail_msg)] = "";
  res = collie_comm_synchronize_internal(comm);
  if (!failed_before && res == COLLIE_ERR_MISMATCH) snprintf(found, sizeof(found), "%s", comm->fail_msg);
  /* Then leave together, here: nobody's last operation fails because a rank left. Leaving
   * in a thread of its own let ranks destroy several communicators in different orders,
   * but a program that ends with _exit() right after (collie-tune's and the perf tools'
   * forked ranks, Python's os._exit) killed that thread, and its peers, still in their
   * last operation, saw it leave and failed ("rank 1 died ...": tune_end_to_end failed 5
   * runs in 6). Ranks destroy their communicators in the same order. An abort from another
   * thread meanwhile ends the wait (the communicator fails). */
  res = depart_and_release(comm);
  return found[0] ? collie_error(NULL, COLLIE_ERR_MISMATCH, "%s", found) : res;
}

enum { ABORT_LOCK_MS = 100 };

void collie_abort_notice(const collie_comm_t *comm, char *buf, size_t len) {
  char me[160];
  /* with its pid and host: on a split communicator the rank number alone is hard to trace */
  snprintf(buf, len,
           "%s aborted its communicator (collie_comm_abort); every rank now fails its pending and next "
           "operations on it: destroy it, and create a new one to go on",
           collie_peer_desc(comm, comm->rank, me, sizeof(me)));
}

collie_result_t collie_comm_abort(collie_comm_t *comm) {
  collie_result_t res = collie_comm_check_handle(comm, "collie_comm_abort");
  if (res) return res;
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
  char msg[512];
  collie_abort_notice(comm, msg, sizeof(msg));
  collie_shm_post_failure(comm, COLLIE_ERR_REMOTE, msg);
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
