/* Recursive doubling and halving: log2(p) rounds in which rank pairs at distance 1, 2, 4,
 * ... (or p/2, ..., 1) exchange data, so latency grows with log p instead of p.
 *
 * Non-powers of two are folded as in MPICH: with pof2 the largest power of two <= p and
 * rem = p - pof2, each even rank 2i < 2 rem first hands its data to rank 2i + 1 and sits
 * out; the pof2 remaining ranks run the power-of-two algorithm under new ranks (2i + 1 ->
 * i for i < rem, r -> r - rem beyond) and the odd ranks hand the result back at the end.
 * That costs two extra rounds moving the full vector (or its relevant part).
 *
 * Costs use p ranks, alpha (per message), beta (per byte sent), gamma (per byte reduced)
 * and n bytes: the whole vector (allreduce), the whole send buffer (reduce_scatter), the
 * whole receive buffer (allgather). Zero-length messages are not sent: both ends know
 * every length. */
#include <stdlib.h>

#include "algo/algo_util.h"

typedef struct {
  int pof2, rem;
  int newrank; /* -1: this rank sits out (an even rank below 2 rem) */
} fold_t;

static fold_t fold_of(int n, int r) {
  fold_t f;
  f.pof2 = au_pow2_le(n);
  f.rem = n - f.pof2;
  if (r < 2 * f.rem)
    f.newrank = r % 2 ? r / 2 : -1;
  else
    f.newrank = r - f.rem;
  return f;
}

/* The real rank behind a new rank, and the real ranks [lo, hi] a new rank stands for. */
static int real_of(const fold_t *f, int v) { return v < f->rem ? 2 * v + 1 : v + f->rem; }
static int first_real(const fold_t *f, int v) { return v < f->rem ? 2 * v : v + f->rem; }

/* ---- recursive doubling allreduce ------------------------------------------------------ */

/* Recursive doubling allreduce: in round k, ranks 2^k apart exchange their whole partial
 * vectors and both combine them, so after log2(pof2) rounds every rank has everything.
 * Both partners compute (lower rank's partial) op (higher rank's partial) with one REDUCE
 * from a scratch copy of the incoming vector, the same operands in the same order, so
 * all ranks hold bitwise identical results even for operations that are commutative only
 * up to NaN payloads. (A fused RECV_REDUCE could not be used anyway: the vector being
 * overwritten is the one being sent, and a receive waiting for its own send would
 * deadlock against the partner doing the same.)
 *
 * Cost: log2(p) (alpha + n beta + n gamma); not a power of two: + 2 alpha + 2 n beta + n gamma.
 * The latency-optimal choice for small vectors. */
COLLIE_ALGO_DECL(collie_rd_allreduce) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size, len = args->count * es;
  const collie_buf_t in = args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND;
  if (!len) return COLLIE_SUCCESS;
  if (n == 1) return au_copy_only(args, s, args->count);
  const fold_t f = fold_of(n, r);
  if (f.newrank < 0) { /* hand over, wait for the result */
    uint32_t snd = collie_sched_send(s, r + 1, collie_ref(in, 0), len, COLLIE_NODEPS);
    collie_sched_recv(s, r + 1, collie_ref(COLLIE_BUF_RECV, 0), len, COLLIE_DEP1(snd));
    return au_finish(s);
  }
  collie_buf_t cur = in; /* where this rank's partial result is */
  uint32_t last = COLLIE_NO_STEP;
  if (r < 2 * f.rem) {
    last = collie_sched_recv_reduce(s, r - 1, collie_ref(in, 0), collie_ref(COLLIE_BUF_RECV, 0), len, COLLIE_NODEPS);
    cur = COLLIE_BUF_RECV;
  }
  s->scratch_bytes = len;
  const collie_bufref_t tmp = collie_ref(COLLIE_BUF_SCRATCH, 0);
  for (int mask = 1; mask < f.pof2; mask <<= 1) {
    const int vdst = f.newrank ^ mask, dst = real_of(&f, vdst);
    uint32_t snd = collie_sched_send(s, dst, collie_ref(cur, 0), len, COLLIE_DEP1(last));
    uint32_t rcv = collie_sched_recv(s, dst, tmp, len, COLLIE_DEP1(last)); /* last read tmp */
    collie_bufref_t lo = f.newrank < vdst ? collie_ref(cur, 0) : tmp, hi = f.newrank < vdst ? tmp : collie_ref(cur, 0);
    last = collie_sched_reduce(s, lo, hi, collie_ref(COLLIE_BUF_RECV, 0), len, COLLIE_DEP2(snd, rcv));
    cur = COLLIE_BUF_RECV;
  }
  if (r < 2 * f.rem) collie_sched_send(s, r - 1, collie_ref(COLLIE_BUF_RECV, 0), len, COLLIE_DEP1(last));
  return au_finish(s);
}

/* ---- halving-doubling (Rabenseifner) allreduce ----------------------------------------- */

/* Rabenseifner's allreduce: a reduce-scatter by recursive halving, then an allgather by
 * recursive doubling. The vector is cut into pof2 near-equal blocks; in halving round k
 * partners 2^k apart split their common range of blocks, each sending the half it gives
 * up and folding the partner's copy of the half it keeps into its own with RECV_REDUCE
 * (disjoint bytes, so send and receive proceed together). After log2(pof2) rounds each
 * rank owns one complete block, reduced on that rank only, and the doubling rounds
 * replay the halving in reverse to hand the blocks around: all ranks end bitwise equal.
 *
 * Cost: 2 log2(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma; not a power of two:
 * + 2 alpha + 2 n beta + n gamma. Bandwidth-optimal like the ring with log p latency. */
COLLIE_ALGO_DECL(collie_hd_allreduce) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size, count = args->count, len = count * es;
  const collie_buf_t in = args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND;
  if (!len) return COLLIE_SUCCESS;
  if (n == 1) return au_copy_only(args, s, count);
  const fold_t f = fold_of(n, r);
  if (f.newrank < 0) {
    uint32_t snd = collie_sched_send(s, r + 1, collie_ref(in, 0), len, COLLIE_NODEPS);
    collie_sched_recv(s, r + 1, collie_ref(COLLIE_BUF_RECV, 0), len, COLLIE_DEP1(snd));
    return au_finish(s);
  }
  collie_buf_t cur = in;
  uint32_t last = COLLIE_NO_STEP;
  if (r < 2 * f.rem) {
    last = collie_sched_recv_reduce(s, r - 1, collie_ref(in, 0), collie_ref(COLLIE_BUF_RECV, 0), len, COLLIE_NODEPS);
    cur = COLLIE_BUF_RECV;
  }
  const int P = f.pof2;
  int rounds = 0;
  while ((1 << rounds) < P) rounds++;
  /* Per halving round: the range of blocks kept and the one given away, and the send
   * (which the doubling round receiving those bytes back must follow). */
  int keep_lo[32], keep_hi[32], give_lo[32], give_hi[32];
  uint32_t gave[32];
  int lo = 0, hi = P;
#define EOFF(b) au_block_start(count, P, (b))
  for (int k = 0; k < rounds; k++) {
    const int mask = 1 << k, vdst = f.newrank ^ mask, dst = real_of(&f, vdst), mid = lo + (hi - lo) / 2;
    const bool lower = (f.newrank & mask) == 0; /* keeps the lower half */
    keep_lo[k] = lower ? lo : mid, keep_hi[k] = lower ? mid : hi;
    give_lo[k] = lower ? mid : lo, give_hi[k] = lower ? hi : mid;
    const uint64_t go = EOFF(give_lo[k]), gl = EOFF(give_hi[k]) - go;
    const uint64_t ko = EOFF(keep_lo[k]), kl = EOFF(keep_hi[k]) - ko;
    gave[k] = gl ? collie_sched_send(s, dst, au_at(cur, go, es), gl * es, COLLIE_DEP1(last)) : COLLIE_NO_STEP;
    if (kl)
      last = collie_sched_recv_reduce(s, dst, au_at(cur, ko, es), au_at(COLLIE_BUF_RECV, ko, es), kl * es,
                                      COLLIE_DEP1(last));
    cur = COLLIE_BUF_RECV; /* every block still kept has now been reduced into RECV */
    lo = keep_lo[k], hi = keep_hi[k];
  }
  /* Doubling: each send carries everything gathered so far, so it follows every receive. */
  au_deps_t got = {0};
  au_deps_add(&got, last);
  for (int k = rounds - 1; k >= 0; k--) {
    const int dst = real_of(&f, f.newrank ^ (1 << k));
    const uint64_t ko = EOFF(keep_lo[k]), kl = EOFF(keep_hi[k]) - ko;
    const uint64_t go = EOFF(give_lo[k]), gl = EOFF(give_hi[k]) - go;
    if (kl) collie_sched_send(s, dst, au_at(COLLIE_BUF_RECV, ko, es), kl * es, got.v, got.n);
    if (gl) au_deps_add(&got, collie_sched_recv(s, dst, au_at(COLLIE_BUF_RECV, go, es), gl * es, COLLIE_DEP1(gave[k])));
  }
#undef EOFF
  if (r < 2 * f.rem) collie_sched_send(s, r - 1, collie_ref(COLLIE_BUF_RECV, 0), len, got.v, got.n);
  if (got.failed) s->failed = 1;
  au_deps_free(&got);
  return au_finish(s);
}

/* ---- halving reduce_scatter ------------------------------------------------------------ */

/* The real ranks [*qlo, *qhi) behind new ranks [vlo, vhi): their blocks are contiguous in
 * the send layout, which is in rank order. */
static void vrange(const fold_t *f, int vlo, int vhi, int *qlo, int *qhi) {
  *qlo = first_real(f, vlo);
  *qhi = real_of(f, vhi - 1) + 1;
}

/* Recursive halving reduce_scatter (and reduce_scatterv), MPICH's algorithm for
 * commutative operations: in round k partners p/2^(k+1) apart split their common range of
 * new ranks, each sending the half that belongs to the partner's side and receive-reducing
 * the partner's contribution to its own half. Partial sums live in scratch laid out like
 * the send buffer; the last round reduces a rank's own block straight into the receive
 * buffer. Folded pairs: the odd rank reduces the even rank's whole vector first, and hands
 * it its block at the end.
 *
 * Cost: log2(p) alpha + (p-1)/p n beta + (p-1)/p n gamma (n: the whole send buffer); not
 * a power of two: + 2 alpha + n beta + n gamma. Scratch: n (the whole send layout). */
COLLIE_ALGO_DECL(collie_hd_reduce_scatter) {
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
  const fold_t f = fold_of(n, r);
  const collie_bufref_t recv0 = collie_ref(COLLIE_BUF_RECV, 0);
  if (f.newrank < 0) {
    uint32_t snd = b.total ? collie_sched_send(s, r + 1, au_at(COLLIE_BUF_SEND, 0, es), b.total * es, COLLIE_NODEPS)
                           : COLLIE_NO_STEP;
    if (b.len[r]) collie_sched_recv(s, r + 1, recv0, b.len[r] * es, COLLIE_DEP1(snd));
    au_blocks_free(&b);
    return au_finish(s);
  }
  /* Partial sums need scratch unless the only round is the last (two ranks, no fold). */
  if (f.pof2 > 2 || r < 2 * f.rem) s->scratch_bytes = b.total * es;
  collie_buf_t cur = COLLIE_BUF_SEND;
  au_deps_t last = {0}; /* the steps that produced the current partial sums */
  if (r < 2 * f.rem) {
    if (b.total)
      au_deps_add(&last, collie_sched_recv_reduce(s, r - 1, au_at(COLLIE_BUF_SEND, 0, es),
                                                  au_at(COLLIE_BUF_SCRATCH, 0, es), b.total * es, COLLIE_NODEPS));
    cur = COLLIE_BUF_SCRATCH;
  }
  int vlo = 0; /* the current range of new ranks is [vlo, vlo + 2 mask) */
  uint32_t mine_to_even = COLLIE_NO_STEP;
  for (int mask = f.pof2 / 2; mask > 0; mask /= 2) {
    const int vdst = f.newrank ^ mask, dst = real_of(&f, vdst);
    const bool lower = f.newrank < vdst, final = mask == 1;
    const int klo = lower ? vlo : vlo + mask, khi = klo + mask, glo = lower ? vlo + mask : vlo, ghi = glo + mask;
    int qlo, qhi;
    /* Send the half the partner keeps: one message, except that the block of a single
     * new rank standing for two real ranks goes as two, so that its receiver can reduce
     * each part straight where it belongs. Both ends split alike, so messages match. */
    vrange(&f, glo, ghi, &qlo, &qhi);
    if (ghi - glo == 1 && qhi - qlo == 2) {
      for (int q = qlo; q < qhi; q++)
        if (b.len[q]) collie_sched_send(s, dst, au_at(cur, b.off[q], es), b.len[q] * es, last.v, last.n);
    } else if (b.off[qhi - 1] + b.len[qhi - 1] > b.off[qlo]) {
      uint64_t o = b.off[qlo], l = b.off[qhi - 1] + b.len[qhi - 1] - o;
      collie_sched_send(s, dst, au_at(cur, o, es), l * es, last.v, last.n);
    }
    /* Receive-reduce the half kept; in the last round the own block lands in RECV. */
    vrange(&f, klo, khi, &qlo, &qhi);
    au_deps_t next = {0};
    if (khi - klo == 1 && qhi - qlo == 2) {
      for (int q = qlo; q < qhi; q++) {
        if (!b.len[q]) continue;
        collie_bufref_t dstref = final && q == r ? recv0 : au_at(COLLIE_BUF_SCRATCH, b.off[q], es);
        uint32_t st = collie_sched_recv_reduce(s, dst, au_at(cur, b.off[q], es), dstref, b.len[q] * es, last.v, last.n);
        au_deps_add(&next, st);
        if (final && q != r) mine_to_even = st;
      }
    } else if (b.off[qhi - 1] + b.len[qhi - 1] > b.off[qlo]) {
      uint64_t o = b.off[qlo], l = b.off[qhi - 1] + b.len[qhi - 1] - o;
      collie_bufref_t dstref = final ? recv0 : au_at(COLLIE_BUF_SCRATCH, o, es);
      au_deps_add(&next, collie_sched_recv_reduce(s, dst, au_at(cur, o, es), dstref, l * es, last.v, last.n));
    }
    if (last.failed || next.failed) s->failed = 1;
    au_deps_free(&last);
    last = next;
    cur = COLLIE_BUF_SCRATCH;
    vlo = klo;
  }
  if (r < 2 * f.rem && b.len[r - 1])
    collie_sched_send(s, r - 1, au_at(COLLIE_BUF_SCRATCH, b.off[r - 1], es), b.len[r - 1] * es,
                      COLLIE_DEP1(mine_to_even));
  au_deps_free(&last);
  au_blocks_free(&b);
  return au_finish(s);
}

/* ---- recursive doubling allgather ------------------------------------------------------ */

/* Blocks of real ranks [qlo, qhi) of the receive buffer, as maximal contiguous runs
 * (allgatherv may leave gaps or reorder blocks); calls fn for each run. */
typedef void (*run_fn)(void *ctx, uint64_t off, uint64_t len);

static void for_runs(const au_blocks_t *b, int qlo, int qhi, run_fn fn, void *ctx) {
  uint64_t o = 0, l = 0;
  for (int q = qlo; q < qhi; q++) {
    if (!b->len[q]) continue;
    if (l && b->off[q] == o + l) {
      l += b->len[q];
      continue;
    }
    if (l) fn(ctx, o, l);
    o = b->off[q], l = b->len[q];
  }
  if (l) fn(ctx, o, l);
}

typedef struct {
  collie_sched_t *s;
  int peer;
  uint64_t es;
  bool send;
  au_deps_t *deps; /* sends: depend on all; receives: collected here */
  uint32_t prev;   /* receives of one exchange are chained (the send depends on the last) */
} xfer_t;

static void xfer_run(void *ctx, uint64_t off, uint64_t len) {
  xfer_t *x = ctx;
  collie_bufref_t ref = au_at(COLLIE_BUF_RECV, off, x->es);
  if (x->send)
    collie_sched_send(x->s, x->peer, ref, len * x->es, x->deps->v, x->deps->n);
  else
    x->prev = collie_sched_recv(x->s, x->peer, ref, len * x->es, COLLIE_DEP1(x->prev));
}

/* Recursive doubling allgather (and allgatherv): in round k, ranks 2^k apart swap
 * everything they have gathered, which doubles it, straight into place in the receive
 * buffer (a message per contiguous run of blocks, so one for allgather). Ranks beyond a
 * power of two are folded in: an even rank below 2 rem gives its block to its odd
 * neighbour first and receives everything from it at the end.
 *
 * Cost: log2(p) alpha + (p-1)/p n beta; not a power of two: + 2 alpha + n beta. */
COLLIE_ALGO_DECL(collie_rd_allgather) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size;
  au_blocks_t b;
  if (!au_blocks_init(&b, args)) return COLLIE_ERR_INTERNAL;
  const fold_t f = fold_of(n, r);
  const collie_bufref_t send0 = collie_ref(COLLIE_BUF_SEND, 0);
  au_deps_t have = {0}; /* steps that wrote what this rank has gathered so far */
  if (!args->in_place && b.len[r])
    au_deps_add(&have, collie_sched_copy(s, send0, au_at(COLLIE_BUF_RECV, b.off[r], es), b.len[r] * es, COLLIE_NODEPS));
  xfer_t x = {s, 0, es, false, &have, COLLIE_NO_STEP};
  if (n > 1 && f.newrank < 0) { /* hand over the own block, receive all the others */
    if (b.len[r]) collie_sched_send(s, r + 1, send0, b.len[r] * es, COLLIE_NODEPS);
    x.peer = r + 1;
    for_runs(&b, 0, r, xfer_run, &x);
    for_runs(&b, r + 1, n, xfer_run, &x);
  } else if (n > 1) {
    if (r < 2 * f.rem) {
      x.peer = r - 1;
      for_runs(&b, r - 1, r, xfer_run, &x);
      au_deps_add(&have, x.prev);
    }
    for (int mask = 1; mask < f.pof2; mask <<= 1) {
      const int vbase = f.newrank & ~(mask - 1), vpart = vbase ^ mask;
      x.peer = real_of(&f, f.newrank ^ mask);
      x.prev = COLLIE_NO_STEP;
      const int mlo = first_real(&f, vbase), mhi = real_of(&f, vbase + mask - 1) + 1;
      if (mask == 1 && mhi - mlo == 1) { /* just the own block: straight from SEND */
        if (b.len[r]) collie_sched_send(s, x.peer, send0, b.len[r] * es, COLLIE_NODEPS);
      } else {
        x.send = true;
        for_runs(&b, mlo, mhi, xfer_run, &x);
      }
      x.send = false;
      for_runs(&b, first_real(&f, vpart), real_of(&f, vpart + mask - 1) + 1, xfer_run, &x);
      au_deps_add(&have, x.prev);
    }
    if (r < 2 * f.rem) { /* everything but the even neighbour's own block */
      x.peer = r - 1;
      x.send = true;
      for_runs(&b, 0, r - 1, xfer_run, &x);
      for_runs(&b, r, n, xfer_run, &x);
    }
  }
  if (have.failed) s->failed = 1;
  au_deps_free(&have);
  au_blocks_free(&b);
  return au_finish(s);
}
