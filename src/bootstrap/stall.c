/* Calls that disagree where no message shows it. Ranks that call different collectives,
 * or the same one with different roots, usually meet a header or a shared-memory key that
 * differs and fail at once with COLLIE_ERR_MISMATCH. But some such pairs never exchange
 * anything: a reduce whose ranks name different roots (each root waits for a child that
 * sends to the other tree), two ranks that both believe they are a large broadcast's root
 * (each waits for the other to receive). They waited until COLLIE_EXEC_TIMEOUT (10
 * minutes by default), whose sentence could only guess at the cause.
 *
 * So a rank whose oldest pending collective has made no progress for a while
 * (core/wait.c: 2 s, or half the exec timeout if shorter) sends that call's fingerprint to
 * rank 0 (again every interval, below). Rank 0 compares it with the first report of the
 * same operation number: every rank's operation #k is the same call when the program is
 * right (v-collectives carry the total count, the same everywhere), so a difference is a
 * mismatch for certain, whatever the timing.
 *
 * Calls can also agree and still disagree on what moves: an all-to-allv whose rank 0 sends
 * rank 1 nothing while rank 1 expects data from it. When the stalled rank waits for a
 * message, its report names the peer and the message's position in the pair's ordered
 * stream, and rank 0 asks that peer. A schedule posts every message of an operation when
 * it is issued, so a peer that has issued the operation and has posted nothing at that
 * position never will within it: a mismatch for certain too (if a later call of the peer
 * sends there, the stalled rank would read the wrong operation's data).
 *
 * A stalled rank reports again every interval, since the peer may not have issued the
 * operation yet. Stalls of correct programs (a rank computing for a minute before it
 * joins) cost a small frame per rank and interval, and find nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "bootstrap/control.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/own_waits.h"
#include "sched/executor.h"

/* Both calls of one operation number that differ: the sentence rank 0 and the peer give. */
static void fail_calls_differ(collie_comm_t *comm, int ra, const collie_wire_hdr_t *a, int rb,
                              const collie_wire_hdr_t *b) {
  char pa[160], pb[160], da[160], db[160];
  collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                   "%s called %s as operation #%llu while %s called %s as operation #%llu, and both wait in it "
                   "without progress (found by rank 0 comparing the calls of stalled ranks); every rank must "
                   "call the same collectives with matching arguments, the same root among them, in the same "
                   "order",
                   collie_peer_desc(comm, ra, pa, sizeof(pa)), collie_wire_describe_call(a, da, sizeof(da)),
                   (unsigned long long)a->seq, collie_peer_desc(comm, rb, pb, sizeof(pb)),
                   collie_wire_describe_call(b, db, sizeof(db)), (unsigned long long)b->seq);
}

void collie_ctl_note_stall(collie_comm_t *comm, int from, const collie_stall_t *st) {
  collie_control_t *c = comm->ctl;
  const collie_wire_hdr_t *call = &st->call;
  if (from < 0 || from >= comm->nranks) return;
  if (st->dir == COLLIE_STALL_ASK) { /* a point-to-point wait: only the question to the peer */
    if (st->peer < 0 || st->peer >= comm->nranks || st->peer == from) return;
    if (st->peer == 0) collie_ctl_answer_waits(comm, from);
    else collie_ctl_ask_owed(comm, st->peer, from, st);
    return;
  }
  if (!call->seq) return;
  collie_wire_hdr_t theirs;
  int other = -1;
  pthread_mutex_lock(&c->m);
  /* The first report of each recent operation number, in a ring: a later report of the
   * same number that differs from it is a mismatch, found in O(1) per report (with
   * thousands of ranks stalled behind a slow one, every rank reports every interval).
   * Allocated at the first stall: a diagnosis, so without memory it is simply skipped
   * (the exec timeout still ends the wait). */
  if (!c->stalls) c->stalls = calloc(COLLIE_STALL_RING, sizeof(*c->stalls));
  if (c->stalls) {
    collie_wire_hdr_t *first = &c->stalls[call->seq % COLLIE_STALL_RING];
    if (first->seq != call->seq) {
      *first = *call;
      first->src_rank = from;
    } else if (first->src_rank != from && !collie_wire_same_call(first, call)) {
      other = first->src_rank;
      theirs = *first;
    }
  }
  pthread_mutex_unlock(&c->m);
  if (other >= 0) {
    fail_calls_differ(comm, from, call, other, &theirs);
  } else if (st->peer >= 0 && st->peer < comm->nranks && st->peer != from) {
    /* from != 0 when the peer is rank 0: this is its watchdog, and comm->lock is free */
    if (st->peer == 0) {
      collie_ctl_check_owed(comm, from, st);
      collie_ctl_answer_waits(comm, from);
    } else {
      collie_ctl_ask_owed(comm, st->peer, from, st);
    }
  }
}

void collie_ctl_check_owed(collie_comm_t *comm, int asker, const collie_stall_t *st) {
  if (asker < 0 || asker >= comm->nranks || asker == comm->rank) return;
  collie_lock(&comm->lock);
  const collie_peer_t *peer = &comm->peers[asker];
  /* SHM: the rounds this rank has numbered; it enters round pos only if it numbered it */
  const uint64_t posted = st->dir == COLLIE_STALL_SHM    ? comm->native_rounds
                          : st->dir == COLLIE_STALL_RECV ? peer->send_seq
                                                         : peer->recv_seq;
  const bool owed = !atomic_load(&comm->failed) && comm->coll_seq >= st->call.seq && posted <= st->pos &&
                    (st->dir == COLLIE_STALL_RECV || st->dir == COLLIE_STALL_SEND || st->dir == COLLIE_STALL_SHM);
  /* This rank's own call of that number, while it is pending: when the calls differ (a
   * reduce with another root), that is the better sentence. */
  collie_wire_hdr_t mine;
  bool differ = false;
  for (const collie_op_t *op = comm->ops; op && owed; op = op->next)
    if (op->seq == st->call.seq && op->coll != COLLIE_COLL_SEND && op->coll != COLLIE_COLL_RECV) {
      collie_op_fingerprint(op, comm->rank, &mine);
      differ = !collie_wire_same_call(&mine, &st->call);
      break;
    }
  collie_unlock(&comm->lock);
  if (!owed) return;
  if (differ) {
    fail_calls_differ(comm, asker, &st->call, comm->rank, &mine);
    return;
  }
  char pa[160], pb[160];
  const char *coll = collie_coll_name((collie_coll_t)st->call.coll);
  const int c = st->call.coll;
  const char *hint = c == COLLIE_COLL_ALLTOALLV
                         ? "; in an all-to-allv, rank i's sendcounts[j] must equal rank j's recvcounts[i]"
                     : c == COLLIE_COLL_BROADCAST || c == COLLIE_COLL_REDUCE || c == COLLIE_COLL_SCATTER ||
                             c == COLLIE_COLL_GATHER
                         ? "; check that every rank passes the same root"
                         : "";
  if (st->dir == COLLIE_STALL_SHM)
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "%s waits in %s #%llu for %s to reach a round of that shared-memory collective, which that "
                     "rank has issued without reaching it (it completed it at once, as with a count of 0, ran it "
                     "as messages, or cut it into fewer rounds): every rank must call the same collectives with "
                     "the same counts%s",
                     collie_peer_desc(comm, asker, pa, sizeof(pa)), coll, (unsigned long long)st->call.seq,
                     collie_peer_desc(comm, comm->rank, pb, sizeof(pb)), hint);
  else if (st->dir == COLLIE_STALL_RECV)
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "%s waits in %s #%llu for a message from %s, which has issued that operation without sending "
                     "it one there: the ranks' calls disagree on what moves between them%s",
                     collie_peer_desc(comm, asker, pa, sizeof(pa)), coll, (unsigned long long)st->call.seq,
                     collie_peer_desc(comm, comm->rank, pb, sizeof(pb)), hint);
  else
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "%s waits in %s #%llu for %s to receive a message, which that rank has issued the operation "
                     "without expecting: the ranks' calls disagree on what moves between them%s",
                     collie_peer_desc(comm, asker, pa, sizeof(pa)), coll, (unsigned long long)st->call.seq,
                     collie_peer_desc(comm, comm->rank, pb, sizeof(pb)), hint);
}

void collie_ctl_answer_waits(collie_comm_t *comm, int asker) {
  if (asker < 0 || asker >= comm->nranks || asker == comm->rank || !collie_only_rank_here(comm, comm->rank) ||
      atomic_load(&comm->failed))
    return;
  char text[COLLIE_WAITS_TEXT], end[COLLIE_WAITS_TEXT];
  collie_own_waits_describe(comm, asker, text, end);
  collie_ctl_send_waits(comm, asker, text, end);
}
