/* Composite algorithms: a rooted collective built from two bandwidth-efficient halves, for
 * long vectors where a tree's n*log(p) bytes per rank would dominate.
 *
 * Both cut the vector into p blocks and give block b to virtual rank b
 * (v = (rank - root + p) % p, algo_util.h). A binomial subtree then owns a contiguous
 * range of blocks, so every message is one contiguous range at its natural offset, with
 * no packing. Costs use p ranks, n bytes, alpha (per message), beta (per byte sent) and
 * gamma (per byte reduced). */
#include "algo/algo_util.h"

/* Byte range of the blocks of virtual ranks [v, v + size). */
typedef struct {
  uint64_t off, len;
} range_t;

static range_t blocks(const collie_coll_args_t *a, int v, int size) {
  uint64_t lo = au_block_start(a->count, a->nranks, v), hi = au_block_start(a->count, a->nranks, v + size);
  range_t r = {lo * a->elem_size, (hi - lo) * a->elem_size};
  return r;
}

static bool owns(int w, int b, int n) { return b >= w && b < w + au_binomial_size(w, n); }

/* Scatter-allgather broadcast (van de Geijn): a binomial scatter hands each virtual rank
 * the blocks of its subtree (so rank v ends with at least block v), then a ring allgather
 * in virtual rank order completes every rank's copy. In the ring a block travels
 * v -> v+1 -> ... and is not sent to a rank that already got it from the scatter (the
 * root has everything and receives nothing).
 *
 * Cost: (ceil(log2 p) + p - 1) alpha + 2 (p-1)/p n beta, against ceil(log2 p) n beta for a
 * binomial broadcast. */
COLLIE_ALGO_DECL(collie_scatter_allgather_broadcast) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, root = args->root, v = au_vrank(args->rank, root, n);
  const uint64_t total = (uint64_t)args->count * args->elem_size;
  if (!total) return au_finish(s);
  const collie_bufref_t recv = collie_ref(COLLIE_BUF_RECV, 0);

  /* The root reads every block from its source; others from what they received. */
  collie_buf_t src = COLLIE_BUF_RECV;
  if (v == 0 && !args->in_place) {
    src = COLLIE_BUF_SEND;
    collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, 0), recv, total, COLLIE_NODEPS);
  }

  /* Phase 1: binomial scatter of block ranges, straight into place. */
  uint32_t scattered = COLLIE_NO_STEP; /* my subtree's range has arrived */
  if (v > 0) {
    range_t mine = blocks(args, v, au_binomial_size(v, n));
    if (mine.len)
      scattered = collie_sched_recv(s, au_real(au_binomial_parent(v), root, n), collie_ref(COLLIE_BUF_RECV, mine.off),
                                    mine.len, COLLIE_NODEPS);
  }
  int kids[AU_MAX_CHILDREN], nk = au_binomial_children(v, n, kids);
  for (int i = 0; i < nk; i++) {
    range_t sub = blocks(args, kids[i], au_binomial_size(kids[i], n));
    if (sub.len)
      collie_sched_send(s, au_real(kids[i], root, n), collie_ref(src, sub.off), sub.len, COLLIE_DEP1(scattered));
  }

  /* Phase 2: ring allgather. In step t rank v passes block v - t on to v + 1 and takes
   * block v - 1 - t from v - 1, skipping blocks the receiver already owns. A block to pass
   * on came either from the scatter or from the previous step's receive. */
  const int right = au_real((v + 1) % n, root, n), left = au_real((v - 1 + n) % n, root, n);
  uint32_t ring_got = COLLIE_NO_STEP; /* the previous step's receive */
  for (int t = 0; t < n - 1; t++) {
    int out = au_mod(v - t, n), in = au_mod(v - 1 - t, n);
    range_t bo = blocks(args, out, 1), bi = blocks(args, in, 1);
    if (bo.len && !owns((v + 1) % n, out, n))
      collie_sched_send(s, right, collie_ref(src, bo.off), bo.len, COLLIE_DEP1(owns(v, out, n) ? scattered : ring_got));
    ring_got = COLLIE_NO_STEP;
    /* Nothing else touches a block this rank does not own until it arrives. */
    if (bi.len && !owns(v, in, n))
      ring_got = collie_sched_recv(s, left, collie_ref(COLLIE_BUF_RECV, bi.off), bi.len, COLLIE_NODEPS);
  }
  return au_finish(s);
}

/* Reduce-scatter + gather reduce (Rabenseifner's reduce, with a ring for the first half so
 * that any p works): a ring reduce-scatter in virtual rank order leaves block v, fully
 * reduced, at virtual rank v; a binomial gather then brings the blocks to the root. Each
 * block is reduced in one fixed order, along the ring starting after its owner.
 * Non-root ranks accumulate in scratch, laid out like the vector.
 *
 * Cost: (p - 1 + ceil(log2 p)) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma, against
 * about ceil(log2 p) n max(beta/2, gamma) for a binomial reduce (tree.c). */
COLLIE_ALGO_DECL(collie_rs_gather_reduce) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, root = args->root, v = au_vrank(args->rank, root, n);
  const uint64_t total = (uint64_t)args->count * args->elem_size;
  if (!total) return au_finish(s);
  const collie_buf_t in = v == 0 && args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND;
  const collie_buf_t acc = v == 0 ? COLLIE_BUF_RECV : COLLIE_BUF_SCRATCH;
  if (n == 1) return au_copy_only(args, s, args->count);
  if (v > 0) s->scratch_bytes = total;

  /* Ring reduce-scatter: in step t send block v-1-t to v+1 (at t = 0 my own contribution,
   * later what the previous step produced) and fold block v-2-t from v-1 into my own
   * contribution. The sends form a chain, so the last one implies all of them. */
  const int right = au_real((v + 1) % n, root, n), left = au_real((v - 1 + n) % n, root, n);
  uint32_t last_send = COLLIE_NO_STEP, last_rr = COLLIE_NO_STEP, prev_rr = COLLIE_NO_STEP;
  for (int t = 0; t < n - 1; t++) {
    int out = au_mod(v - 1 - t, n), inb = au_mod(v - 2 - t, n);
    range_t bo = blocks(args, out, 1), bi = blocks(args, inb, 1);
    if (bo.len)
      last_send = collie_sched_send(s, right, collie_ref(t == 0 ? in : acc, bo.off), bo.len,
                                    COLLIE_DEP2(last_send, prev_rr));
    prev_rr = COLLIE_NO_STEP;
    if (bi.len)
      last_rr = prev_rr = collie_sched_recv_reduce(s, left, collie_ref(in, bi.off), collie_ref(acc, bi.off), bi.len,
                                                   COLLIE_NODEPS);
  }

  /* Binomial gather of the reduced blocks, each subtree's range straight into place. The
   * receives wait for the reduce-scatter to finish with those bytes. */
  int kids[AU_MAX_CHILDREN], nk = au_binomial_children(v, n, kids);
  uint32_t have[AU_MAX_CHILDREN + 2];
  uint32_t nh = 0;
  have[nh++] = last_send;
  have[nh++] = last_rr;
  for (int i = 0; i < nk; i++) {
    range_t sub = blocks(args, kids[i], au_binomial_size(kids[i], n));
    if (sub.len)
      have[nh++] = collie_sched_recv(s, au_real(kids[i], root, n), collie_ref(acc, sub.off), sub.len,
                                     COLLIE_DEP2(last_send, last_rr));
  }
  if (v > 0) {
    range_t mine = blocks(args, v, au_binomial_size(v, n));
    if (mine.len)
      collie_sched_send(s, au_real(au_binomial_parent(v), root, n), collie_ref(acc, mine.off), mine.len, have, nh);
  }
  return au_finish(s);
}
