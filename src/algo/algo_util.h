/* Helpers shared by every builder in src/algo: argument checks, block partitioning,
 * chunking for pipelining, virtual ranks and the binomial tree of rooted algorithms, the
 * blocks of v-variants, growable dependency lists and a copier that merges adjacent copies
 * into one step.
 *
 * Rooted algorithms work on virtual ranks v = (rank - root + n) % n, so the root is
 * always virtual rank 0 and one tree shape serves every root. */
#ifndef COLLIE_ALGO_UTIL_H
#define COLLIE_ALGO_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "algo/algo_impl.h"

/* Pipelining granularity when the caller gives none. */
#define AU_DEFAULT_CHUNK_BYTES ((uint64_t)64 * 1024)

/* A binomial node has at most one child per bit of n: 32 covers every int. */
#define AU_MAX_CHILDREN 32

/* Arguments every builder needs; v-variants also need their arrays. */
bool au_valid(const collie_coll_args_t *a);

/* au_valid, and a root that is one of the ranks. */
static inline bool au_valid_rooted(const collie_coll_args_t *a) {
  return au_valid(a) && a->root >= 0 && a->root < a->nranks;
}

static inline collie_result_t au_finish(const collie_sched_t *s) {
  return s->failed ? COLLIE_ERR_INTERNAL : COLLIE_SUCCESS;
}

/* One rank alone: the result is its input, copied unless in place; elems elements. */
collie_result_t au_copy_only(const collie_coll_args_t *a, collie_sched_t *s, uint64_t elems);

/* elem_off elements into buf, as a byte reference. */
static inline collie_bufref_t au_at(collie_buf_t buf, uint64_t elem_off, uint64_t es) {
  return collie_ref(buf, elem_off * es);
}

static inline bool au_same_bytes(collie_bufref_t a, collie_bufref_t b) { return a.buf == b.buf && a.off == b.off; }

static inline int au_mod(int a, int n) { return ((a % n) + n) % n; }

static inline uint64_t au_min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Largest power of two <= n (n >= 1). */
static inline int au_pow2_le(int n) {
  int p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

/* Smallest power of two >= n (n >= 1). */
static inline int au_pow2_ge(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

static inline int au_lowbit(int v) { return v & -v; }

/* ---- near-equal blocks and pipeline chunks -------------------------------------------- */

/* Block b of `count` elements split into n near-equal blocks: the first count % n blocks
 * get one element more, so blocks differ by at most one element. In elements. */
static inline uint64_t au_block_start(uint64_t count, int n, int b) {
  uint64_t q = count / (uint64_t)n, rem = count % (uint64_t)n;
  return (uint64_t)b * q + ((uint64_t)b < rem ? (uint64_t)b : rem);
}

static inline uint64_t au_block_len(uint64_t count, int n, int b) {
  return count / (uint64_t)n + ((uint64_t)b < count % (uint64_t)n ? 1u : 0u);
}

/* Elements per pipeline chunk: chunk_bytes rounded down to whole elements (64 KiB when 0),
 * never less than one element. */
static inline uint64_t au_chunk_elems(const collie_coll_args_t *a) {
  uint64_t bytes = a->chunk_bytes ? (uint64_t)a->chunk_bytes : AU_DEFAULT_CHUNK_BYTES;
  uint64_t e = bytes / a->elem_size;
  return e ? e : 1;
}

static inline uint64_t au_div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Elements of chunk j of a block of len elements, ce per chunk (0 when the block has
 * fewer chunks). */
static inline uint64_t au_chunk_len(uint64_t len, uint64_t ce, uint64_t j) {
  uint64_t start = j * ce;
  return start >= len ? 0 : (len - start < ce ? len - start : ce);
}

/* ---- virtual ranks and the binomial tree of rooted algorithms ------------------------- */

static inline int au_vrank(int rank, int root, int n) { return (rank - root + n) % n; }
static inline int au_real(int v, int root, int n) { return (v + root) % n; }

/* Binomial tree on virtual ranks 0..n-1 rooted at 0: the parent of v > 0 is v - lowbit(v);
 * the children of v are v + m for masks m below lowbit(v) (below pow2_ge(n) at the root)
 * with v + m < n. The subtree of v is the contiguous range [v, v + au_binomial_size(v)). */
static inline int au_binomial_parent(int v) { return v - au_lowbit(v); }

static inline int au_binomial_size(int v, int n) {
  if (v == 0) return n;
  int l = au_lowbit(v);
  return l < n - v ? l : n - v;
}

/* The largest mask a child of v can have; children are v + m for m = top, top/2, ..., 1. */
static inline int au_binomial_top_mask(int v, int n) {
  return (v == 0 ? au_pow2_ge(n) : au_lowbit(v)) >> 1;
}

/* Children of v, largest subtree first, written to kids[]; returns how many. */
static inline int au_binomial_children(int v, int n, int kids[AU_MAX_CHILDREN]) {
  int k = 0;
  for (int m = au_binomial_top_mask(v, n); m >= 1; m >>= 1)
    if (v + m < n) kids[k++] = v + m;
  return k;
}

/* ---- the blocks of a partitioned buffer ----------------------------------------------- */

/* The n blocks of a collective's partitioned buffer, in elements: the receive buffer of
 * allgather(v) and alltoall, the send buffer of reduce_scatter(v), the vector of
 * allreduce (near-equal split). off/len point into storage owned by the struct. */
typedef struct {
  int n;
  uint64_t *off, *len;
  uint64_t total, maxlen; /* sum and maximum of len */
} au_blocks_t;

bool au_blocks_init(au_blocks_t *b, const collie_coll_args_t *a); /* false: out of memory */
void au_blocks_free(au_blocks_t *b);

/* ---- dependency lists and merged copies ----------------------------------------------- */

/* A growable list of step indices, for dependency lists of unbounded length. */
typedef struct {
  uint32_t *v;
  uint32_t n, cap;
  bool failed;
} au_deps_t;

void au_deps_add(au_deps_t *d, uint32_t step); /* ignores COLLIE_NO_STEP and repeats of the last */
void au_deps_free(au_deps_t *d);
static inline void au_deps_clear(au_deps_t *d) { d->n = 0; }

/* ---- rings of ranks (ring.c) ----------------------------------------------------------- */

/* n members in ring order (rank[i]: a rank of the communicator; rank NULL: member i is
 * rank i), this rank at index me. */
typedef struct {
  int n, me;
  const int *rank;
} au_ring_t;

static inline int au_member(const au_ring_t *g, int i) { return g->rank ? g->rank[i] : i; }

/* A binomial broadcast of len bytes among g's members from member `from` (algo_util.c):
 * this rank receives into the receive buffer from its parent, after `after`
 * (COLLIE_NO_STEP: nothing), unless it is `from`, whose data is at src; then it sends to its
 * children. Returns the step after which this rank holds the data (`after` at `from`). */
uint32_t au_binomial_bcast(collie_sched_t *s, const au_ring_t *g, int from, collie_bufref_t src, uint64_t len,
                           uint32_t after);

/* The ring allreduce (ring.c) of elements [base, base + len) among g, into the receive
 * buffer, with this rank's contribution in `in` (the receive buffer itself in place). Round
 * 0's sends and every receive-reduce also wait for `after` (COLLIE_NO_STEP: nothing); every
 * step that writes the receive buffer goes into `writes` when given. g->n >= 2. */
collie_result_t au_ring_allreduce(collie_sched_t *s, const collie_coll_args_t *a, const au_ring_t *g, uint64_t base,
                                  uint64_t len, collie_buf_t in, uint32_t after, au_deps_t *writes);

/* Copies queued piece by piece, merged into one COPY step while both sides stay
 * contiguous; each step depends on the union of its pieces' dependencies. */
typedef struct {
  collie_sched_t *s;
  collie_bufref_t src, dst;
  uint64_t len;
  au_deps_t deps;
  au_deps_t *out; /* optional: collects the emitted steps */
} au_copier_t;

void au_copier_init(au_copier_t *c, collie_sched_t *s, au_deps_t *out);
void au_copier_add(au_copier_t *c, collie_bufref_t src, collie_bufref_t dst, uint64_t len, const uint32_t *deps,
                   uint32_t ndeps);
uint32_t au_copier_flush(au_copier_t *c); /* emits the pending copy; returns its step */
void au_copier_free(au_copier_t *c);

#endif /* COLLIE_ALGO_UTIL_H */
