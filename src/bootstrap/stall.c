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
 * rank 0, once per operation. Rank 0 keeps each rank's last report and compares it with
 * the reports of the same operation number: every rank's operation #k is the same call
 * when the program is right (v-collectives carry the total count, the same everywhere),
 * so a difference is a mismatch for certain, whatever the timing. Stalls of correct
 * programs (a rank computing for a minute before it joins) cost one small frame per rank
 * and operation, and find nothing. */
#include <stdio.h>
#include <stdlib.h>

#include "bootstrap/control.h"
#include "core/comm_internal.h"
#include "core/error.h"

void collie_ctl_note_stall(collie_comm_t *comm, int from, const collie_wire_hdr_t *call) {
  collie_control_t *c = comm->ctl;
  if (from < 0 || from >= comm->nranks || !call->seq) return;
  collie_wire_hdr_t theirs;
  int other = -1;
  pthread_mutex_lock(&c->m);
  /* Allocated at the first stall: a diagnosis, so without memory it is simply skipped
   * (the exec timeout still ends the wait). seq 0 marks a rank with no report. */
  if (!c->stalls) c->stalls = calloc((size_t)comm->nranks, sizeof(*c->stalls));
  if (c->stalls) {
    c->stalls[from] = *call;
    for (int r = 0; r < comm->nranks && other < 0; r++)
      if (r != from && c->stalls[r].seq == call->seq && !collie_wire_same_call(&c->stalls[r], call)) {
        other = r;
        theirs = c->stalls[r];
      }
  }
  pthread_mutex_unlock(&c->m);
  if (other < 0) return;
  char pa[160], pb[160], a[160], b[160];
  collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                   "%s called %s as operation #%llu while %s called %s as operation #%llu, and both wait in it "
                   "without progress (found by rank 0 comparing the calls of stalled ranks); every rank must "
                   "call the same collectives with matching arguments, the same root among them, in the same "
                   "order",
                   collie_peer_desc(comm, from, pa, sizeof(pa)), collie_wire_describe_call(call, a, sizeof(a)),
                   (unsigned long long)call->seq, collie_peer_desc(comm, other, pb, sizeof(pb)),
                   collie_wire_describe_call(&theirs, b, sizeof(b)), (unsigned long long)theirs.seq);
}
