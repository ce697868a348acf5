/* Bruck's algorithms: ceil(log2 p) rounds for any p, power of two or not, at the price of
 * local rearrangement (copies) and, for alltoall, of sending data more than once. The
 * latency-optimal choice for small messages on many ranks.
 *
 * Costs use p ranks, alpha (per message), beta (per byte sent), delta (per byte copied
 * locally) and n bytes: a rank's whole receive buffer. Zero-length messages are not sent:
 * both ends know every length. */
#include <stdlib.h>

#include "algo/algo_util.h"

/* ---- allgather ------------------------------------------------------------------------ */

/* Bruck allgather (and allgatherv): rank r collects blocks r, r+1, ..., r+p-1 (mod p) in
 * that order in scratch. In round k (distance d = 2^k) it sends the first min(d, p-d)
 * blocks it has to rank r-d and appends as many from rank r+d, which are exactly the
 * blocks that follow its own: after ceil(log2 p) rounds it has all p. A final copy
 * rotates them into place (one or two copies for allgather; per run of contiguous blocks
 * for allgatherv). Each round is one message, even for allgatherv.
 *
 * Cost: ceil(log2 p) alpha + (p-1)/p n beta + n delta. Scratch: n. */
COLLIE_ALGO_DECL(collie_bruck_allgather) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size;
  au_blocks_t b;
  if (!au_blocks_init(&b, args)) return COLLIE_ERR_INTERNAL;
  uint64_t *pos = malloc(((size_t)n + 1) * sizeof *pos); /* of block r+j in scratch */
  if (!pos) {
    au_blocks_free(&b);
    return COLLIE_ERR_INTERNAL;
  }
  pos[0] = 0;
  for (int j = 0; j < n; j++) pos[j + 1] = pos[j] + b.len[(r + j) % n];
  const collie_bufref_t send0 = collie_ref(COLLIE_BUF_SEND, 0);
  if (!args->in_place && b.len[r])
    collie_sched_copy(s, send0, au_at(COLLIE_BUF_RECV, b.off[r], es), b.len[r] * es, COLLIE_NODEPS);
  au_deps_t have = {0}; /* steps that wrote the scratch collected so far */
  if (n > 1) {
    s->scratch_bytes = pos[n] * es;
    if (b.len[r]) au_deps_add(&have, collie_sched_copy(s, send0, au_at(COLLIE_BUF_SCRATCH, 0, es), b.len[r] * es,
                                                       COLLIE_NODEPS));
  }
  for (int d = 1; d < n; d *= 2) {
    const int cnt = d < n - d ? d : n - d;
    if (pos[cnt]) { /* round 0 sends the own block straight from the send buffer */
      collie_bufref_t src = d == 1 ? send0 : au_at(COLLIE_BUF_SCRATCH, 0, es);
      collie_sched_send(s, au_mod(r - d, n), src, pos[cnt] * es, d == 1 ? NULL : have.v, d == 1 ? 0 : have.n);
    }
    if (pos[d + cnt] > pos[d])
      au_deps_add(&have, collie_sched_recv(s, (r + d) % n, au_at(COLLIE_BUF_SCRATCH, pos[d], es),
                                           (pos[d + cnt] - pos[d]) * es, COLLIE_NODEPS));
  }
  /* Rotate blocks r+1 .. r+p-1 into place, merging neighbours that stay contiguous. */
  au_copier_t cp;
  au_copier_init(&cp, s, NULL);
  for (int j = 1; j < n; j++) {
    int q = (r + j) % n;
    au_copier_add(&cp, au_at(COLLIE_BUF_SCRATCH, pos[j], es), au_at(COLLIE_BUF_RECV, b.off[q], es), b.len[q] * es,
                  have.v, have.n);
  }
  au_copier_flush(&cp);
  au_copier_free(&cp);
  if (have.failed) s->failed = 1;
  au_deps_free(&have);
  free(pos);
  au_blocks_free(&b);
  return au_finish(s);
}

/* ---- alltoall ------------------------------------------------------------------------- */

/* Copies blocks order[i0..i1) between their places in RECV (or the input) and slots
 * i0..i1 of a contiguous area, merging runs whose other side is contiguous too. */
typedef struct {
  collie_sched_t *s;
  int n, r;
  uint64_t B;
  collie_buf_t orig_buf; /* where blocks not yet moved are read from */
  uint32_t orig_copy;    /* in place: the copy of the input into scratch */
  uint32_t *wr;          /* wr[j]: the step that last wrote index j in RECV */
  au_deps_t deps;
} bk_t;

/* Index j of rank r: its final place, block r - j of RECV; its input, block r + j. */
static uint64_t slot_off(const bk_t *k, int j) { return (uint64_t)au_mod(k->r - j, k->n) * k->B; }
static uint64_t orig_off(const bk_t *k, int j) { return (uint64_t)((k->r + j) % k->n) * k->B; }

/* Pack: area[i] = index order[i], from RECV if it has moved in an earlier round (a lower
 * bit of j is set), else from the input. Every copy follows `after` (the previous send
 * out of the area) and the writers of what it reads. */
static void pack(bk_t *k, const int *order, int m, int d, uint64_t area, uint32_t after, au_deps_t *out) {
  for (int i0 = 0, i1; i0 < m; i0 = i1) {
    const bool moved = (order[i0] & (d - 1)) != 0;
    au_deps_clear(&k->deps);
    au_deps_add(&k->deps, after);
    au_deps_add(&k->deps, moved ? k->wr[order[i0]] : k->orig_copy);
    for (i1 = i0 + 1; i1 < m; i1++) {
      const int j = order[i1], pj = order[i1 - 1];
      if (((j & (d - 1)) != 0) != moved) break;
      if (moved ? slot_off(k, j) != slot_off(k, pj) + k->B : orig_off(k, j) != orig_off(k, pj) + k->B) break;
      if (moved) au_deps_add(&k->deps, k->wr[j]);
    }
    collie_bufref_t src = moved ? collie_ref(COLLIE_BUF_RECV, slot_off(k, order[i0]))
                                : collie_ref(k->orig_buf, orig_off(k, order[i0]));
    if (k->deps.failed) k->s->failed = 1;
    au_deps_add(out, collie_sched_copy(k->s, src, collie_ref(COLLIE_BUF_SCRATCH, area + (uint64_t)i0 * k->B),
                                       (uint64_t)(i1 - i0) * k->B, k->deps.v, k->deps.n));
  }
}

/* Unpack: index order[i] = area[i], into its place in RECV, after `after` (the receive,
 * and the send whose packing read the same places) and, in place, the input's copy. */
static void unpack(bk_t *k, const int *order, int m, uint64_t area, const uint32_t *after, au_deps_t *out) {
  for (int i0 = 0, i1; i0 < m; i0 = i1) {
    for (i1 = i0 + 1; i1 < m && slot_off(k, order[i1]) == slot_off(k, order[i1 - 1]) + k->B; i1++) {
    }
    uint32_t st = collie_sched_copy(k->s, collie_ref(COLLIE_BUF_SCRATCH, area + (uint64_t)i0 * k->B),
                                    collie_ref(COLLIE_BUF_RECV, slot_off(k, order[i0])), (uint64_t)(i1 - i0) * k->B,
                                    (const uint32_t[]){after[0], after[1], k->orig_copy}, 3);
    au_deps_add(out, st);
    for (int i = i0; i < i1; i++) k->wr[order[i]] = st;
  }
}

/* Bruck alltoall. Number the blocks by distance: index j of rank r is its block for rank
 * r+j. In round k (distance d = 2^k) every rank sends all indices with bit k set to rank
 * r + d, where they keep their index: a block travels j hops in total and reaches rank
 * r+j, and after ceil(log2 p) rounds index j holds the block from rank r-j. The receive
 * buffer itself keeps index j at block r-j, its final place, so no final rotation is
 * needed. Each round packs its blocks into one message (indices descending inside each
 * run, so that neighbouring blocks of RECV merge into one copy) and unpacks the incoming
 * one from a staging area. A block not yet moved is read from the send buffer (in place,
 * from a copy of the input taken first, since RECV is rewritten as we go).
 *
 * Cost: ceil(log2 p) alpha + ceil(log2 p) n/2 beta + about (ceil(log2 p) + 1) n delta.
 * Scratch: about n (pack and staging areas), + n in place. alltoallv is declined: the
 * size of what passes through a rank depends on other ranks' counts, which it does not
 * know. */
COLLIE_ALGO_DECL(collie_bruck_alltoall) {
  if (!au_valid(args) || args->coll == COLLIE_COLL_ALLTOALLV) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t B = args->count * args->elem_size; /* bytes per block */
  if (!B) return COLLIE_SUCCESS;
  if (n == 1) return au_copy_only(args, s, args->count);
  const uint64_t most = (uint64_t)(n / 2 + 1) * B; /* blocks moving in one round, at most */
  const uint64_t area = args->in_place ? (uint64_t)n * B : 0, stage = area + most;
  s->scratch_bytes = stage + most;
  bk_t k = {s, n, r, B, args->in_place ? COLLIE_BUF_SCRATCH : COLLIE_BUF_SEND, COLLIE_NO_STEP, NULL, {0}};
  k.wr = malloc((size_t)n * sizeof *k.wr);
  int *order = malloc((size_t)n * sizeof *order);
  if (!k.wr || !order) {
    free(k.wr);
    free(order);
    return COLLIE_ERR_INTERNAL;
  }
  for (int j = 0; j < n; j++) k.wr[j] = COLLIE_NO_STEP;
  if (args->in_place)
    k.orig_copy = collie_sched_copy(s, collie_ref(COLLIE_BUF_RECV, 0), collie_ref(COLLIE_BUF_SCRATCH, 0),
                                    (uint64_t)n * B, COLLIE_NODEPS);
  au_deps_t packs = {0}, unpacks = {0};
  uint32_t prev_send = COLLIE_NO_STEP;
  for (int d = 1; d < n; d *= 2) {
    int m = 0; /* indices with bit d set: runs of d, descending inside each */
    for (int base = d; base < n; base += 2 * d)
      for (int j = (base + d < n ? base + d : n) - 1; j >= base; j--) order[m++] = j;
    au_deps_clear(&packs);
    pack(&k, order, m, d, area, prev_send, &packs);
    prev_send = collie_sched_send(s, (r + d) % n, collie_ref(COLLIE_BUF_SCRATCH, area), (uint64_t)m * B, packs.v,
                                  packs.n);
    /* the staging area is free once the last round's unpacks are done */
    uint32_t rcv = collie_sched_recv(s, au_mod(r - d, n), collie_ref(COLLIE_BUF_SCRATCH, stage), (uint64_t)m * B,
                                     unpacks.v, unpacks.n);
    au_deps_clear(&unpacks);
    unpack(&k, order, m, stage, (const uint32_t[]){rcv, prev_send}, &unpacks);
  }
  /* Index 0, the rank's own block, never moves; in place it is already there. */
  if (!args->in_place)
    collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, (uint64_t)r * B), collie_ref(COLLIE_BUF_RECV, (uint64_t)r * B), B,
                      COLLIE_NODEPS);
  if (packs.failed || unpacks.failed) s->failed = 1;
  au_deps_free(&packs);
  au_deps_free(&unpacks);
  au_deps_free(&k.deps);
  free(k.wr);
  free(order);
  return au_finish(s);
}
