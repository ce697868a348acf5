/* Barrier algorithms. */
#include "algo/algo_util.h"

/* Dissemination barrier (Hensgen, Finkel and Manber).
 *
 * In round k = 0 .. ceil(log2 p) - 1 every rank sends a zero-byte message to
 * (rank + 2^k) % p and receives one from (rank - 2^k + p) % p. After round k a rank has
 * heard, directly or through others, from the 2^(k+1) - 1 ranks before it, so after the
 * last round it has heard from all of them: nobody leaves before everyone has arrived.
 * Works for every p, not only powers of two.
 *
 * Within a round the send and the receive are unordered (a receive that waited for its
 * own send would deadlock under rendezvous); each round waits for both steps of the
 * previous one.
 *
 * Cost: ceil(log2 p) * alpha. */
COLLIE_ALGO_DECL(collie_dissemination_barrier) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const collie_bufref_t nothing = collie_ref(COLLIE_BUF_SCRATCH, 0); /* zero bytes */
  uint32_t prev_send = COLLIE_NO_STEP, prev_recv = COLLIE_NO_STEP;
  for (int64_t d = 1; d < n; d <<= 1) {
    int to = (int)((r + d) % n), from = (int)((r - d + n) % n);
    uint32_t snd = collie_sched_send(s, to, nothing, 0, COLLIE_DEP2(prev_send, prev_recv));
    uint32_t rcv = collie_sched_recv(s, from, nothing, 0, COLLIE_DEP2(prev_send, prev_recv));
    prev_send = snd;
    prev_recv = rcv;
  }
  return au_finish(s);
}
