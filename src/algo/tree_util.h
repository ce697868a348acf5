/* Small helpers shared by the direct, tree, composite and barrier builders: argument
 * checks, block partitioning, chunking, and the binomial tree over virtual ranks.
 *
 * Rooted algorithms work on virtual ranks v = (rank - root + n) % n, so the root is
 * always virtual rank 0 and one tree shape serves every root. */
#ifndef COLLIE_TREE_UTIL_H
#define COLLIE_TREE_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "algo/algo_impl.h"

/* Pipelining granularity when the caller gives none. */
#define TU_DEFAULT_CHUNK_BYTES ((uint64_t)64 * 1024)

/* A binomial node has at most one child per bit of n: 32 covers every int. */
#define TU_MAX_CHILDREN 32

static inline bool tu_valid(const collie_coll_args_t *a) {
  return a && a->nranks >= 1 && a->rank >= 0 && a->rank < a->nranks && a->elem_size > 0;
}

static inline bool tu_valid_rooted(const collie_coll_args_t *a) {
  return tu_valid(a) && a->root >= 0 && a->root < a->nranks;
}

static inline collie_result_t tu_finish(const collie_sched_t *s) {
  return s->failed ? COLLIE_ERR_INTERNAL : COLLIE_SUCCESS;
}

static inline uint64_t tu_min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Block i of `count` elements split into n near-equal blocks (the first count % n blocks
 * get one element more), in elements. Blocks are contiguous and in index order. */
static inline uint64_t tu_block_start(uint64_t count, int n, int i) {
  uint64_t q = count / (uint64_t)n, r = count % (uint64_t)n;
  return (uint64_t)i * q + tu_min64((uint64_t)i, r);
}

static inline uint64_t tu_block_len(uint64_t count, int n, int i) {
  return count / (uint64_t)n + ((uint64_t)i < count % (uint64_t)n ? 1u : 0u);
}

/* Elements per pipeline chunk: args->chunk_bytes (64 KiB when 0), at least one element. */
static inline uint64_t tu_chunk_elems(const collie_coll_args_t *a) {
  uint64_t bytes = a->chunk_bytes ? (uint64_t)a->chunk_bytes : TU_DEFAULT_CHUNK_BYTES;
  uint64_t e = bytes / a->elem_size;
  return e ? e : 1;
}

static inline uint64_t tu_div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static inline int tu_vrank(int rank, int root, int n) { return (rank - root + n) % n; }
static inline int tu_real(int v, int root, int n) { return (v + root) % n; }

static inline int tu_lowbit(int v) { return v & -v; }

/* Smallest power of two >= n (n >= 1). */
static inline int tu_pow2_ge(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

/* Binomial tree on virtual ranks 0..n-1 rooted at 0: the parent of v > 0 is v - lowbit(v);
 * the children of v are v + m for masks m below lowbit(v) (below pow2_ge(n) at the root)
 * with v + m < n. The subtree of v is the contiguous range [v, v + tu_binomial_size(v)). */
static inline int tu_binomial_parent(int v) { return v - tu_lowbit(v); }

static inline int tu_binomial_size(int v, int n) {
  if (v == 0) return n;
  int l = tu_lowbit(v);
  return l < n - v ? l : n - v;
}

/* The largest mask a child of v can have; children are v + m for m = top, top/2, ..., 1. */
static inline int tu_binomial_top_mask(int v, int n) {
  return (v == 0 ? tu_pow2_ge(n) : tu_lowbit(v)) >> 1;
}

/* Children of v, largest subtree first, written to kids[]; returns how many. */
static inline int tu_binomial_children(int v, int n, int kids[TU_MAX_CHILDREN]) {
  int k = 0;
  for (int m = tu_binomial_top_mask(v, n); m >= 1; m >>= 1)
    if (v + m < n) kids[k++] = v + m;
  return k;
}

#endif /* COLLIE_TREE_UTIL_H */
