/* Ring algorithms: every rank sends only to its right neighbour (rank + 1) and receives
 * only from its left (rank - 1), so each link carries the same load and the bandwidth
 * term is optimal; the price is p - 1 (or 2(p - 1)) rounds of latency.
 *
 * Costs use p ranks, alpha (per message), beta (per byte sent), gamma (per byte reduced)
 * and n bytes: the whole vector (allreduce), a rank's whole receive buffer (allgather) or
 * send buffer (reduce_scatter). Blocks are split into chunks of chunk_bytes (64 KiB by
 * default) sent as separate messages, so a chunk is forwarded (and reduced) while the
 * next one is still on the wire; with c chunks per block the alpha terms grow c-fold and
 * the pipeline hides all but one chunk's worth of reduction and copy time.
 *
 * Messages are posted round by round (all chunks of round k before round k + 1; the
 * allreduce interleaves two, see AR_INTERLEAVE_LAG): on a stream transport a message
 * waits for those before it on the same link, and round k's chunks are ready before
 * round k + 1's. Blocks and chunks of zero elements are not sent; both ends know every
 * length. */
#include <stdlib.h>

#include "algo/algo_util.h"

/* ---- allreduce ------------------------------------------------------------------------ */

/* The allreduce's last reduce-scatter round and its allgather round 0 are interleaved on
 * the link, two chunks apart: the chunk just reduced is sent on while it is still in
 * cache, instead of after the whole round (forced TCP, 2 ranks, 64 MiB: each byte is
 * read once from memory instead of twice). Both ends of a link follow the same order. */
#define AR_INTERLEAVE_LAG 2

/* One ring allreduce being built (au_ring_allreduce). */
typedef struct {
  collie_sched_t *s;
  const collie_coll_args_t *a;
  const au_ring_t *g;
  uint64_t base, len, ce, maxch;
  /* prev[j]: the last receive of chunk j (the block forwarded next round);
   * rs_send[k * maxch + j]: reduce-scatter round k's send of chunk j, which the
   * allgather's receive of the same bytes in round k must follow. */
  uint32_t *prev, *rs_send;
  au_deps_t *writes;
} ar_build_t;

/* Allgather round k, chunk j: member m sends block m+1-k and receives block m-k. */
static void ag_round(ar_build_t *b, int k, uint64_t j) {
  const au_ring_t *g = b->g;
  const int right = g->rank[(g->me + 1) % g->n], left = g->rank[(g->me + g->n - 1) % g->n];
  const uint64_t es = b->a->elem_size, ce = b->ce;
  const int sb = au_mod(g->me + 1 - k, g->n), rb = au_mod(g->me - k, g->n);
  const uint64_t soff = b->base + au_block_start(b->len, g->n, sb), slen = au_block_len(b->len, g->n, sb);
  const uint64_t roff = b->base + au_block_start(b->len, g->n, rb), rlen = au_block_len(b->len, g->n, rb);
  if (j * ce < slen)
    collie_sched_send(b->s, right, au_at(COLLIE_BUF_RECV, soff + j * ce, es), au_chunk_len(slen, ce, j) * es,
                      COLLIE_DEP1(b->prev[j]));
  /* Block m-k was sent in reduce-scatter round k (in place, from these very bytes). */
  if (j * ce < rlen) {
    b->prev[j] = collie_sched_recv(b->s, left, au_at(COLLIE_BUF_RECV, roff + j * ce, es),
                                   au_chunk_len(rlen, ce, j) * es, COLLIE_DEP1(b->rs_send[(size_t)k * b->maxch + j]));
    if (b->writes) au_deps_add(b->writes, b->prev[j]);
  }
}

/* Ring allreduce: a ring reduce-scatter, then a ring allgather, on p near-equal blocks.
 *
 * Reduce-scatter round k (0 <= k < p-1): rank r sends block r-k and receives block r-k-1,
 * folding it into its own contribution with RECV_REDUCE (dst = local op incoming), so
 * block b is reduced in one fixed order along the ring, b, b+1, ..., b-1, and only once:
 * after p-1 rounds rank r holds block r+1 complete. Allgather round k: rank r sends block
 * r+1-k and receives block r-k. Every rank ends with bitwise identical results because
 * each block is reduced on one rank and only copied from there. Out of place the first
 * reduction of a block reads the send buffer and writes the receive buffer, so no copies
 * are needed; in place it reads and writes the receive buffer. (Here over the ring g, on
 * the range [base, base + len): the whole communicator and vector, or hier.c's phase
 * between hosts.)
 *
 * Cost: 2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma (times c chunks on alpha). */
collie_result_t au_ring_allreduce(collie_sched_t *s, const collie_coll_args_t *a, const au_ring_t *g, uint64_t base,
                                  uint64_t len, collie_buf_t in, uint32_t after, au_deps_t *writes) {
  const int n = g->n, right = g->rank[(g->me + 1) % n], left = g->rank[(g->me + n - 1) % n];
  const uint64_t es = a->elem_size, ce = au_chunk_elems(a);
  ar_build_t b = {s, a, g, base, len, ce, au_div_up(au_block_len(len, n, 0), ce), NULL, NULL, writes};
  b.prev = malloc((size_t)b.maxch * sizeof *b.prev + 1);
  b.rs_send = malloc((size_t)(n - 1) * b.maxch * sizeof *b.rs_send + 1);
  if (!b.prev || !b.rs_send) {
    free(b.prev);
    free(b.rs_send);
    return COLLIE_ERR_INTERNAL;
  }
  for (uint64_t j = 0; j < b.maxch; j++) b.prev[j] = after;

  for (int k = 0; k < n - 1; k++) { /* reduce-scatter */
    const int sb = au_mod(g->me - k, n), rb = au_mod(g->me - k - 1, n);
    const uint64_t soff = base + au_block_start(len, n, sb), slen = au_block_len(len, n, sb);
    const uint64_t roff = base + au_block_start(len, n, rb), rlen = au_block_len(len, n, rb);
    /* Round 0 sends the raw contribution; later rounds forward last round's partial sum. */
    const collie_buf_t sbuf = k == 0 ? in : COLLIE_BUF_RECV;
    /* The last round's chunk j, once reduced, is allgather round 0's chunk j: it goes out
     * AR_INTERLEAVE_LAG chunks later (see ag_round), while it is still in cache. */
    const bool last = k == n - 2;
    for (uint64_t j = 0; j < b.maxch + (last ? AR_INTERLEAVE_LAG : 0); j++) {
      if (j < b.maxch && j * ce < slen)
        b.rs_send[(size_t)k * b.maxch + j] = collie_sched_send(s, right, au_at(sbuf, soff + j * ce, es),
                                                               au_chunk_len(slen, ce, j) * es, COLLIE_DEP1(b.prev[j]));
      if (j < b.maxch && j * ce < rlen) {
        b.prev[j] = collie_sched_recv_reduce(s, left, au_at(in, roff + j * ce, es),
                                             au_at(COLLIE_BUF_RECV, roff + j * ce, es), au_chunk_len(rlen, ce, j) * es,
                                             COLLIE_DEP1(after));
        if (writes) au_deps_add(writes, b.prev[j]);
      }
      if (last && j >= AR_INTERLEAVE_LAG) ag_round(&b, 0, j - AR_INTERLEAVE_LAG);
    }
  }
  for (int k = 1; k < n - 1; k++) /* allgather */
    for (uint64_t j = 0; j < b.maxch; j++) ag_round(&b, k, j);
  free(b.prev);
  free(b.rs_send);
  return COLLIE_SUCCESS;
}

/* The ring of all ranks over the whole vector. */
COLLIE_ALGO_DECL(collie_ring_allreduce) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks;
  if (args->count == 0) return COLLIE_SUCCESS;
  if (n == 1) return au_copy_only(args, s, args->count);
  int *ranks = malloc(sizeof(int) * (size_t)n);
  if (!ranks) return COLLIE_ERR_INTERNAL;
  for (int r = 0; r < n; r++) ranks[r] = r;
  const au_ring_t all = {n, args->rank, ranks};
  collie_result_t res = au_ring_allreduce(s, args, &all, 0, args->count,
                                          args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND, COLLIE_NO_STEP, NULL);
  free(ranks);
  return res ? res : au_finish(s);
}

/* ---- allgather ------------------------------------------------------------------------ */

/* Ring allgather (and allgatherv): round k (0 <= k < p-1) rank r sends block r-k to the
 * right and receives block r-k-1 from the left, straight into its place in the receive
 * buffer. Round 0 sends from the send buffer, so it does not wait for the local copy of
 * the rank's own block. Blocks of allgatherv may have any sizes and displacements.
 *
 * Cost: (p-1) alpha + (p-1)/p n beta (equal blocks; with v-blocks the largest block
 * bounds each round). */
COLLIE_ALGO_DECL(collie_ring_allgather) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size;
  au_blocks_t b;
  if (!au_blocks_init(&b, args)) return COLLIE_ERR_INTERNAL;
  const uint64_t ce = au_chunk_elems(args), maxch = au_div_up(b.maxlen, ce);
  uint32_t *prev = malloc(((size_t)maxch + 1) * sizeof *prev);
  if (!prev) {
    au_blocks_free(&b);
    return COLLIE_ERR_INTERNAL;
  }
  for (uint64_t j = 0; j < maxch; j++) prev[j] = COLLIE_NO_STEP;
  /* In place the send buffer is the rank's own block of the receive buffer. */
  if (!args->in_place && b.len[r])
    collie_sched_copy(s, au_at(COLLIE_BUF_SEND, 0, es), au_at(COLLIE_BUF_RECV, b.off[r], es), b.len[r] * es,
                      COLLIE_NODEPS);
  for (int k = 0; k < n - 1; k++) {
    const int sb = au_mod(r - k, n), rb = au_mod(r - k - 1, n);
    for (uint64_t j = 0; j * ce < b.len[sb]; j++) {
      collie_bufref_t src =
          k == 0 ? au_at(COLLIE_BUF_SEND, j * ce, es) : au_at(COLLIE_BUF_RECV, b.off[sb] + j * ce, es);
      collie_sched_send(s, (r + 1) % n, src, au_chunk_len(b.len[sb], ce, j) * es, COLLIE_DEP1(prev[j]));
    }
    for (uint64_t j = 0; j * ce < b.len[rb]; j++)
      prev[j] = collie_sched_recv(s, (r + n - 1) % n, au_at(COLLIE_BUF_RECV, b.off[rb] + j * ce, es),
                                  au_chunk_len(b.len[rb], ce, j) * es, COLLIE_NODEPS);
  }
  free(prev);
  au_blocks_free(&b);
  return au_finish(s);
}

/* ---- reduce_scatter ------------------------------------------------------------------- */

/* Where partial sums of round parity p, chunk j wait to be forwarded (see below). */
typedef struct {
  bool in_recv;    /* the receive buffer stages the final round's parity */
  int last_parity; /* (p - 2) % 2 */
  uint64_t maxlen, ce, es;
} stages_t;

static collie_bufref_t stage(const stages_t *g, int p, uint64_t j) {
  if (g->in_recv && p == g->last_parity) return au_at(COLLIE_BUF_RECV, j * g->ce, g->es);
  return au_at(COLLIE_BUF_SCRATCH, (g->in_recv ? 0 : (uint64_t)p * g->maxlen) + j * g->ce, g->es);
}

/* Ring reduce_scatter (and reduce_scatterv): round k (0 <= k < p-1) rank r sends the
 * partial sum of block r-k-1 to the right and receives block r-k-2 from the left, folding
 * in its own contribution from the send buffer. Block b travels b+1, b+2, ..., b and is
 * complete at rank b in the last round, whose reduction writes the receive buffer.
 *
 * Partial sums in flight need room: two staging areas of one block each, alternating by
 * round, so round k's receive of chunk j waits only for round k-1's forwarding of the
 * chunk staged there two rounds before (fewer slots than one round's chunks plus one
 * could deadlock the ring). Out of place, when every block fits the receive buffer, the
 * receive buffer serves as the staging area of the final round's parity, so the scratch
 * holds one block; otherwise (in place, the receive buffer is the rank's own input) two.
 *
 * Cost: (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma (n: the whole send buffer). */
COLLIE_ALGO_DECL(collie_ring_reduce_scatter) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size;
  au_blocks_t b;
  if (!au_blocks_init(&b, args)) return COLLIE_ERR_INTERNAL;
  if (n == 1) {
    collie_result_t rc = au_copy_only(args, s, b.len[0]);
    au_blocks_free(&b);
    return rc;
  }
  const uint64_t ce = au_chunk_elems(args), maxch = au_div_up(b.maxlen, ce);
  const int last_parity = (n - 2) % 2;
  const bool recv_stages = !args->in_place && b.maxlen <= b.len[r];
  s->scratch_bytes = (recv_stages ? 1 : 2) * b.maxlen * es;
  /* prev[j]: last round's receive of chunk j; fwd[p * maxch + j]: the last send out of
   * staging area p, chunk j (the area may be rewritten once it has left). */
  uint32_t *prev = malloc(3 * ((size_t)maxch + 1) * sizeof *prev);
  if (!prev) {
    au_blocks_free(&b);
    return COLLIE_ERR_INTERNAL;
  }
  uint32_t *fwd = prev + maxch + 1;
  for (uint64_t j = 0; j < 3 * (maxch + 1); j++) prev[j] = COLLIE_NO_STEP;
  const stages_t g = {recv_stages, last_parity, b.maxlen, ce, es};
  for (int k = 0; k < n - 1; k++) {
    const int sb = au_mod(r - k - 1, n), rb = au_mod(r - k - 2, n), p = k % 2, pp = (k + 1) % 2;
    for (uint64_t j = 0; j * ce < b.len[sb]; j++) {
      collie_bufref_t src = k == 0 ? au_at(COLLIE_BUF_SEND, b.off[sb] + j * ce, es) : stage(&g, pp, j);
      uint32_t st = collie_sched_send(s, (r + 1) % n, src, au_chunk_len(b.len[sb], ce, j) * es, COLLIE_DEP1(prev[j]));
      if (k > 0) fwd[(size_t)pp * maxch + j] = st;
    }
    const bool final = k == n - 2;
    for (uint64_t j = 0; j * ce < b.len[rb]; j++) {
      collie_bufref_t dst = final ? au_at(COLLIE_BUF_RECV, j * ce, es) : stage(&g, p, j);
      bool staged = !final || recv_stages;
      prev[j] = collie_sched_recv_reduce(s, (r + n - 1) % n, au_at(COLLIE_BUF_SEND, b.off[rb] + j * ce, es), dst,
                                         au_chunk_len(b.len[rb], ce, j) * es,
                                         COLLIE_DEP1(staged ? fwd[(size_t)p * maxch + j] : COLLIE_NO_STEP));
    }
  }
  free(prev);
  au_blocks_free(&b);
  return au_finish(s);
}
