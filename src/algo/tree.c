/* Tree algorithms: the double binary tree allreduce, binomial trees (broadcast, reduce,
 * scatter, gather) and pipelined chains (broadcast, reduce).
 *
 * Costs use p ranks, n bytes (the vector; for scatter and gather the root's whole buffer),
 * alpha (per message), beta (per byte sent) and gamma (per byte reduced); pipelined
 * algorithms cut the data into k chunks of args->chunk_bytes (64 KiB when 0).
 *
 * Rooted algorithms work on virtual ranks v = (rank - root + p) % p (algo_util.h). Every
 * reduction happens in one place in a fixed order and the result is then only copied, so
 * it is bitwise reproducible and, for allreduce, identical on every rank. */
#include "algo/algo_util.h"

/* ---- double binary tree allreduce ----------------------------------------------------- */

/* One rank's place in a binary tree: parent and up to two children, -1 where absent. */
typedef struct {
  int up, kid[2];
} btree_node_t;

/* NCCL's binary tree over ranks 0..n-1 (ncclGetBtree): rank 0 is the root with one child,
 * the highest power of two below n; a rank r > 0 whose lowest set bit is b has the parent
 * (r ^ b) | (b << 1), or r ^ b when that is out of range, and the children r - b/2 and
 * r + b/2 (the latter halved towards r until it is in range). Ranks with an odd number are
 * the leaves, so about half of the ranks are leaves. */
static btree_node_t btree(int n, int r) {
  btree_node_t t = {-1, {-1, -1}};
  if (r == 0) {
    if (n > 1) t.kid[1] = au_pow2_ge(n) >> 1;
    return t;
  }
  int bit = au_lowbit(r);
  t.up = (r ^ bit) | (bit << 1);
  if (t.up >= n) t.up = r ^ bit;
  int low = bit >> 1;
  if (low) {
    t.kid[0] = r - low;
    while (low && r + low >= n) low >>= 1;
    if (low) t.kid[1] = r + low;
  }
  return t;
}

/* The second tree: the first one shifted by one rank (odd n) or mirrored (even n), so that
 * the leaves of one tree are the inner ranks of the other and every rank's links carry
 * about the same load (NCCL's ncclGetDtree). */
static btree_node_t btree_second(int n, int r) {
  bool shift = n % 2 == 1;
  btree_node_t t = btree(n, shift ? (r - 1 + n) % n : n - 1 - r);
  int *x[3] = {&t.up, &t.kid[0], &t.kid[1]};
  for (int i = 0; i < 3; i++)
    if (*x[i] >= 0) *x[i] = shift ? (*x[i] + 1) % n : n - 1 - *x[i];
  return t;
}

/* One chunk (len bytes at off) of one tree: fold the children's partial results into my
 * own contribution in the receive buffer (first kid[0], then kid[1]: a fixed order), pass
 * the partial result up, take the final result from the parent (the tree's root has it),
 * and pass that down. The root's value is only ever copied, never recomputed. */
static void dtree_chunk(collie_sched_t *s, btree_node_t t, collie_buf_t in, uint64_t off, uint64_t len) {
  const collie_bufref_t local = collie_ref(in, off), acc = collie_ref(COLLIE_BUF_RECV, off);
  uint32_t last = COLLIE_NO_STEP;
  bool partial = false; /* acc holds a partial result (else it is still in local) */
  for (int k = 0; k < 2; k++) {
    if (t.kid[k] < 0) continue;
    last = collie_sched_recv_reduce(s, t.kid[k], partial ? acc : local, acc, len, COLLIE_DEP1(last));
    partial = true;
  }
  if (t.up < 0) {
    /* The root: its partial result is the final one (a single rank only copies). */
    if (!partial && !au_same_bytes(local, acc)) last = collie_sched_copy(s, local, acc, len, COLLIE_NODEPS);
  } else {
    uint32_t sent = collie_sched_send(s, t.up, partial ? acc : local, len, COLLIE_DEP1(last));
    /* The final value overwrites what was just sent (in place, or the partial result). */
    last = collie_sched_recv(s, t.up, acc, len, COLLIE_DEP1(sent));
  }
  for (int k = 0; k < 2; k++)
    if (t.kid[k] >= 0) collie_sched_send(s, t.kid[k], acc, len, COLLIE_DEP1(last));
}

/* Double binary tree allreduce (NCCL). Two binary trees, the second shifted or mirrored
 * so that every rank (all but one when p is odd) is a leaf in one of them, each reduce and
 * broadcast one half of the vector. Each half is pipelined in chunks: a chunk's reduction climbs the tree
 * while earlier chunks' results are already coming down. The chunks of the two trees are
 * interleaved (chunk 0 of tree 0, chunk 0 of tree 1, chunk 1 of tree 0, ...); both ends of
 * every link emit them in that order, so FIFO matching pairs the right messages.
 *
 * Cost: about (2 ceil(log2 p) + k) alpha + 2 n beta + n gamma for k chunks per tree: an inner
 * rank receives and sends 1.5 times its half, a leaf once; the log term fills the pipeline. */
COLLIE_ALGO_DECL(collie_tree_allreduce) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, r = args->rank;
  const uint64_t es = args->elem_size, count = args->count, ce = au_chunk_elems(args);
  const collie_buf_t in = args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND;
  const btree_node_t tree[2] = {btree(n, r), btree_second(n, r)};
  /* Tree 0 takes the first half (the larger one when count is odd), tree 1 the rest. */
  const uint64_t start[2] = {0, (count + 1) / 2}, len[2] = {(count + 1) / 2, count / 2};
  const uint64_t nchunks[2] = {au_div_up(len[0], ce), au_div_up(len[1], ce)};
  for (uint64_t c = 0; c < nchunks[0]; c++) /* nchunks[0] >= nchunks[1] */
    for (int t = 0; t < 2; t++) {
      if (c >= nchunks[t]) continue;
      uint64_t first = start[t] + c * ce, elems = au_min64(ce, len[t] - c * ce);
      dtree_chunk(s, tree[t], in, first * es, elems * es);
    }
  return au_finish(s);
}

/* ---- binomial trees ------------------------------------------------------------------- */

/* Binomial broadcast: the root sends to the roots of its subtrees (largest first), each of
 * which does the same in its own subtree after receiving: ceil(log2 p) rounds.
 *
 * Cost: ceil(log2 p) (alpha + n beta). */
COLLIE_ALGO_DECL(collie_binomial_broadcast) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const uint64_t len = (uint64_t)args->count * args->elem_size;
  if (!len) return au_finish(s);
  const collie_bufref_t recv = collie_ref(COLLIE_BUF_RECV, 0);
  collie_bufref_t src = recv;
  if (args->rank == args->root && !args->in_place) {
    src = collie_ref(COLLIE_BUF_SEND, 0); /* forward from the source, not after the copy */
    collie_sched_copy(s, src, recv, len, COLLIE_NODEPS);
  }
  const au_ring_t all = {args->nranks, args->rank, NULL};
  au_binomial_bcast(s, &all, args->root, src, len, COLLIE_NO_STEP);
  return au_finish(s);
}

/* Binomial reduce: each rank folds its children's subtree results into its own
 * contribution, smallest subtree first (a fixed order), and sends the result to its
 * parent. Non-root ranks have no receive buffer and accumulate in scratch; leaves send
 * their input as it is.
 *
 * Cost: ceil(log2 p) alpha + per level n max(beta/2, gamma): a child stages its message
 * chunk by chunk while its parent reduces each chunk straight from the staging. */
COLLIE_ALGO_DECL(collie_binomial_reduce) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, root = args->root, v = au_vrank(args->rank, root, n);
  const uint64_t len = (uint64_t)args->count * args->elem_size;
  if (!len) return au_finish(s);
  const collie_bufref_t local = collie_ref(v == 0 && args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND, 0);
  const collie_bufref_t acc = collie_ref(v == 0 ? COLLIE_BUF_RECV : COLLIE_BUF_SCRATCH, 0);
  int kids[AU_MAX_CHILDREN], nk = au_binomial_children(v, n, kids);
  uint32_t last = COLLIE_NO_STEP;
  for (int i = nk - 1; i >= 0; i--) /* kids[] lists the largest subtree first */
    last = collie_sched_recv_reduce(s, au_real(kids[i], root, n), i == nk - 1 ? local : acc, acc, len,
                                    COLLIE_DEP1(last));
  if (v == 0) {
    if (!nk && !au_same_bytes(local, acc)) collie_sched_copy(s, local, acc, len, COLLIE_NODEPS);
  } else {
    if (nk) s->scratch_bytes = len;
    collie_sched_send(s, au_real(au_binomial_parent(v), root, n), nk ? acc : local, len, COLLIE_DEP1(last));
  }
  return au_finish(s);
}

/* The blocks of virtual ranks [v, v + size) are contiguous in the root's buffer unless they
 * wrap past real rank p - 1. Messages between the root and a subtree are therefore split
 * in two at the wrap: *first blocks starting at real block (v + root) % p, then the rest
 * starting at real block 0. Returns *first; the rest is size - *first. */
static int split_at_wrap(int v, int size, int root, int n) {
  int real = au_real(v, root, n);
  return size < n - real ? size : n - real;
}

/* Binomial scatter: the root sends each subtree the blocks of all its ranks in one message
 * (two when they wrap around the end of the root's buffer); each inner rank keeps its
 * subtree's blocks in scratch in virtual rank order, keeps its own and passes the rest on.
 *
 * Cost: ceil(log2 p) alpha + (p-1)/p n beta. */
COLLIE_ALGO_DECL(collie_binomial_scatter) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, root = args->root, v = au_vrank(args->rank, root, n);
  const uint64_t blk = (uint64_t)args->count * args->elem_size;
  if (!blk) return au_finish(s);
  const collie_bufref_t recv = collie_ref(COLLIE_BUF_RECV, 0);
  int kids[AU_MAX_CHILDREN], nk = au_binomial_children(v, n, kids);

  if (v == 0) {
    /* In place the root's block already is its receive buffer. */
    if (!args->in_place)
      collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, (uint64_t)root * blk), recv, blk, COLLIE_NODEPS);
    for (int i = 0; i < nk; i++) {
      int c = kids[i], size = au_binomial_size(c, n), first = split_at_wrap(c, size, root, n);
      int to = au_real(c, root, n);
      collie_sched_send(s, to, collie_ref(COLLIE_BUF_SEND, (uint64_t)to * blk), (uint64_t)first * blk,
                        COLLIE_NODEPS);
      if (size > first)
        collie_sched_send(s, to, collie_ref(COLLIE_BUF_SEND, 0), (uint64_t)(size - first) * blk, COLLIE_NODEPS);
    }
    return au_finish(s);
  }

  const int parent = au_binomial_parent(v), from = au_real(parent, root, n), size = au_binomial_size(v, n);
  if (size == 1) { /* a leaf: its block straight into place */
    collie_sched_recv(s, from, recv, blk, COLLIE_NODEPS);
    return au_finish(s);
  }
  s->scratch_bytes = (uint64_t)size * blk; /* virtual block v + i at i * blk */
  int first = parent == 0 ? split_at_wrap(v, size, root, n) : size;
  uint32_t got0 = collie_sched_recv(s, from, collie_ref(COLLIE_BUF_SCRATCH, 0), (uint64_t)first * blk, COLLIE_NODEPS);
  uint32_t got1 = COLLIE_NO_STEP;
  if (size > first)
    got1 = collie_sched_recv(s, from, collie_ref(COLLIE_BUF_SCRATCH, (uint64_t)first * blk),
                             (uint64_t)(size - first) * blk, COLLIE_NODEPS);
  collie_sched_copy(s, collie_ref(COLLIE_BUF_SCRATCH, 0), recv, blk, COLLIE_DEP2(got0, got1));
  for (int i = 0; i < nk; i++) {
    int c = kids[i];
    collie_sched_send(s, au_real(c, root, n), collie_ref(COLLIE_BUF_SCRATCH, (uint64_t)(c - v) * blk),
                      (uint64_t)au_binomial_size(c, n) * blk, COLLIE_DEP2(got0, got1));
  }
  return au_finish(s);
}

/* Binomial gather: the mirror image of the scatter. Each inner rank collects its subtree's
 * blocks in scratch in virtual rank order (its own first) and sends them to its parent in
 * one message; the root receives each subtree's blocks straight into place (in two
 * messages when they wrap around the end of its buffer).
 *
 * Cost: ceil(log2 p) alpha + (p-1)/p n beta. */
COLLIE_ALGO_DECL(collie_binomial_gather) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, root = args->root, v = au_vrank(args->rank, root, n);
  const uint64_t blk = (uint64_t)args->count * args->elem_size;
  if (!blk) return au_finish(s);
  const collie_bufref_t send = collie_ref(COLLIE_BUF_SEND, 0);
  int kids[AU_MAX_CHILDREN], nk = au_binomial_children(v, n, kids);

  if (v == 0) {
    /* In place the root's block already is in its receive buffer. */
    if (!args->in_place) collie_sched_copy(s, send, collie_ref(COLLIE_BUF_RECV, (uint64_t)root * blk), blk, COLLIE_NODEPS);
    for (int i = 0; i < nk; i++) {
      int c = kids[i], size = au_binomial_size(c, n), first = split_at_wrap(c, size, root, n);
      int from = au_real(c, root, n);
      collie_sched_recv(s, from, collie_ref(COLLIE_BUF_RECV, (uint64_t)from * blk), (uint64_t)first * blk,
                        COLLIE_NODEPS);
      if (size > first)
        collie_sched_recv(s, from, collie_ref(COLLIE_BUF_RECV, 0), (uint64_t)(size - first) * blk, COLLIE_NODEPS);
    }
    return au_finish(s);
  }

  const int parent = au_binomial_parent(v), to = au_real(parent, root, n), size = au_binomial_size(v, n);
  if (size == 1) { /* a leaf: its block as it is */
    collie_sched_send(s, to, send, blk, COLLIE_NODEPS);
    return au_finish(s);
  }
  s->scratch_bytes = (uint64_t)size * blk; /* virtual block v + i at i * blk */
  uint32_t have[AU_MAX_CHILDREN + 1];
  have[0] = collie_sched_copy(s, send, collie_ref(COLLIE_BUF_SCRATCH, 0), blk, COLLIE_NODEPS);
  for (int i = 0; i < nk; i++) {
    int c = kids[i];
    have[i + 1] = collie_sched_recv(s, au_real(c, root, n), collie_ref(COLLIE_BUF_SCRATCH, (uint64_t)(c - v) * blk),
                                    (uint64_t)au_binomial_size(c, n) * blk, COLLIE_NODEPS);
  }
  int first = parent == 0 ? split_at_wrap(v, size, root, n) : size;
  collie_sched_send(s, to, collie_ref(COLLIE_BUF_SCRATCH, 0), (uint64_t)first * blk, have, (uint32_t)nk + 1);
  if (size > first)
    collie_sched_send(s, to, collie_ref(COLLIE_BUF_SCRATCH, (uint64_t)first * blk), (uint64_t)(size - first) * blk,
                      have, (uint32_t)nk + 1);
  return au_finish(s);
}

/* ---- chains --------------------------------------------------------------------------- */

/* Chain broadcast: root -> root+1 -> ... -> root+p-1, pipelined in chunks: each rank
 * forwards a chunk as soon as it has it, so all links are busy at once.
 *
 * Cost: (p - 2 + k) (alpha + n/k beta). */
COLLIE_ALGO_DECL(collie_chain_broadcast) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, root = args->root, v = au_vrank(args->rank, root, n);
  const uint64_t es = args->elem_size, count = args->count, ce = au_chunk_elems(args);
  if (!count) return au_finish(s);
  const int prev = au_real(v - 1 + n, root, n), next = v + 1 < n ? au_real(v + 1, root, n) : -1;
  collie_buf_t src = COLLIE_BUF_RECV;
  if (v == 0 && !args->in_place) {
    src = COLLIE_BUF_SEND; /* forward from the source, not after the copy */
    collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, 0), collie_ref(COLLIE_BUF_RECV, 0), count * es, COLLIE_NODEPS);
  }
  for (uint64_t first = 0; first < count; first += ce) {
    uint64_t off = first * es, len = au_min64(ce, count - first) * es;
    uint32_t got = COLLIE_NO_STEP;
    if (v > 0) got = collie_sched_recv(s, prev, collie_ref(COLLIE_BUF_RECV, off), len, COLLIE_NODEPS);
    if (next >= 0) collie_sched_send(s, next, collie_ref(src, off), len, COLLIE_DEP1(got));
  }
  return au_finish(s);
}

/* Scratch slots per rank for chain reduce: chunk c uses slot c % CHAIN_SLOTS, so scratch
 * stays small however long the vector is. */
#define CHAIN_SLOTS 4

/* Chain reduce: root+p-1 -> ... -> root+1 -> root, pipelined in chunks. Each rank folds
 * its own contribution with the partial result of the ranks after it and passes the chunk
 * on, so the result is x_root (op) (x_root+1 (op) (... (op) x_root+p-1)), a fixed order.
 * Non-root ranks accumulate in a few chunk-sized scratch slots; a slot is reused once the
 * chunk in it has been sent on.
 *
 * Cost: (p - 2 + k) (alpha + n/k beta + n/k gamma). */
COLLIE_ALGO_DECL(collie_chain_reduce) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  const int n = args->nranks, root = args->root, v = au_vrank(args->rank, root, n);
  const uint64_t es = args->elem_size, count = args->count, ce = au_chunk_elems(args);
  if (!count) return au_finish(s);
  const collie_buf_t in = v == 0 && args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND;
  if (n == 1) return au_copy_only(args, s, count);
  const int prev = v > 0 ? au_real(v - 1, root, n) : -1, next = v + 1 < n ? au_real(v + 1, root, n) : -1;
  if (v > 0 && next >= 0) s->scratch_bytes = au_min64(count, CHAIN_SLOTS * ce) * es;
  uint32_t slot_sent[CHAIN_SLOTS] = {COLLIE_NO_STEP, COLLIE_NO_STEP, COLLIE_NO_STEP, COLLIE_NO_STEP};
  uint64_t c = 0;
  for (uint64_t first = 0; first < count; first += ce, c++) {
    uint64_t off = first * es, len = au_min64(ce, count - first) * es;
    const collie_bufref_t local = collie_ref(in, off);
    if (next < 0) { /* the last rank: its contribution as it is */
      collie_sched_send(s, prev, local, len, COLLIE_NODEPS);
      continue;
    }
    const int slot = (int)(c % CHAIN_SLOTS);
    const collie_bufref_t acc =
        v == 0 ? collie_ref(COLLIE_BUF_RECV, off) : collie_ref(COLLIE_BUF_SCRATCH, (uint64_t)slot * ce * es);
    /* The slot is free again once its previous chunk has left. */
    uint32_t done = collie_sched_recv_reduce(s, next, local, acc, len, COLLIE_DEP1(slot_sent[slot]));
    if (v > 0) slot_sent[slot] = collie_sched_send(s, prev, acc, len, COLLIE_DEP1(done));
  }
  return au_finish(s);
}
