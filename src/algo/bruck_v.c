/* Bruck alltoallv: Bruck's log-round exchange with blocks of different sizes.
 *
 * Positions are relative: position i of rank r first holds r's block for rank r+i. In the
 * round of bit k (k = 1, 2, 4, ...) every rank sends the blocks at positions with bit k
 * set to rank r+k, packed into one message, and receives the same positions from r-k.
 * At round k, position i of rank x holds the block of origin o = x - (i & (k-1)) for
 * destination o+i; after the last round position i of rank r holds the block from rank
 * r-i. A forwarded block's size is another pair's count, so the builder needs every
 * rank's send counts (args->matrix: the coll layer gathers it first when bruck is forced
 * for alltoallv); without it the builder declines.
 *
 * Every round's pack and landing areas are fresh scratch, so no area is reused while a
 * message from it may still be in flight; a block is only copied when it is packed and
 * once more into its final place.
 *
 * Cost: ceil(log2 p) alpha + (ceil(log2 p)/2) n beta + the packing copies (delta); the
 * matrix exchange adds one allgather of p counts. Worth it for many ranks and small,
 * uneven blocks, where p-1 separate messages cost more than log p packed ones. */
#include <stdlib.h>

#include "algo/algo_util.h"

typedef struct {
  collie_bufref_t at; /* where the position's current block lives */
  uint64_t len;       /* bytes */
  uint32_t made_by;   /* the step that wrote it there (COLLIE_NO_STEP: the input) */
} slot_t;

/* Bytes of the block from origin o to destination d. */
static uint64_t block(const collie_coll_args_t *a, int o, int d) {
  return (uint64_t)a->matrix[(size_t)o * (size_t)a->nranks + (size_t)d] * a->elem_size;
}

COLLIE_ALGO_DECL(collie_bruck_alltoallv) {
  if (!au_valid(args) || args->coll != COLLIE_COLL_ALLTOALLV || !args->matrix) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size;
  for (int d = 0; d < n; d++)
    if (args->matrix[(size_t)r * n + d] != args->counts[d] || args->matrix[(size_t)d * n + r] != args->counts2[d])
      return COLLIE_ERR_INVALID_ARGUMENT; /* the matrix must agree with this rank's own counts */
  slot_t *pos = malloc((size_t)n * sizeof *pos);
  if (!pos) return COLLIE_ERR_INTERNAL;
  uint64_t scratch = 0;
  uint32_t orig = COLLIE_NO_STEP;
  collie_buf_t in = COLLIE_BUF_SEND;
  if (args->in_place) {
    /* The input shares the receive buffer: keep a copy of it before anything lands. */
    uint64_t extent = 0;
    for (int d = 0; d < n; d++)
      if (args->counts[d] && (args->displs[d] + args->counts[d]) * es > extent)
        extent = (args->displs[d] + args->counts[d]) * es;
    if (extent) orig = collie_sched_copy(s, collie_ref(COLLIE_BUF_RECV, 0), collie_ref(COLLIE_BUF_SCRATCH, 0), extent,
                                         COLLIE_NODEPS);
    in = COLLIE_BUF_SCRATCH;
    scratch = extent;
  }
  for (int i = 0; i < n; i++) {
    int d = (r + i) % n;
    pos[i] = (slot_t){collie_ref(in, args->displs[d] * es), args->counts[d] * es, orig};
  }
  au_deps_t packs = {0};
  for (int k = 1; k < n; k *= 2) {
    /* Send: pack this rank's positions with bit k into one fresh area. */
    uint64_t out = 0, got = 0;
    for (int i = 1; i < n; i++)
      if (i & k) out += pos[i].len;
    const uint64_t pack_at = scratch, land_at = scratch + out;
    au_deps_clear(&packs);
    uint64_t off = 0;
    for (int i = 1; i < n; i++) {
      if (!(i & k) || !pos[i].len) continue;
      au_deps_add(&packs, collie_sched_copy(s, pos[i].at, collie_ref(COLLIE_BUF_SCRATCH, pack_at + off), pos[i].len,
                                            COLLIE_DEP1(pos[i].made_by)));
      off += pos[i].len;
    }
    if (out) collie_sched_send(s, (r + k) % n, collie_ref(COLLIE_BUF_SCRATCH, pack_at), out, packs.v, packs.n);
    /* Receive: the same positions as rank r-k holds them this round. */
    const int from = au_mod(r - k, n);
    for (int i = 1; i < n; i++)
      if (i & k) {
        int o = au_mod(from - (i & (k - 1)), n);
        got += block(args, o, (o + i) % n);
      }
    uint32_t recv = COLLIE_NO_STEP;
    if (got) recv = collie_sched_recv(s, from, collie_ref(COLLIE_BUF_SCRATCH, land_at), got, COLLIE_NODEPS);
    off = 0;
    for (int i = 1; i < n; i++) {
      if (!(i & k)) continue;
      int o = au_mod(from - (i & (k - 1)), n);
      uint64_t len = block(args, o, (o + i) % n);
      pos[i] = (slot_t){collie_ref(COLLIE_BUF_SCRATCH, land_at + off), len, recv};
      off += len;
    }
    scratch = land_at + got;
  }
  /* Position i now holds the block from rank r-i: put it where the caller wants it. */
  for (int i = 0; i < n; i++) {
    int o = au_mod(r - i, n);
    if (!pos[i].len) continue;
    collie_sched_copy(s, pos[i].at, collie_ref(COLLIE_BUF_RECV, args->displs2[o] * es), pos[i].len,
                      COLLIE_DEP2(pos[i].made_by, orig));
  }
  au_deps_free(&packs);
  free(pos);
  s->scratch_bytes = scratch;
  return au_finish(s);
}
