/* What the shared-memory collectives' two halves share (shm_native.c runs the rounds,
 * shm_direct.c the single-copy path): every rank's collective area and its counters.
 * Every rank is local here, so a rank's local index is its rank. */
#ifndef COLLIE_SHM_ROUNDS_H
#define COLLIE_SHM_ROUNDS_H

#include <stdbool.h>
#include <string.h>

#include "algo/algo_util.h"
#include "core/copy.h"
#include "sched/executor.h"
#include "transport/shm.h"

static inline collie_shm_area_t *shm_area_of(collie_comm_t *comm, int rank) { return collie_shm_area(comm, rank); }

/* The inline slot of round g. */
static inline unsigned inl_slot(const collie_comm_t *comm, uint64_t g) {
  return (unsigned)(g & (comm->shm->inl_slots - 1));
}

/* Whether inline rounds of this many lines take a wide slot for their further lines
 * (transport/shm.h); inl_wide: op's. */
static inline bool lines_wide(unsigned lines) { return lines > COLLIE_SHM_INLINE_LINES_SMALL; }
static inline bool inl_wide(const collie_op_t *op) { return lines_wide(op->nat_inl_lines); }

/* The further lines of round g, of that many lines, in rank r's area: its slot's, or its
 * wide slot's; inl_ext: of op's round g. */
static inline collie_shm_inline_ext_t *inl_ext_of(collie_comm_t *comm, unsigned lines, int r, uint64_t g) {
  collie_shm_area_t *a = collie_shm_area(comm, r);
  return lines_wide(lines) ? a->inl_wide[g & (COLLIE_SHM_WIDE_SLOTS - 1)] : a->inl_ext[inl_slot(comm, g)];
}
static inline collie_shm_inline_ext_t *inl_ext(collie_comm_t *comm, const collie_op_t *op, int r, uint64_t g) {
  return inl_ext_of(comm, op->nat_inl_lines, r, g);
}

/* Prefetches the further lines of round g of op in rank r's area. */
static inline void inl_prefetch(collie_comm_t *comm, const collie_op_t *op, int r, uint64_t g) {
  const collie_shm_inline_ext_t *ext = inl_ext(comm, op, r, g);
  for (int i = 1; i < op->nat_inl_lines; i++) __builtin_prefetch(&ext[i - 1]);
}

/* Asks for the cache line at p in a state this core may write, so that a store to it
 * later need not wait for the other cores to give their copies up. On x86-64 that is
 * PREFETCHW, which gcc emits for __builtin_prefetch only under -mprfchw, so it is written
 * out and used where the CPU has it; elsewhere the builtin's write hint (aarch64: PRFM
 * PSTL1KEEP). */
static inline void shm_prefetch_write(const collie_comm_t *comm, const void *p) {
#if defined(__x86_64__)
  if (comm->shm->prefetchw) __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
  (void)comm;
  __builtin_prefetch(p, 1, 3);
#endif
}

/* Where rank `rank` published its buffers for first round g (the single-copy path): by
 * inline slot, as the fingerprints, since a broadcast root runs slots ahead (shm.h). */
static inline collie_shm_bufloc_t *shm_locs(collie_comm_t *comm, int rank, uint64_t g) {
  return shm_area_of(comm, rank)->loc[inl_slot(comm, g)];
}

static inline uint64_t shm_counter(collie_comm_t *comm, int rank, int c) {
  return atomic_load_explicit(&shm_area_of(comm, rank)->line.ctr[c], memory_order_acquire);
}

/* Rank r's counter c as op sees it: an inline round's tag stands for `ready` and
 * `staged` (want - 1 is the round, and picks the line). */
static inline uint64_t shm_progress(collie_comm_t *comm, const collie_op_t *op, int r, int c, uint64_t want) {
  if (op->nat_inline && (c == COLLIE_SHM_READY || c == COLLIE_SHM_STAGED)) {
    /* The first line's tag is released after the other lines (spread_inline), so it alone
     * says `ready` and `staged`; `ready` prefetches the other lines, so that they arrive
     * together rather than when the copy reaches them. Up to 8 lines, at every look, ahead
     * of the tag (2 ranks, CPUs 0.33 us apart, us: 400 B all-reduce 0.46 against 0.49 after
     * it, 480 B all-gather 0.44 against 0.49); a wide round's only once its tag is there:
     * a reader waiting for a root that is still writing them pulled its many lines away
     * at every look (2 ranks, 2 KiB, 0.93 to 1.29 us against 0.60 to 0.68; 3 ranks on 2
     * cores 1.41 to 1.50 against 0.92 to 0.94; 4 ranks, 1 KiB, 0.97 to 1.09 against 0.84 to
     * 0.87). */
    if (c == COLLIE_SHM_READY && !inl_wide(op)) inl_prefetch(comm, op, r, want - 1);
    const uint64_t tag =
        atomic_load_explicit(&shm_area_of(comm, r)->inl[inl_slot(comm, want - 1)].tag, memory_order_acquire);
    if (c == COLLIE_SHM_READY && inl_wide(op) && tag >= want) inl_prefetch(comm, op, r, want - 1);
    return tag;
  }
  return shm_counter(comm, r, c);
}

/* What the first round's check compares, cheaply: the sequence number, and a hash of the
 * other fields a mismatch sentence would name (the reduction only for reductions, the root
 * only for rooted collectives). */
static inline void call_key(const collie_op_t *op, uint64_t key[2]) {
  const bool reduction = op->coll == COLLIE_COLL_ALLREDUCE || op->coll == COLLIE_COLL_REDUCE ||
                         op->coll == COLLIE_COLL_REDUCE_SCATTER;
  const bool rooted = op->coll == COLLIE_COLL_BROADCAST || op->coll == COLLIE_COLL_REDUCE;
  uint64_t h = (uint64_t)op->coll | (uint64_t)op->dt << 8 | (uint64_t)(reduction ? op->redop : 0) << 16 |
               (uint64_t)(uint32_t)(rooted ? op->root : 0) << 32;
  h ^= (uint64_t)op->count * 0x9e3779b97f4a7c15ull;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  key[0] = op->seq;
  key[1] = h ^ (h >> 29);
}

/* Remembers that op waits for rank r's counter c: for timeout sentences, and with more
 * ranks than cores (only then does the wait read it, core/wait.c) as the wait's hint. */
static inline void shm_lags(collie_comm_t *comm, collie_op_t *op, int r, int c) {
  op->nat_wait = r;
  op->nat_wait_flag = c;
  if (comm->oversubscribed) collie_set_wait_peer(comm, r);
}

/* Whether every other rank's counter c has reached want; remembers the first laggard,
 * and with more ranks than cores hints at the first one that said it yields or sleeps, if
 * any: waiting for that one a rank should yield at once. */
static inline bool shm_all_reached(collie_comm_t *comm, collie_op_t *op, int c, uint64_t want) {
  bool all = true;
  for (int r = 0; r < comm->nranks; r++) {
    if (r == comm->rank || shm_progress(comm, op, r, c, want) >= want) continue;
    if (all) {
      all = false;
      shm_lags(comm, op, r, c);
      if (!comm->oversubscribed) return false;
    }
    if (!collie_shm_peer_on_cpu(comm, r)) {
      collie_set_wait_peer(comm, r);
      return false;
    }
  }
  return all;
}

static inline bool shm_one_reached(collie_comm_t *comm, collie_op_t *op, int r, int c, uint64_t want) {
  if (r == comm->rank || shm_progress(comm, op, r, c, want) >= want) return true;
  shm_lags(comm, op, r, c);
  return false;
}

/* Whether every other rank's `done` has reached want, from the lowest value read last time
 * (comm->native_done_seen) or a fresh read of every counter, which updates it: the counters
 * only grow. A root running ahead asks at every round, and most answers need no other
 * rank's counter line. */
static inline bool shm_done_seen(collie_comm_t *comm, uint64_t want) {
  if (comm->native_done_seen >= want) return true;
  uint64_t low = UINT64_MAX;
  for (int r = 0; r < comm->nranks; r++)
    if (r != comm->rank) {
      const uint64_t d = shm_counter(comm, r, COLLIE_SHM_DONE);
      if (d < low) low = d;
    }
  if (low < want) return false;
  comm->native_done_seen = low;
  return true;
}

/* Stores this rank's counter c (publish: and wakes the ranks asleep on their doorbells,
 * for an inline round before this progress pass ends, collie_native_progress). The wake-up may wait
 * because its fence stalls until the store has reached the other cores: right after the
 * store that is a full cache-line transfer (2 ranks, 8 B all-reduce: 10 ns of 170), while
 * after reading the peers' data, or before waiting for it, the store is out already, and
 * one fence serves every store of the pass. */
static inline void shm_store(collie_comm_t *comm, int c, uint64_t value) {
  atomic_store_explicit(&shm_area_of(comm, comm->rank)->line.ctr[c], value, memory_order_release);
}
static inline void shm_publish(collie_comm_t *comm, const collie_op_t *op, int c, uint64_t value) {
  shm_store(comm, c, value);
  /* Only an inline round's wake-up waits: its work until the pass ends is a few lines,
   * while a larger round's sleeping peers should work alongside this rank at once. */
  if (op->nat_inline) comm->shm->wake_pending = true;
  else collie_shm_notify_others(comm);
}

/* A copy into a receive buffer: streaming stores when op's is larger than the caches
 * (core/copy.h) and src is a user buffer; out of a staging buffer, as the round's drain
 * chose by their cost (shm_native.c). */
static inline void shm_put(const collie_op_t *op, char *dst, const char *src, size_t n, bool staged) {
  if (dst != src && n) collie_copy(dst, src, n, staged ? op->nat_drain_streams : op->stream);
}

/* dst[0..n) = src[first] + off, then reduce with every other rank's src[r] + off, in rank
 * order (every rank folds alike, so equal inputs give equal bits). dst may be
 * src[first] + off itself: that operand is read before dst is written. shm_fold: with
 * op's reduction; the fast lane (shm_fast.c), which has no op, names its own. */
static inline void shm_fold_with(collie_reduce_fn_t reduce, int nranks, char *dst, const char *const *src, int first,
                                 size_t off, size_t n) {
  const char *a = src[first] + off;
  for (int r = 0; r < nranks; r++) {
    if (r == first) continue;
    reduce(dst, a, src[r] + off, n);
    a = dst;
  }
}
static inline void shm_fold(collie_comm_t *comm, collie_op_t *op, char *dst, const char *const *src, int first,
                            size_t off, size_t n) {
  shm_fold_with(op->reduce, comm->nranks, dst, src, first, off, n);
}

/* Rank r's slice [*lo, *lo + *n) of len elements: the algorithms' near-equal blocks. */
static inline void shm_slice(size_t len, int nranks, int r, size_t *lo, size_t *n) {
  *lo = (size_t)au_block_start(len, nranks, r);
  *n = (size_t)au_block_len(len, nranks, r);
}

/* ---- the single-copy path (shm_direct.c) ---------------------------------------------- */

/* Whether op may take the single-copy path: large enough, a collective that has one, and
 * COLLIE_SHM_DIRECT on. The same answer on every rank. */
bool collie_direct_wanted(const collie_comm_t *comm, const collie_op_t *op);
/* Writes where this rank's buffers of op are into its area (staging buffer g mod 2); true
 * when every buffer the collective needs from this rank is reachable by the others. */
bool collie_direct_publish(collie_comm_t *comm, collie_op_t *op, uint64_t g);
/* Once every rank is ready in round g: whether every needed buffer of every rank is
 * reachable. The same answer on every rank. */
bool collie_direct_agreed(collie_comm_t *comm, const collie_op_t *op, uint64_t g);
/* Does this rank's part, reading and writing the others' buffers in place. 0, or -1
 * after failing the communicator. */
int collie_direct_run(collie_comm_t *comm, collie_op_t *op, uint64_t g);

#endif
