/* Hierarchical allreduce and broadcast (at the end): inside a host first, then between
 * hosts (what NCCL and Open MPI do across nodes). A group is the ranks that reach each
 * other through shared memory (args->group_of): h groups of L ranks each. The allreduce:
 *
 *  1. The group reduce-scatters the vector on L blocks (a ring, ring.c's conventions):
 *     local index i ends with block B = i+1 (mod L), reduced over its group.
 *  2. The h ranks of local index i, one per group, allreduce block B in place with the
 *     ring allreduce (ring.c, au_ring_allreduce).
 *  3. The group allgathers the blocks (a ring: round k sends block i+1-k, receives i-k).
 *
 * Between hosts each rank sends 2 (h-1)/h n/L bytes, the L ranks of a host at once over
 * their own connections: a host's link carries 2 (h-1)/h n in all, against the flat ring's
 * 2 (p-1)/p n through one connection, in 2 (h-1) rounds instead of 2 (p-1). Every phase is
 * pipelined in chunks of chunk_bytes; one empty step joins a phase's last writes for the
 * next phase (its reads of the block wait for them).
 *
 * Cost (c1, c2 chunks per block of phases 1 and 3, and 2):
 *   2 (L-1) c1 alpha_shm + 2 (L-1)/L n beta_shm + 2 (h-1) c2 alpha_tcp
 *   + 2 (h-1)/h n beta_tcp (a host's link) + (L-1)/L n gamma + (h-1)/h n/L gamma.
 * Serves h >= 2 groups of the same size L >= 2; declines otherwise (the flat algorithms
 * serve those). Bitwise identical results on every rank: each element is reduced in one
 * fixed order on one rank and only copied from there. */
#include <stdlib.h>

#include "algo/algo_util.h"

/* One empty step that completes when all of l's steps have; l is emptied. */
static uint32_t join(collie_sched_t *s, au_deps_t *l) {
  const collie_bufref_t none = collie_ref(COLLIE_BUF_RECV, 0);
  uint32_t j = collie_sched_copy(s, none, none, 0, l->v, l->n);
  au_deps_clear(l);
  return j;
}

/* Phase 1, the ring reduce-scatter of the group (ring.c's conventions): round k, member m
 * sends block m-k and receive-reduces block m-k-1 (its own contribution from `in` as the
 * local operand), so that m ends with block m+1 complete in the receive buffer. Round 0
 * sends from `in`, later rounds forward partial sums. rs_send[k * maxch + j]: round k's
 * send of chunk j; prev[j]: chunk j's last receive. */
static void ring_rs(collie_sched_t *s, const collie_coll_args_t *a, const au_ring_t *g, collie_buf_t in,
                    uint32_t *rs_send, uint32_t *prev, uint64_t maxch) {
  const uint64_t es = a->elem_size, ce = au_chunk_elems(a), len = a->count;
  const int right = g->rank[(g->me + 1) % g->n], left = g->rank[(g->me + g->n - 1) % g->n];
  for (uint64_t j = 0; j < maxch; j++) prev[j] = COLLIE_NO_STEP;
  for (int k = 0; k < g->n - 1; k++) {
    const int sb = au_mod(g->me - k, g->n), rb = au_mod(g->me - k - 1, g->n);
    const uint64_t soff = au_block_start(len, g->n, sb), slen = au_block_len(len, g->n, sb);
    const uint64_t roff = au_block_start(len, g->n, rb), rlen = au_block_len(len, g->n, rb);
    const collie_buf_t sbuf = k == 0 ? in : COLLIE_BUF_RECV;
    for (uint64_t j = 0; j * ce < slen; j++)
      rs_send[(size_t)k * maxch + j] = collie_sched_send(s, right, au_at(sbuf, soff + j * ce, es),
                                                         au_chunk_len(slen, ce, j) * es, COLLIE_DEP1(prev[j]));
    for (uint64_t j = 0; j * ce < rlen; j++)
      prev[j] = collie_sched_recv_reduce(s, left, au_at(in, roff + j * ce, es),
                                         au_at(COLLIE_BUF_RECV, roff + j * ce, es), au_chunk_len(rlen, ce, j) * es,
                                         COLLIE_NODEPS);
  }
}

/* Phase 3, the ring allgather of the group: round k, member m sends block m+1-k and
 * receives block m-k. Round 0's sends wait for `after` (phase 2's writes of block m+1),
 * later ones for the chunk's previous receive; a receive waits for phase 1's send of the
 * same bytes (rs_send). */
static void ring_ag(collie_sched_t *s, const collie_coll_args_t *a, const au_ring_t *g, uint32_t after,
                    const uint32_t *rs_send, uint32_t *prev, uint64_t maxch) {
  const uint64_t es = a->elem_size, ce = au_chunk_elems(a), len = a->count;
  const int right = g->rank[(g->me + 1) % g->n], left = g->rank[(g->me + g->n - 1) % g->n];
  for (int k = 0; k < g->n - 1; k++) {
    const int sb = au_mod(g->me + 1 - k, g->n), rb = au_mod(g->me - k, g->n);
    const uint64_t soff = au_block_start(len, g->n, sb), slen = au_block_len(len, g->n, sb);
    const uint64_t roff = au_block_start(len, g->n, rb), rlen = au_block_len(len, g->n, rb);
    for (uint64_t j = 0; j * ce < slen; j++)
      collie_sched_send(s, right, au_at(COLLIE_BUF_RECV, soff + j * ce, es), au_chunk_len(slen, ce, j) * es,
                        COLLIE_DEP1(k == 0 ? after : prev[j]));
    for (uint64_t j = 0; j * ce < rlen; j++)
      prev[j] = collie_sched_recv(s, left, au_at(COLLIE_BUF_RECV, roff + j * ce, es), au_chunk_len(rlen, ce, j) * es,
                                  COLLIE_DEP1(rs_send[(size_t)k * maxch + j]));
  }
}

/* The two rings of this rank: its group (local), and the ranks of one local index in
 * every group (cross: the index of rank `of`, or this rank's when of < 0), in group order,
 * cross->me being this rank's group. Returns the members' memory, which the caller frees;
 * NULL with *res set when the groups are not h >= 2 of L >= 2 (COLLIE_ERR_INVALID_ARGUMENT)
 * or memory is short. */
static int *find_rings(const collie_coll_args_t *a, int of, au_ring_t *local, au_ring_t *cross, collie_result_t *res) {
  const int p = a->nranks, h = a->ngroups;
  *res = COLLIE_ERR_INVALID_ARGUMENT;
  if (!a->group_of || h < 2 || p % h || p / h < 2) return NULL;
  const int L = p / h;
  int *buf = malloc(sizeof(int) * (3 * (size_t)p + 1));
  if (!buf) {
    *res = COLLIE_ERR_INTERNAL;
    return NULL;
  }
  int *pos = buf + p, *seen = buf + 2 * p; /* index within its group; members seen per group */
  for (int g = 0; g < h; g++) seen[g] = 0;
  for (int r = 0; r < p; r++) {
    const int g = a->group_of[r];
    if (g < 0 || g >= h || seen[g] == L) {
      free(buf);
      return NULL;
    }
    pos[r] = seen[g]++;
  }
  const int me = pos[a->rank], mine = a->group_of[a->rank], idx = of < 0 ? me : pos[of];
  int *lr = buf, *cr = buf + L;
  for (int r = 0; r < p; r++) {
    if (a->group_of[r] == mine) lr[pos[r]] = r;
    if (pos[r] == idx) cr[a->group_of[r]] = r;
  }
  *local = (au_ring_t){L, me, lr};
  *cross = (au_ring_t){h, mine, cr};
  *res = COLLIE_SUCCESS;
  return buf;
}

COLLIE_ALGO_DECL(collie_hier_allreduce) {
  if (!au_valid(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  au_ring_t local, cross;
  collie_result_t res;
  int *buf = find_rings(args, -1, &local, &cross, &res);
  if (!buf) return res;
  const uint64_t count = args->count, ce = au_chunk_elems(args);
  if (count == 0) {
    free(buf);
    return COLLIE_SUCCESS;
  }
  const collie_buf_t in = args->in_place ? COLLIE_BUF_RECV : COLLIE_BUF_SEND;
  const int L = local.n, B = (local.me + 1) % L;
  const uint64_t boff = au_block_start(count, L, B), blen = au_block_len(count, L, B);
  const uint64_t max1 = au_div_up(au_block_len(count, L, 0), ce);
  uint32_t *rs1 = malloc(sizeof(uint32_t) * ((size_t)(L - 1) * max1 + 1));
  uint32_t *prev = malloc(sizeof(uint32_t) * (max1 + 1));
  au_deps_t done = {0};
  res = COLLIE_ERR_INTERNAL;
  if (!rs1 || !prev) goto out;

  /* 1: reduce-scatter in the group; block B's last receives are what phase 2 reads. */
  ring_rs(s, args, &local, in, rs1, prev, max1);
  for (uint64_t j = 0; j * ce < blen; j++) au_deps_add(&done, prev[j]);
  uint32_t after = join(s, &done);

  /* 2: allreduce of block B between the groups, in place (ring.c's ring). */
  if (blen) {
    if (au_ring_allreduce(s, args, &cross, boff, blen, COLLIE_BUF_RECV, after, &done)) goto out;
    after = join(s, &done);
  }

  /* 3: allgather in the group: block B goes first, once phase 2 has written it. */
  ring_ag(s, args, &local, after, rs1, prev, max1);
  res = done.failed ? COLLIE_ERR_INTERNAL : au_finish(s);
out:
  au_deps_free(&done);
  free(rs1);
  free(prev);
  free(buf);
  return res;
}

/* Hierarchical broadcast: a binomial tree between hosts among the ranks of the root's
 * local index (one per host), then a binomial tree inside every host from that rank.
 * A byte crosses between hosts once per host (ceil(log2 h) rounds), against ceil(log2 p)
 * rounds of a flat binomial tree, whose hops may all cross.
 *
 * Cost: ceil(log2 h) (alpha_tcp + n beta_tcp) + ceil(log2 L) (alpha_shm + n beta_shm). */
COLLIE_ALGO_DECL(collie_hier_broadcast) {
  if (!au_valid_rooted(args)) return COLLIE_ERR_INVALID_ARGUMENT;
  au_ring_t local, cross; /* cross: the ranks of the root's local index */
  collie_result_t res;
  int *buf = find_rings(args, args->root, &local, &cross, &res);
  if (!buf) return res;
  /* the root's local index: find_rings leaves every rank's after the members (pos) */
  const int root_idx = buf[args->nranks + args->root], root_group = args->group_of[args->root];
  const uint64_t len = (uint64_t)args->count * args->elem_size;
  if (len) {
    const bool root = args->rank == args->root;
    const collie_bufref_t recv = collie_ref(COLLIE_BUF_RECV, 0);
    /* The root forwards from its source, not after its own copy. */
    collie_bufref_t src = root && !args->in_place ? collie_ref(COLLIE_BUF_SEND, 0) : recv;
    if (root && !args->in_place) collie_sched_copy(s, src, recv, len, COLLIE_NODEPS);
    uint32_t got = COLLIE_NO_STEP;
    if (local.me == root_idx) { /* between hosts */
      got = au_binomial_bcast(s, &cross, root_group, src, len, COLLIE_NO_STEP);
      if (!root) src = recv;
    }
    au_binomial_bcast(s, &local, root_idx, src, len, got); /* inside this host */
  }
  free(buf);
  return au_finish(s);
}
