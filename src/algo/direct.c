/* Direct algorithms: every rank talks to every other rank (or the root to every rank)
 * without forwarding. One round of latency, at the price of p - 1 messages per rank: the
 * right choice for small messages on few ranks, and the building block of alltoall.
 *
 * Costs use p ranks, alpha (per message), beta (per byte sent), gamma (per byte reduced),
 * and n bytes: the full vector (allreduce), a rank's whole receive buffer (allgather),
 * a rank's whole send buffer (reduce_scatter, alltoall) or the root's buffer (scatter,
 * gather). Messages of zero bytes are not sent: both ends know every length. */
#include "algo/algo_util.h"

/* ---- reducing one slice from every rank in rank order -------------------------------- */

/* Builds out = x_0 (op) x_1 (op) ... (op) x_{p-1} at this rank, receiving every peer's x_j
 * in rank order with RECV_REDUCE; local is this rank's own x_r. The fixed order makes the
 * result bitwise reproducible run to run.
 *
 * Before the rank's own turn the partial result lives in `prefix`, after it in `out`; the
 * two may be the same bytes. In place, `local` is `out` itself, so the partial sum of the
 * lower ranks must wait in scratch (prefix) until x_r is folded in. Returns the last step,
 * after which out holds the result. */
static uint32_t reduce_in_rank_order(collie_sched_t *s, int n, int r, collie_bufref_t local,
                                     collie_bufref_t prefix, collie_bufref_t out, uint64_t len) {
  uint32_t last = COLLIE_NO_STEP;
  if (r == 0) {
    if (!au_same_bytes(local, out)) last = collie_sched_copy(s, local, out, len, COLLIE_NODEPS);
  } else
    last = collie_sched_recv(s, 0, prefix, len, COLLIE_NODEPS);
  for (int j = 1; j < n; j++) {
    if (j == r)
      last = collie_sched_reduce(s, prefix, local, out, len, COLLIE_DEP1(last));
    else if (j < r)
      last = collie_sched_recv_reduce(s, j, prefix, prefix, len, COLLIE_DEP1(last));
    else
      last = collie_sched_recv_reduce(s, j, out, out, len, COLLIE_DEP1(last));
  }
  return last;
}

/* ---- allreduce ------------------------------------------------------------------------ */

/* Mesh allreduce: a direct reduce-scatter followed by a direct allgather.
 *
 * The vector is cut into p slices; rank r owns slice r. Every rank sends slice j of its
 * input to rank j, which folds the p contributions in rank order 0, 1, ..., p-1; then every
 * rank sends its finished slice to all others. Each element is reduced in exactly one
 * place, so all ranks hold bitwise identical results.
 *
 * Cost: 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma, in two rounds of latency. */
COLLIE_ALGO_DECL(collie_mesh_allreduce) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size, count = args->count;
  /* In place the input is the receive buffer itself. */
  const collie_buf_t in = args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND;

  /* My slice, folded in rank order (its receives come first among those from each peer). */
  const uint64_t mylen = au_block_len(count, n, r) * es, myoff = au_block_start(count, n, r) * es;
  const collie_bufref_t out = collie_ref(COLLIE_BUF_RECV, myoff);
  uint32_t done = COLLIE_NO_STEP;
  if (mylen) {
    collie_bufref_t prefix = out;
    if (args->in_place && r > 0) {
      prefix = collie_ref(COLLIE_BUF_SCRATCH, 0);
      s->scratch_bytes = mylen;
    }
    done = reduce_in_rank_order(s, n, r, collie_ref(in, myoff), prefix, out, mylen);
  }

  for (int i = 1; i < n; i++) {
    int j = (r + i) % n;
    uint64_t len = au_block_len(count, n, j) * es, off = au_block_start(count, n, j) * es;
    /* Phase 1: slice j of my input to its owner. Phase 2: the owner's finished slice j back
     * into place, after my copy of it has left (in place those are the same bytes). */
    if (len) {
      uint32_t sent = collie_sched_send(s, j, collie_ref(in, off), len, COLLIE_NODEPS);
      collie_sched_recv(s, j, collie_ref(COLLIE_BUF_RECV, off), len, COLLIE_DEP1(sent));
    }
    /* Phase 2: my finished slice to rank j. */
    if (mylen) collie_sched_send(s, j, out, mylen, COLLIE_DEP1(done));
  }
  return au_finish(s);
}

/* ---- allgather(v) --------------------------------------------------------------------- */

/* Mesh allgather (and allgatherv): every rank sends its block straight to every other rank
 * and receives every other block straight into place; all messages at once.
 *
 * Cost: (p-1) alpha + (p-1)/p n beta. */
COLLIE_ALGO_DECL(collie_mesh_allgather) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size;
  au_blocks_t b;
  if (!au_blocks_init(&b, args)) return COLLIE_ERR_INTERNAL;
  const uint64_t mylen = b.len[r] * es;
  /* In place my block already sits at its place in the receive buffer. */
  collie_bufref_t mine = au_at(COLLIE_BUF_RECV, b.off[r], es);
  if (!args->in_place && mylen) {
    collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, 0), mine, mylen, COLLIE_NODEPS);
    mine = collie_ref(COLLIE_BUF_SEND, 0); /* send from the source: no wait for the copy */
  }
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n, from = (r - i + n) % n;
    if (mylen) collie_sched_send(s, to, mine, mylen, COLLIE_NODEPS);
    if (b.len[from])
      collie_sched_recv(s, from, au_at(COLLIE_BUF_RECV, b.off[from], es), b.len[from] * es, COLLIE_NODEPS);
  }
  au_blocks_free(&b);
  return au_finish(s);
}

/* ---- reduce_scatter(v) ---------------------------------------------------------------- */

/* Mesh reduce_scatter (and reduce_scatterv): every rank sends block j of its input straight
 * to rank j, which folds the p contributions in rank order 0, 1, ..., p-1.
 *
 * Cost: (p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma. */
COLLIE_ALGO_DECL(collie_mesh_reduce_scatter) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size;
  au_blocks_t b; /* block j of the input follows the earlier blocks */
  if (!au_blocks_init(&b, args)) return COLLIE_ERR_INTERNAL;
  for (int j = 0; j < n; j++)
    if (j != r && b.len[j]) collie_sched_send(s, j, au_at(COLLIE_BUF_SEND, b.off[j], es), b.len[j] * es, COLLIE_NODEPS);
  const uint64_t mylen = b.len[r] * es;
  if (mylen) {
    /* In place the receive buffer is my block of the input. */
    const collie_bufref_t out = collie_ref(COLLIE_BUF_RECV, 0);
    const collie_bufref_t local = args->in_place ? out : au_at(COLLIE_BUF_SEND, b.off[r], es);
    collie_bufref_t prefix = out;
    if (args->in_place && r > 0) {
      prefix = collie_ref(COLLIE_BUF_SCRATCH, 0);
      s->scratch_bytes = mylen;
    }
    reduce_in_rank_order(s, n, r, local, prefix, out, mylen);
  }
  au_blocks_free(&b);
  return au_finish(s);
}

/* ---- alltoall(v) ---------------------------------------------------------------------- */

/* Block j of an alltoall buffer, in bytes: count elements at j * count, or for alltoallv
 * counts[j] at displs[j] (the send side's or the receive side's arrays). */
static void a2a_block(const collie_coll_args_t *a, const size_t *counts, const size_t *displs, int j, uint64_t *off,
                      uint64_t *len) {
  if (a->coll == COLLIE_COLL_ALLTOALLV) {
    *off = (uint64_t)displs[j] * a->elem_size;
    *len = (uint64_t)counts[j] * a->elem_size;
  } else {
    *off = (uint64_t)j * a->count * a->elem_size;
    *len = (uint64_t)a->count * a->elem_size;
  }
}

/* Outgoing block j (to rank j) and incoming block j (from rank j). */
static void a2a_send_block(const collie_coll_args_t *a, int j, uint64_t *off, uint64_t *len) {
  a2a_block(a, a->counts, a->displs, j, off, len);
}

static void a2a_recv_block(const collie_coll_args_t *a, int j, uint64_t *off, uint64_t *len) {
  a2a_block(a, a->counts2, a->displs2, j, off, len);
}

/* Where the outgoing blocks are read from. Out of place: the send buffer. In place the
 * receive buffer holds them, and receiving into it would overwrite blocks not yet sent, so
 * they are first copied to scratch, at the same offsets (as MPI implementations do); the
 * own block stays where it is, and is not copied: below it and above it, at most two
 * copies, the second after the first. *packed is the last copy. A 2-rank 64 MiB in-place
 * all-to-all copied 64 MiB to scratch instead of 32. */
static collie_buf_t a2a_source(const collie_coll_args_t *a, collie_sched_t *s, uint32_t *packed) {
  *packed = COLLIE_NO_STEP;
  if (!a->in_place) return COLLIE_BUF_SEND;
  uint64_t own_off, own_len, lo = UINT64_MAX, hi = 0;
  a2a_send_block(a, a->rank, &own_off, &own_len);
  for (int j = 0; j < a->nranks; j++) {
    uint64_t off, len;
    a2a_send_block(a, j, &off, &len);
    if (j == a->rank || !len) continue;
    if (off < lo) lo = off;
    if (off + len > hi) hi = off + len;
  }
  if (hi <= lo) return COLLIE_BUF_SCRATCH;
  s->scratch_bytes = hi;
  /* The others' blocks do not overlap the own one (the receive buffer would be written
   * twice), so each lies below own_off or from own_off + own_len. */
  uint64_t below = hi, above = hi; /* [lo, below) and [above, hi) are copied */
  if (own_len && own_off < hi && own_off + own_len > lo) {
    below = own_off > lo ? own_off : lo;
    above = own_off + own_len < hi ? own_off + own_len : hi;
  }
  if (below > lo)
    *packed = collie_sched_copy(s, collie_ref(COLLIE_BUF_RECV, lo), collie_ref(COLLIE_BUF_SCRATCH, lo), below - lo,
                                COLLIE_NODEPS);
  if (hi > above)
    *packed = collie_sched_copy(s, collie_ref(COLLIE_BUF_RECV, above), collie_ref(COLLIE_BUF_SCRATCH, above),
                                hi - above, COLLIE_DEP1(*packed));
  return COLLIE_BUF_SCRATCH;
}

/* My own block: a local copy, skipped in place when it is already where it belongs. */
static void a2a_self(const collie_coll_args_t *a, collie_sched_t *s, collie_buf_t src, uint32_t packed) {
  uint64_t soff, slen, roff, rlen;
  a2a_send_block(a, a->rank, &soff, &slen);
  a2a_recv_block(a, a->rank, &roff, &rlen);
  uint64_t len = slen < rlen ? slen : rlen;
  if (!len || (a->in_place && soff == roff)) return;
  collie_sched_copy(s, collie_ref(src, soff), collie_ref(COLLIE_BUF_RECV, roff), len, COLLIE_DEP1(packed));
}

/* Mesh alltoall (and alltoallv): all p - 1 sends and p - 1 receives posted at once, each
 * block straight from its source to its place.
 *
 * Cost: (p-1) alpha + (p-1)/p n beta; in place, plus a local copy of (p-1)/p n bytes to scratch. */
COLLIE_ALGO_DECL(collie_mesh_alltoall) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  uint32_t packed;
  collie_buf_t src = a2a_source(args, s, &packed);
  a2a_self(args, s, src, packed);
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n, from = (r - i + n) % n;
    uint64_t off, len;
    a2a_send_block(args, to, &off, &len);
    if (len) collie_sched_send(s, to, collie_ref(src, off), len, COLLIE_DEP1(packed));
    a2a_recv_block(args, from, &off, &len);
    if (len) collie_sched_recv(s, from, collie_ref(COLLIE_BUF_RECV, off), len, COLLIE_DEP1(packed));
  }
  return au_finish(s);
}

/* Pairwise alltoall (and alltoallv): p - 1 rounds; in round k a rank sends to
 * (rank + k) % p and receives from (rank - k + p) % p, each round after the previous one,
 * so a rank has one message in each direction in flight and no receiver is flooded.
 *
 * Cost: (p-1) (alpha + n/p beta). */
COLLIE_ALGO_DECL(collie_pairwise_alltoall) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  uint32_t packed;
  collie_buf_t src = a2a_source(args, s, &packed);
  a2a_self(args, s, src, packed);
  uint32_t prev_send = packed, prev_recv = COLLIE_NO_STEP;
  for (int k = 1; k < n; k++) {
    int to = (r + k) % n, from = (r - k + n) % n;
    uint64_t off, len;
    uint32_t snd = COLLIE_NO_STEP, rcv = COLLIE_NO_STEP;
    a2a_send_block(args, to, &off, &len);
    if (len) snd = collie_sched_send(s, to, collie_ref(src, off), len, COLLIE_DEP2(prev_send, prev_recv));
    a2a_recv_block(args, from, &off, &len);
    if (len) rcv = collie_sched_recv(s, from, collie_ref(COLLIE_BUF_RECV, off), len, COLLIE_DEP2(prev_send, prev_recv));
    /* A round without messages (zero-length blocks) leaves the ordering to the last real one. */
    if (snd != COLLIE_NO_STEP || rcv != COLLIE_NO_STEP) {
      prev_send = snd;
      prev_recv = rcv;
    }
  }
  return au_finish(s);
}

/* ---- scatter / gather ----------------------------------------------------------------- */

/* Linear scatter: the root sends block j straight to rank j, all at once.
 *
 * Cost: (p-1) alpha + (p-1)/p n beta at the root. */
COLLIE_ALGO_DECL(collie_linear_scatter) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank, root = args->root;
  const uint64_t blk = (uint64_t)args->count * args->elem_size;
  if (!blk) return au_finish(s);
  if (r != root) {
    collie_sched_recv(s, root, collie_ref(COLLIE_BUF_RECV, 0), blk, COLLIE_NODEPS);
    return au_finish(s);
  }
  /* In place the root's receive buffer is its block of the send buffer: nothing to copy. */
  if (!args->in_place)
    collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, (uint64_t)root * blk), collie_ref(COLLIE_BUF_RECV, 0), blk,
                      COLLIE_NODEPS);
  for (int i = 1; i < n; i++) {
    int j = (root + i) % n;
    collie_sched_send(s, j, collie_ref(COLLIE_BUF_SEND, (uint64_t)j * blk), blk, COLLIE_NODEPS);
  }
  return au_finish(s);
}

/* Linear gather: every rank sends its block straight to the root, which receives them all
 * at once into place.
 *
 * Cost: (p-1) alpha + (p-1)/p n beta at the root. */
COLLIE_ALGO_DECL(collie_linear_gather) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank, root = args->root;
  const uint64_t blk = (uint64_t)args->count * args->elem_size;
  if (!blk) return au_finish(s);
  if (r != root) {
    collie_sched_send(s, root, collie_ref(COLLIE_BUF_SEND, 0), blk, COLLIE_NODEPS);
    return au_finish(s);
  }
  /* In place the root's send buffer is its block of the receive buffer. */
  if (!args->in_place)
    collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, 0), collie_ref(COLLIE_BUF_RECV, (uint64_t)root * blk), blk,
                      COLLIE_NODEPS);
  for (int i = 1; i < n; i++) {
    int j = (root + i) % n;
    collie_sched_recv(s, j, collie_ref(COLLIE_BUF_RECV, (uint64_t)j * blk), blk, COLLIE_NODEPS);
  }
  return au_finish(s);
}
