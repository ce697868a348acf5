/* The blocking small collectives' and the barrier's rounds without an operation (see
 * shm_native.h): the same stores, in the same order and to the same lines, as advance
 * makes for an inline round (its further lines in a wide slot beyond 8), so that a peer
 * on the generic path cannot tell the two apart; and the same copies and reductions as
 * its fill and drain. */
#include <string.h>

#include "algo/native/shm_native.h"
#include "algo/native/shm_rounds.h"
#include "reduce/reduce.h"

/* The bytes of a rank's inline round, from which collie_native_prepare counts its lines:
 * the vector (all-reduce, reduce, broadcast) or block (all-gather), or every block of the
 * send buffer (reduce-scatter, all-to-all). */
static size_t round_bytes(const collie_comm_t *comm, const collie_fast_call_t *c) {
  const size_t block = c->count * collie_datatype_size(c->dt);
  switch (c->coll) {
    case COLLIE_COLL_BROADCAST:
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE:
    case COLLIE_COLL_ALLGATHER: return block;
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL: return block * (size_t)comm->nranks;
    default: return 0; /* a barrier: the tag alone */
  }
}

/* What this rank stages of them: all of them, but nothing at a broadcast's other ranks
 * (fills). The reduce-scatter's and all-to-all's fill stages every block but the rank's
 * own, whose place nobody reads, so the lane copies the buffer whole. */
static size_t staged_bytes(const collie_comm_t *comm, const collie_fast_call_t *c) {
  return c->coll == COLLIE_COLL_BROADCAST && comm->rank != c->root ? 0 : round_bytes(comm, c);
}

/* The lines of c's round (collie_native_prepare): the first holds COLLIE_SHM_INLINE_FIRST
 * bytes, each further one COLLIE_SHM_INLINE_NEXT. */
static unsigned lines_of(const collie_comm_t *comm, const collie_fast_call_t *c) {
  const size_t b = round_bytes(comm, c);
  return b <= COLLIE_SHM_INLINE_FIRST
             ? 1
             : 1 + (unsigned)((b - COLLIE_SHM_INLINE_FIRST + COLLIE_SHM_INLINE_NEXT - 1) / COLLIE_SHM_INLINE_NEXT);
}

/* This rank's inline bytes in one piece where they take several lines: what fill writes
 * and advance's drain reads as its own (inline_bytes), and where the generic path finds
 * them if the lane hands the call over. */
static char *own_bytes(collie_comm_t *comm) {
  return comm->shm->inl_bytes + (size_t)comm->rank * COLLIE_SHM_INLINE_BYTES;
}

/* Rank r's bytes of round g in one piece: its first line's when they fit there, this
 * rank's own_bytes, or another's gathered from its lines (whole lines, as inline_bytes
 * gathers them: inl_bytes has room). */
static const char *bytes_of(collie_comm_t *comm, unsigned lines, int r, uint64_t g) {
  collie_shm_area_t *a = shm_area_of(comm, r);
  const unsigned i = inl_slot(comm, g);
  if (lines == 1) return a->inl[i].data;
  if (r == comm->rank) return own_bytes(comm);
  char *buf = comm->shm->inl_bytes + (size_t)r * COLLIE_SHM_INLINE_BYTES;
  memcpy(buf, a->inl[i].data, COLLIE_SHM_INLINE_FIRST);
  memcpy(buf + COLLIE_SHM_INLINE_FIRST, inl_ext_of(comm, lines, r, g), (size_t)(lines - 1) * COLLIE_SHM_INLINE_NEXT);
  return buf;
}

/* Bytes [off, off + n) of rank r's round g, from its lines: a reader of one block of an
 * all-to-all's or reduce-scatter's round fetches only the lines that hold it. */
static const char *block_of(collie_comm_t *comm, unsigned lines, int r, uint64_t g, size_t off, size_t n) {
  collie_shm_area_t *a = shm_area_of(comm, r);
  const char *first = a->inl[inl_slot(comm, g)].data;
  if (off + n <= COLLIE_SHM_INLINE_FIRST) return first + off;
  const char *ext = (const char *)inl_ext_of(comm, lines, r, g);
  if (off >= COLLIE_SHM_INLINE_FIRST) return ext + (off - COLLIE_SHM_INLINE_FIRST);
  char *buf = comm->shm->inl_bytes + (size_t)r * COLLIE_SHM_INLINE_BYTES; /* straddles the first line's end */
  memcpy(buf, first + off, COLLIE_SHM_INLINE_FIRST - off);
  memcpy(buf + (COLLIE_SHM_INLINE_FIRST - off), ext, n - (COLLIE_SHM_INLINE_FIRST - off));
  return buf;
}

int collie_native_fast_publish(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t *seq, uint64_t *g) {
  collie_shm_state_t *st = comm->shm;
  const unsigned lines = lines_of(comm, c);
  const uint64_t r = comm->native_rounds;
  const uint64_t back = lines_wide(lines) ? COLLIE_SHM_WIDE_SLOTS : st->inl_slots; /* reuse_distance's */
  /* advance's conditions for staging round r, met at once: no comparison deferred that
   * would hold the slot, and everyone has finished with this slot's previous round (known
   * when the last round waited for everyone's staging; after a broadcast, whose root does
   * not wait, or a reduce's other ranks, from the others' `done`) */
  if (r + 1 >= st->verify_lo + st->inl_slots) return -1;
  if (!comm->native_prev_all && r >= back && !shm_done_seen(comm, r - back + 1)) return -1;
  *seq = ++comm->coll_seq;
  *g = r;
  comm->native_rounds = r + 1;
  collie_shm_area_t *a = shm_area_of(comm, comm->rank);
  const unsigned i = inl_slot(comm, r);
  /* what sign reads: a mismatch sentence compares these fields */
  const collie_op_t call = {.coll = c->coll, .dt = c->dt, .redop = c->redop, .root = c->root, .count = c->count,
                            .seq = *seq};
  collie_op_fingerprint(&call, comm->rank, &a->sig[i]);
  call_key(&call, a->inl[i].key);
  const size_t staged = staged_bytes(comm, c);
  if (staged && lines == 1) memcpy(a->inl[i].data, c->sendbuf, staged);
  if (staged && lines > 1) { /* fill's copy, then spread_inline's over the lines */
    char *own = own_bytes(comm);
    memcpy(own, c->sendbuf, staged);
    memcpy(a->inl[i].data, own, COLLIE_SHM_INLINE_FIRST);
    memcpy(inl_ext_of(comm, lines, comm->rank, r), own + COLLIE_SHM_INLINE_FIRST,
           (size_t)(lines - 1) * COLLIE_SHM_INLINE_NEXT);
  }
  shm_store(comm, COLLIE_SHM_STAGED, r + 1);
  atomic_store_explicit(&a->inl[i].tag, r + 1, memory_order_release);
  shm_store(comm, COLLIE_SHM_READY, r + 1);
  return 0;
}

/* Whom this rank waits for and compares its call with: everyone, or in a broadcast the
 * root alone, and the root nobody; in a reduce the root everyone, and the others nobody:
 * they compare their call with the root's later (shm_native.c, must_meet, defers_check). */
static bool meets(const collie_comm_t *comm, const collie_fast_call_t *c, int r) {
  if (r == comm->rank) return false;
  if (c->coll == COLLIE_COLL_REDUCE) return comm->rank == c->root;
  return c->coll != COLLIE_COLL_BROADCAST || (comm->rank != c->root && r == c->root);
}

int collie_native_fast_arrived(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t g, uint64_t seq, int *late) {
  const unsigned i = inl_slot(comm, g), lines = lines_of(comm, c);
  const bool wide = lines_wide(lines);
  for (int r = 0; r < comm->nranks; r++) {
    if (!meets(comm, c, r)) continue;
    /* the further lines as shm_progress asks for them: at every look, ahead of the tag; a
     * wide round's once the tag is there */
    const collie_shm_inline_ext_t *ext = inl_ext_of(comm, lines, r, g);
    if (!wide)
      for (unsigned l = 1; l < lines; l++) __builtin_prefetch(&ext[l - 1]);
    if (atomic_load_explicit(&shm_area_of(comm, r)->inl[i].tag, memory_order_acquire) < g + 1) {
      *late = r;
      return 0;
    }
    if (wide)
      for (unsigned l = 1; l < lines; l++) __builtin_prefetch(&ext[l - 1]);
  }
  const uint64_t *mine = shm_area_of(comm, comm->rank)->inl[i].key;
  for (int r = 0; r < comm->nranks; r++) {
    const uint64_t *theirs = shm_area_of(comm, r)->inl[i].key;
    if (meets(comm, c, r) && (theirs[0] != mine[0] || theirs[1] != mine[1])) return -1;
  }
  /* a root that meets nobody claims the operation, as check_calls does: a second root
   * fails the communicator here, and the generic path, which claims again, reports it */
  if (c->coll == COLLIE_COLL_BROADCAST && collie_claim_root(comm, c->coll, c->root, seq) < 0) return -1;
  return 1;
}

int collie_native_fast_finish(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t g) {
  const unsigned i = inl_slot(comm, g), lines = lines_of(comm, c);
  const int me = comm->rank, n = comm->nranks;
  const size_t block = c->count * collie_datatype_size(c->dt);
  const char *send = c->sendbuf;
  char *recv = c->recvbuf;
  const char *src[n];
  switch (c->coll) {
    case COLLIE_COLL_REDUCE:
      if (me != c->root) break;
      /* the root reduces as an all-reduce does */
      /* fall through */
    case COLLIE_COLL_ALLREDUCE:
      for (int r = 0; r < n; r++) src[r] = bytes_of(comm, lines, r, g);
      /* every rank's vector, its own staged too, from rank 0 on (drain): equal bits everywhere */
      shm_fold_with(collie_reduce_kernel(c->dt, c->redop), n, recv, src, 0, 0, c->count);
      break;
    case COLLIE_COLL_ALLGATHER: /* block j from rank j's lines, this rank's from its send buffer */
      for (int j = 0; j < n; j++) {
        const char *from = j == me ? send : bytes_of(comm, lines, j, g);
        if (recv + (size_t)j * block != from) memcpy(recv + (size_t)j * block, from, block);
      }
      break;
    case COLLIE_COLL_ALLTOALL: /* block j from rank j's lines, at this rank's place */
      for (int j = 0; j < n; j++) {
        const char *from = j == me ? send + (size_t)me * block : block_of(comm, lines, j, g, (size_t)me * block, block);
        if (recv + (size_t)j * block != from) memcpy(recv + (size_t)j * block, from, block);
      }
      break;
    case COLLIE_COLL_REDUCE_SCATTER: /* this rank's block of every rank's, its own from its send buffer */
      for (int r = 0; r < n; r++)
        src[r] = r == me ? send + (size_t)me * block : block_of(comm, lines, r, g, (size_t)me * block, block);
      shm_fold_with(collie_reduce_kernel(c->dt, c->redop), n, recv, src, me, 0, c->count);
      break;
    case COLLIE_COLL_BROADCAST: /* the root's send buffer, or its lines straight into recv (copy_inline_out) */
      if (me == c->root) {
        if (recv != send) memcpy(recv, send, block);
      } else if (lines == 1) {
        memcpy(recv, shm_area_of(comm, c->root)->inl[i].data, block);
      } else {
        memcpy(recv, shm_area_of(comm, c->root)->inl[i].data, COLLIE_SHM_INLINE_FIRST);
        memcpy(recv + COLLIE_SHM_INLINE_FIRST, inl_ext_of(comm, lines, c->root, g), block - COLLIE_SHM_INLINE_FIRST);
      }
      break;
    default: break; /* a barrier */
  }
  /* publish_done's: `done` as far as the deferred comparisons allow (a reduce's other ranks
   * defer theirs; earlier ones may still wait for their roots) */
  const int woke = collie_native_fast_done(comm, c, g);
  if (woke < 0) return -1;
  /* whether this round waited for everyone's staging (drain_waits_all) */
  comm->native_prev_all = c->coll != COLLIE_COLL_BROADCAST && (c->coll != COLLIE_COLL_REDUCE || me == c->root);
  if (!woke) collie_shm_notify_others(comm);
  /* A root that runs ahead asks for the lines of its next round now (claim_next_round:
   * not a wide round's). */
  const uint64_t next = g + 1, back = comm->shm->inl_slots;
  if (c->coll == COLLIE_COLL_BROADCAST && me == c->root && !lines_wide(lines) &&
      (next < back || comm->native_done_seen >= next - back + 1)) {
    collie_shm_area_t *a = shm_area_of(comm, me);
    shm_prefetch_write(comm, &a->inl[inl_slot(comm, next)]);
    for (unsigned l = 1; l < lines; l++) shm_prefetch_write(comm, &a->inl_ext[inl_slot(comm, next)][l - 1]);
  }
  comm->progress_count++;
  return 0;
}
