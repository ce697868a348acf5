/* Helpers shared by the ring, recursive and Bruck builders: argument checks, block
 * partitioning, chunking for pipelining, the blocks of v-variants, growable dependency
 * lists and a copier that merges adjacent copies into one step. */
#ifndef COLLIE_ALGO_UTIL_H
#define COLLIE_ALGO_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "algo/algo_impl.h"

#define AU_DEFAULT_CHUNK_BYTES ((uint64_t)64 * 1024)

/* Arguments every builder needs; v-variants also need their arrays. */
bool au_valid(const collie_coll_args_t *a);

static inline collie_result_t au_finish(const collie_sched_t *s) {
  return s->failed ? COLLIE_ERR_INTERNAL : COLLIE_SUCCESS;
}

static inline int au_mod(int a, int n) { return ((a % n) + n) % n; }

/* Largest power of two <= n (n >= 1). */
static inline int au_pow2_le(int n) {
  int p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

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

/* A growable list of step indices, for dependency lists of unbounded length. */
typedef struct {
  uint32_t *v;
  uint32_t n, cap;
  bool failed;
} au_deps_t;

void au_deps_add(au_deps_t *d, uint32_t step); /* ignores COLLIE_NO_STEP and repeats of the last */
void au_deps_free(au_deps_t *d);
static inline void au_deps_clear(au_deps_t *d) { d->n = 0; }

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
