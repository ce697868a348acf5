/* Shared-memory collectives: the round state machine (see shm_native.h). */
#include "algo/native/shm_native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/native/shm_rounds.h"
#include "core/log.h"
#include "core/store_choice.h"
#include "sched/executor.h"
#include "transport/shm.h"
#include "transport/transport.h"
#include "tune/tune.h"

enum { PH_FILL, PH_COMBINE, PH_DRAIN };

static bool supported(collie_coll_t c) {
  switch (c) {
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE:
    case COLLIE_COLL_BROADCAST:
    case COLLIE_COLL_ALLGATHER:
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL:
    case COLLIE_COLL_BARRIER: return true;
    default: return false;
  }
}

/* Broadcast and all-gather stream each stager's vector to readers that wait for it alone;
 * rounds of at most this many bytes keep that pipeline full when the area is larger (4
 * ranks on 2 cores, 1 MiB area: broadcast of 1 MiB 11.3 GB/s busbw in 256 KiB rounds
 * against 5.4 in one round; all-gather of 64 MiB 4.9 against 3.3). The collectives where
 * every rank waits for every other each round take the whole area: fewer rounds. */
enum { COLLIE_SHM_STREAM_ROUND_MAX = 256 << 10 };

/* The bytes a round of coll stages per block (or per vector). */
static size_t round_bytes(const collie_comm_t *comm, collie_coll_t coll) {
  const size_t area = comm->shm->area_size, round = comm->shm->round_size;
  switch (coll) {
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL: return round / (size_t)comm->nranks;
    case COLLIE_COLL_BROADCAST:
    case COLLIE_COLL_ALLGATHER: return area < COLLIE_SHM_STREAM_ROUND_MAX ? area : COLLIE_SHM_STREAM_ROUND_MAX;
    default: return round;
  }
}

/* Staged elements per block (or per vector) and round: a round stages one piece of every
 * block this rank sends. */
static size_t piece_elems(const collie_comm_t *comm, collie_coll_t coll, size_t esz) {
  return round_bytes(comm, coll) / esz;
}

bool collie_native_usable(const collie_comm_t *comm, const collie_coll_args_t *args) {
  if (!comm->shm || !comm->shm->area_off || comm->nranks < 2 || comm->nlocal != comm->nranks) return false;
  if (!supported(args->coll)) return false;
  return args->coll == COLLIE_COLL_BARRIER || piece_elems(comm, args->coll, args->elem_size) > 0;
}

/* The most lines an inline round of coll may take; a larger call stages. With a CPU per
 * rank, all 8: a staged round's reader fetches the first round's tag line, then the
 * counters' line, then the data, one after the other, and its wake-ups fence right after
 * their stores, while an inline round's data travel with the tag. 2 ranks on 2 cores,
 * medians of 70 alternating runs of -n 30000 (cache lines 0.05 us apart, line_probe), us,
 * staged against inline, 5 lines / 8 lines: broadcast 0.197 / 0.188 against 0.107 / 0.117,
 * all-gather 0.213 / 0.221 against 0.186 / 0.208, all-to-all 0.198 / 0.202 against 0.177 /
 * 0.199, reduce-scatter 0.200 / 0.202 against 0.182 / 0.202; where the VM put the CPUs
 * 0.33 us apart (6 runs) 0.65 to 0.74 against 0.23 to 0.48 every time. (Commit 082ca73
 * measured staging ahead from 5 lines; these runs, interleaved with the probe read beside
 * each, never showed that.) With more ranks than CPUs, medians of 7 runs of 4
 * ranks and 5 of 8 mixed: all-gather, all-to-all and reduce-scatter keep 4 lines there
 * (8 ranks, 480 B all-to-all: 7.9 us inline against 6.4 staged); a broadcast's root runs
 * up to 128 rounds ahead in inline rounds and 2 in staged ones, which keeps it off its
 * CPU's queue (4 ranks on 2 cores, 8 lines: 0.49 us inline against 0.95 staged). The small
 * reductions fold every line and keep all 8 everywhere (the all-reduce more, below). A
 * broadcast goes further, to 4 KiB (65 lines, in a wide slot: transport/shm.h): its
 * readers wait for the root alone, and in inline rounds the root runs up to 32 rounds
 * ahead instead of the area's 8 slots (and with more ranks than CPUs keeps its core that
 * long). 2 cores, us, staged (or the binomial tree, the cost model's choice there with
 * more ranks than CPUs) against inline, 4 alternating pairs of -n 10000, the CPUs 0.05 to
 * 0.35 us apart (line_probe): 2 ranks, 1 KiB 0.19 to 0.64 against 0.13 to 0.33; 4 ranks, 512 B 0.81 to 1.14 against 0.35 to 0.71,
 * 4 KiB 1.05 to 1.71 against 0.70 to 1.19; 8 ranks, 4 KiB 2.36 to 3.55 against 1.19 to
 * 1.83 (docs/algorithms.md has the table). With a CPU per rank, 2 KiB (33 lines) lost at
 * first where the CPUs were 0.33 us apart (0.54 to 0.57 staged against 0.60 to 0.68
 * inline), and the limit was 17 lines there; since the fast lane takes wide rounds
 * (coll/fast_lane.c) it wins (2 ranks, 3 alternating runs of -n 20000: 2 KiB staged 0.84
 * to 0.94, inline 0.50 to 0.69 on the generic path and 0.32 to 0.43 in the lane; 4 KiB
 * 0.77 to 0.86 staged, 0.51 to 0.56 in the lane). With a CPU per rank the all-gather,
 * all-to-all and reduce-scatter go to 33 lines (2 KiB a rank's round) too: 2 ranks, same
 * runs, staged against the lane, by all-gather size, 1 KiB 0.67 to 0.83 against 0.45 to
 * 0.50, 2 KiB 0.73 to 0.79 against 0.56 to 0.60, 4 KiB 1.03 to 1.11 against 0.84 to 0.90,
 * at 8 KiB (65 lines) 1.29 to 1.42 against 1.33 to 1.35; all-to-all and reduce-scatter,
 * 3 alternating runs of 8, 17 and 33 lines, 1 KiB 0.88 to 0.93 staged against 0.65 to
 * 0.67 inline, 2 KiB 0.99 to 1.15 against 0.83 to 0.87 (17 lines still stage there); 4
 * KiB in 65 lines lost (1.57 to 1.78 against 1.46 to 1.62 staged). The all-reduce takes
 * 33 lines too, with more ranks than CPUs as well (3 alternating runs of 8 and 33 lines,
 * us: 2 ranks, 512 B 0.87 to 0.93 against 0.50 to 0.54, 1 KiB 1.00 to 1.17 against 0.62
 * to 0.66, 2 KiB 1.05 to 1.11 against 0.86 to 0.88, 4 KiB in 65 lines 1.44 to 1.65
 * against 1.38 to 1.41; 4 ranks on 2 cores, 1 KiB 3.1 to 5.3 against 2.5 to 4.3, 2 KiB
 * 4.2 to 5.4 against 3.5 to 4.7; 8 ranks, 1 KiB, 12.7 and 18.1 against 8.3 and 9.9). The
 * reduce keeps 8: its other ranks run ahead of the root through the slots, and the cost
 * model counts on that up to COLLIE_SHM_INLINE_SMALL_BYTES (tune/cost_model.c). Every
 * rank must choose alike: hence the host's count of CPUs. */
enum { WIDE_LINES = 33 };
static size_t inline_lines_max(const collie_comm_t *comm, collie_coll_t coll) {
  const collie_proto_t proto = collie_tune_proto(comm); /* COLLIE_PROTO, the same on every rank (settings.c) */
  if (proto == COLLIE_PROTO_SIMPLE) return 0;
  const bool crowded = comm->shm->crowded && proto != COLLIE_PROTO_LL;
  switch (coll) {
    case COLLIE_COLL_BROADCAST: return 1 + COLLIE_SHM_WIDE_EXT;
    case COLLIE_COLL_ALLREDUCE: return WIDE_LINES;
    case COLLIE_COLL_ALLGATHER:
    case COLLIE_COLL_ALLTOALL:
    case COLLIE_COLL_REDUCE_SCATTER: return crowded ? 4 : WIDE_LINES;
    default: return COLLIE_SHM_INLINE_LINES_SMALL;
  }
}

void collie_native_prepare(collie_op_t *op, const collie_coll_args_t *args) {
  collie_comm_t *comm = op->comm;
  op->native = true;
  op->nat_esz = args->elem_size;
  op->nat_in_place = args->in_place;
  op->nat_count = args->count;
  if (args->coll == COLLIE_COLL_BARRIER) {
    op->nat_nrounds = 1;
    op->nat_inline = true; /* nothing to stage: the tag alone */
    op->nat_inl_lines = 1;
    return;
  }
  /* One round when everything fits the staging area (small calls: no divisions) */
  const bool per_block = args->coll == COLLIE_COLL_REDUCE_SCATTER || args->coll == COLLIE_COLL_ALLTOALL;
  size_t piece = !per_block && args->count * args->elem_size <= round_bytes(comm, args->coll)
                     ? args->count
                     : piece_elems(comm, args->coll, args->elem_size);
  bool reduction = args->coll == COLLIE_COLL_ALLREDUCE || args->coll == COLLIE_COLL_REDUCE;
  op->nat_small = reduction && args->count * args->elem_size <= COLLIE_SHM_SMALL_REDUCTION_BYTES && args->count <= piece;
  if (piece > args->count) piece = args->count;
  op->nat_piece = piece;
  op->nat_nrounds = piece == args->count ? 1 : (args->count + piece - 1) / piece;
  op->nat_may_direct = collie_direct_wanted(comm, op);
  const bool inlinable = op->nat_small || args->coll == COLLIE_COLL_BROADCAST || args->coll == COLLIE_COLL_ALLGATHER ||
                         per_block;
  /* What a rank stages: a piece of every block (all of them, in one round) or of the vector */
  const size_t bytes = args->count * args->elem_size * (per_block ? (size_t)comm->nranks : 1);
  const size_t next = bytes <= COLLIE_SHM_INLINE_FIRST ? 0 : bytes - COLLIE_SHM_INLINE_FIRST;
  const size_t lines = 1 + (next + COLLIE_SHM_INLINE_NEXT - 1) / COLLIE_SHM_INLINE_NEXT;
  op->nat_inline =
      inlinable && op->nat_nrounds == 1 && !op->nat_may_direct && lines <= inline_lines_max(comm, args->coll);
  if (op->nat_inline) op->nat_inl_lines = (uint8_t)lines;
}

/* Where the further lines of an inline round start in its bytes in one piece. The copies
 * move whole lines (inl_bytes has room). */
static char *ext_bytes(char *buf) { return buf + COLLIE_SHM_INLINE_FIRST; }

/* Copies rank's first n inline bytes of round g (more than the first line's) from its lines
 * to dst. A broadcast's reader, whose bytes go to one place, copies them straight into its
 * receive buffer, skipping inline_bytes' gathering copy (alternating runs, us: 4 ranks on
 * 2 cores, 4 KiB, 1.15 to 1.18 against 1.00 to 1.10; 2 ranks, 1 KiB, 0.27 to 0.34 against
 * 0.13 to 0.27). */
static void copy_inline_out(collie_comm_t *comm, const collie_op_t *op, int rank, uint64_t g, char *dst, size_t n) {
  memcpy(dst, shm_area_of(comm, rank)->inl[inl_slot(comm, g)].data, COLLIE_SHM_INLINE_FIRST);
  memcpy(ext_bytes(dst), inl_ext(comm, op, rank, g), n - COLLIE_SHM_INLINE_FIRST);
}

/* An inline round's bytes of `rank` in one piece: in its first line when they fit there;
 * else this rank's own in inl_bytes (filled by fill, then spread over the lines by
 * spread_inline), and another rank's gathered from its lines into inl_bytes (whole lines:
 * inl_bytes has room). */
static char *inline_bytes(collie_comm_t *comm, const collie_op_t *op, int rank, uint64_t round) {
  if (op->nat_inl_lines <= 1) return shm_area_of(comm, rank)->inl[inl_slot(comm, round)].data;
  char *buf = comm->shm->inl_bytes + (size_t)rank * COLLIE_SHM_INLINE_BYTES;
  if (rank == comm->rank) return buf;
  copy_inline_out(comm, op, rank, round, buf,
                  COLLIE_SHM_INLINE_FIRST + (size_t)(op->nat_inl_lines - 1) * COLLIE_SHM_INLINE_NEXT);
  return buf;
}

/* Spreads this rank's inline bytes (inl_bytes) over its lines; the first line's tag
 * follows later (advance), released after them. */
static void spread_inline(collie_comm_t *comm, const collie_op_t *op, uint64_t g) {
  collie_shm_area_t *a = shm_area_of(comm, comm->rank);
  char *buf = comm->shm->inl_bytes + (size_t)comm->rank * COLLIE_SHM_INLINE_BYTES;
  const unsigned i0 = inl_slot(comm, g);
  memcpy(a->inl[i0].data, buf, COLLIE_SHM_INLINE_FIRST);
  memcpy(inl_ext(comm, op, comm->rank, g), ext_bytes(buf), (size_t)(op->nat_inl_lines - 1) * COLLIE_SHM_INLINE_NEXT);
}

/* The area's two layouts. A collective may stage round g in buffer g mod 2 (its first
 * round_size bytes). A staged broadcast cuts both buffers into slots of its round's size
 * and stages round g in slot g mod slots: with a 1 MiB area, 8 slots of 256 KiB, so that
 * the root runs up to 8 rounds ahead of its readers instead of 2, and with more ranks than
 * cores hands its core over once per 2 MiB rather than per 512 KiB (4 ranks on 2 cores,
 * 1 MiB broadcast in place, medians of 5: 11.0 against 12.9 GB/s busbw; 64 MiB 7.0
 * against 8.6). With a CPU per rank an all-gather of one round does the same: a rank that
 * rewrites lines a peer read two calls ago waits while the peer's copies are invalidated,
 * one line at a time, and 8 slots leave the peer time to drop them (2 ranks, 256 KiB,
 * medians of 6 alternating runs: 18.7 us against 10.1, the staging copy alone 14 us
 * against 5.6; the drain's 3.4 either way), and so does a larger one (AMD EPYC VM, 2
 * ranks, us, medians of 6 alternating runs in each order, buffers against slots, out of
 * place (in place): 4 MiB 241 and 253 against 206 and 256 (189 and 185 against 136 and
 * 144), 16 MiB 1899 and 2045 against 1735 and 1957, 64 MiB 8174 and 8470 against 7672
 * and 8131 (5600 and 5906 against 5317 and 5764)). All-gathers with more ranks than CPUs
 * keep the two buffers (4 ranks on 2 cores, 4 and 16 MiB: 5 to 13% slower in slots). The
 * all-reduce, the reduce-scatter and the all-to-all, whose rounds wait for every rank's
 * staging, take slots for the same reason wherever a round fits one (not in the rounds of
 * 1 MiB that ranks outnumbering the CPUs take): same VM, 2 ranks, us, medians of 4 to 6
 * alternating runs, buffers against slots, out of place (in place): all-to-all 256 KiB
 * 20.6 against 13.7 (23.9 against 10.6), 1 MiB 79.7 against 48.3 (93.1 against 35.8),
 * 4 MiB 364 against 224 (362 against 132), 64 MiB 9249 against 8879 (5093 against 4241);
 * reduce-scatter 1 MiB 84.0 against 37.1 (82.8 against 37.9), 4 MiB 290 against 171, 64
 * MiB 8913 against 8719 (6401 against 5436); all-reduce 256 KiB 30.5 against 24.9, 1 MiB
 * 111.5 against 97.7, 16 MiB 2659 against 2213, 64 MiB 11138 against 10314 (4 MiB alike
 * out of place, 478 against 406 in place). With a 256 KiB area both layouts are the
 * same. */
enum { LAYOUT_BUFFERS, LAYOUT_SLOTS };

/* A slot's bytes: a broadcast's round. */
static size_t slot_bytes(const collie_comm_t *comm) { return round_bytes(comm, COLLIE_COLL_BROADCAST); }

static int layout(const collie_op_t *op) {
  const collie_comm_t *comm = op->comm;
  switch (op->coll) {
    case COLLIE_COLL_BROADCAST: return LAYOUT_SLOTS;
    case COLLIE_COLL_ALLGATHER: return comm->shm->crowded ? LAYOUT_BUFFERS : LAYOUT_SLOTS;
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL:
      /* a round (a piece of every block) must fit a slot: not in rounds of 1 MiB */
      return comm->shm->round_size <= slot_bytes(comm) ? LAYOUT_SLOTS : LAYOUT_BUFFERS;
    default: return LAYOUT_BUFFERS;
  }
}

static uint64_t area_slots(const collie_comm_t *comm) {
  const uint64_t k = 2 * comm->shm->area_size / slot_bytes(comm);
  return k < 2 ? 2 : k;
}

/* Rounds after which round g's staging space is free again (when every rank has finished
 * round g - back): the inline slots in use, or the wide slots for an inline round of more
 * than 8 lines (transport/shm.h). At most the inline slots: every first round also writes its slot's
 * tag, key, fingerprint and buffer locations, which a slower rank may still be reading
 * (an 8 MiB area has 64 broadcast slots: a root 33 calls ahead overwrote them, and the
 * reader reported a mismatch of calls that matched). */
static uint64_t reuse_distance(const collie_comm_t *comm, const collie_op_t *op) {
  if (op->nat_inline) return inl_wide(op) ? COLLIE_SHM_WIDE_SLOTS : comm->shm->inl_slots;
  if (layout(op) == LAYOUT_BUFFERS) return 2;
  const uint64_t slots = area_slots(comm);
  return slots < comm->shm->inl_slots ? slots : comm->shm->inl_slots;
}

static char *staged(collie_comm_t *comm, const collie_op_t *op, int rank, uint64_t round) {
  if (op->nat_inline) return inline_bytes(comm, op, rank, round);
  char *area = collie_shm_area_buf(shm_area_of(comm, rank), 0, comm->shm->area_size);
  if (layout(op) == LAYOUT_SLOTS)
    return area + (size_t)(round % area_slots(comm)) * slot_bytes(comm);
  return area + (size_t)(round & 1) * comm->shm->area_size;
}

/* Inline rounds leave the area alone. A staged round in one layout may overlap any of the
 * last rounds in the other, so an operation whose layout differs from the one before
 * stages nothing until every rank has finished those (nat_fence). Where the layouts are
 * the same (two slots), nothing waits. */
void collie_native_number(collie_comm_t *comm, collie_op_t *op) {
  op->nat_base = op->nat_round = comm->native_rounds;
  op->nat_end = comm->native_rounds += op->nat_nrounds;
  op->nat_fence = 0;
  if (op->nat_inline) return;
  const int l = area_slots(comm) > 2 ? layout(op) : LAYOUT_BUFFERS;
  op->nat_fence = comm->native_end[!l];
  comm->native_end[l] = op->nat_end;
}

void collie_native_adopt(collie_comm_t *comm, collie_op_t *op, uint64_t g) {
  op->nat_base = op->nat_round = g;
  op->nat_end = g + 1;
  op->nat_fence = 0;
  op->nat_phase = PH_DRAIN; /* where advance leaves a small reduction's inline round after staging it */
  op->nat_checked = false;
  op->nat_unstaged = false;
  comm->shm->wake_pending = true; /* the first pass's wake-up, as after staging */
}

/* The round's element range [lo, lo+len) within each block (or the vector). */
static void round_range(const collie_op_t *op, uint64_t k, size_t *lo, size_t *len) {
  *lo = (size_t)k * op->nat_piece;
  *len = op->nat_count - *lo < op->nat_piece ? op->nat_count - *lo : op->nat_piece;
}

static bool fills(const collie_op_t *op, int rank) {
  if (op->coll == COLLIE_COLL_BARRIER) return false;
  if (op->coll == COLLIE_COLL_BROADCAST) return rank == op->root;
  return true;
}


/* Where this rank's own piece of the round goes in its receive buffer when the fill copies
 * it there along with the staging copy, reading the send buffer once (staged all-gather,
 * a staged broadcast's root, out of place); NULL where the drain copies it (inline rounds,
 * whose bytes are few) or nothing needs to move (in place). */
static char *own_piece_in_fill(const collie_comm_t *comm, const collie_op_t *op, size_t lo) {
  if (op->nat_inline) return NULL;
  const size_t e = op->nat_esz;
  char *dst;
  if (op->coll == COLLIE_COLL_ALLGATHER)
    dst = op->bufs[COLLIE_BUF_RECV] + ((size_t)comm->rank * op->nat_count + lo) * e;
  else if (op->coll == COLLIE_COLL_BROADCAST && comm->rank == op->root)
    dst = op->bufs[COLLIE_BUF_RECV] + lo * e;
  else
    return NULL;
  return dst == op->bufs[COLLIE_BUF_SEND] + lo * e ? NULL : dst;
}

/* The bytes a rank stages in a round of len elements per block (see fill). */
static size_t fill_bytes(const collie_comm_t *comm, const collie_op_t *op, size_t len) {
  switch (op->coll) {
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE: {
      if (op->nat_small) return len * op->nat_esz;
      size_t s0, sn;
      shm_slice(len, comm->nranks, comm->rank, &s0, &sn);
      return (len - sn) * op->nat_esz;
    }
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL: return (size_t)(comm->nranks - 1) * len * op->nat_esz;
    default: return len * op->nat_esz;
  }
}

/* Copies this rank's data of round g into its staging buffer, with ordinary or streaming
 * stores as their recent cost says (core/store_choice.h: the readers of that buffer may sit
 * on distant cores). */
static void fill(collie_comm_t *comm, collie_op_t *op, uint64_t g, uint64_t k) {
  const size_t e = op->nat_esz;
  size_t lo, len;
  round_range(op, k, &lo, &len);
  char *mine = staged(comm, op, comm->rank, g);
  const char *send = op->bufs[COLLIE_BUF_SEND];
  collie_store_choice_t *stores = &comm->shm->fill_stores;
  /* inline rounds are small: ordinary stores, untimed */
  const collie_store_span_t span =
      op->nat_inline ? (collie_store_span_t){0} : collie_store_begin(stores, fill_bytes(comm, op, len));
  const bool nt = span.streaming;
  switch (op->coll) {
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE:
      if (!op->nat_small) {
        /* Everyone's slices but this rank's own: it reduces that one from its send buffer. */
        size_t s0, sn;
        shm_slice(len, comm->nranks, comm->rank, &s0, &sn);
        collie_copy(mine, send + lo * e, s0 * e, nt);
        collie_copy(mine + (s0 + sn) * e, send + (lo + s0 + sn) * e, (len - s0 - sn) * e, nt);
        break;
      }
      /* fall through */
    case COLLIE_COLL_BROADCAST:
    case COLLIE_COLL_ALLGATHER: {
      char *own = own_piece_in_fill(comm, op, lo);
      if (own)
        collie_copy_twice(mine, own, send + lo * e, len * e, nt, op->stream);
      else
        collie_copy(mine, send + lo * e, len * e, nt);
      break;
    }
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_ALLTOALL: {
      /* Every block but this rank's own, which it reads from its send buffer. */
      for (int j = 0; j < comm->nranks; j++)
        if (j != comm->rank)
          collie_copy(mine + (size_t)j * op->nat_piece * e, send + ((size_t)j * op->nat_count + lo) * e, len * e, nt);
      break;
    }
    default: break;
  }
  collie_store_end(stores, &span);
  if (op->nat_inline && op->nat_inl_lines > 1) spread_inline(comm, op, g);
}

/* Every rank's staged buffer of round g, offset by `off` bytes, with this rank's own
 * operand at `own` instead of its (empty) staging. */
static void staged_operands(collie_comm_t *comm, const collie_op_t *op, uint64_t g, size_t off, const char *own,
                            const char **src) {
  for (int j = 0; j < comm->nranks; j++) src[j] = staged(comm, op, j, g) + off;
  if (own) src[comm->rank] = own;
}

/* shm_fold into dst with streaming stores: n elements a piece at a time into a private
 * buffer (allocated at first use), each piece then streamed out. False, having done
 * nothing, without memory for that buffer: the caller folds straight instead. */
static bool fold_streamed(collie_comm_t *comm, collie_op_t *op, char *dst, const char *const *src, int first,
                          size_t off, size_t n) {
  collie_shm_state_t *st = comm->shm;
  if (!st->fold_piece && !(st->fold_piece = malloc(COLLIE_SHM_FOLD_PIECE))) return false;
  const size_t e = op->nat_esz, per = COLLIE_SHM_FOLD_PIECE / e;
  for (size_t i = 0; i < n; i += per) {
    const size_t m = n - i < per ? n - i : per;
    shm_fold(comm, op, st->fold_piece, src, first, off + i * e, m);
    collie_copy_stream(dst + i * e, st->fold_piece, m * e);
  }
  return true;
}

/* Large reductions: this rank's slice of everyone's piece, reduced into its own staging
 * buffer, where the slice was left empty (nobody reads it until `reduced`). Its own
 * operand comes from its send buffer. */
static void combine(collie_comm_t *comm, collie_op_t *op, uint64_t g, uint64_t k) {
  const size_t e = op->nat_esz;
  size_t lo, len, s0, sn;
  round_range(op, k, &lo, &len);
  shm_slice(len, comm->nranks, comm->rank, &s0, &sn);
  if (!sn) return;
  const char *src[comm->nranks];
  staged_operands(comm, op, g, 0, op->bufs[COLLIE_BUF_SEND] + lo * e, src);
  char *dst = staged(comm, op, comm->rank, g) + s0 * e;
  /* While the staging copies stream (the readers sit on distant cores), the reduction's own
   * stores into staging would pay what ordinary copies there pay: fold a piece at a time in
   * a private buffer instead, and stream each piece out (4 ranks, 1 MiB all-reduce, vCPUs
   * far apart, medians of 14 alternating pairs: 3.3 to 4.5 GB/s busbw out of place, 3.6 to
   * 5.3 in place). */
  if (sn * e >= COLLIE_STORE_CHOICE_MIN && collie_store_streams(&comm->shm->fill_stores) &&
      fold_streamed(comm, op, dst, src, comm->rank, s0 * e, sn))
    return;
  shm_fold(comm, op, dst, src, comm->rank, s0 * e, sn);
}

/* A staged all-to-all copies its own block's piece of a round as soon as it has published
 * its staging, while the others may still stage theirs: the copy needs nobody, and in the
 * drain it only delayed this rank's next round. Out of place, busbw GB/s, medians of 3 to
 * 5 alternating runs, before against after: 2 ranks 16 MiB 7.8 against 9.2, 256 KiB 14.5
 * against 15.4; 4 ranks on 2 cores 16 MiB 4.6 against 5.1, 64 MiB 4.4 against 4.8; 4 MiB
 * and below alike. In place the own block stays where it is. */
static bool own_block_early(const collie_op_t *op) { return op->coll == COLLIE_COLL_ALLTOALL && !op->nat_inline; }

static void copy_own_block(collie_comm_t *comm, collie_op_t *op, uint64_t k) {
  if (!own_block_early(op)) return;
  const size_t e = op->nat_esz, at_rank = (size_t)comm->rank * op->nat_count;
  size_t lo, len;
  round_range(op, k, &lo, &len);
  shm_put(op, op->bufs[COLLIE_BUF_RECV] + (at_rank + lo) * e, op->bufs[COLLIE_BUF_SEND] + (at_rank + lo) * e, len * e,
          false);
}

/* How a round's copies out of staging into a receive buffer about as large as the caches
 * or larger (op->stream_timed: from half the size where the other copies stream) store:
 * ordinary stores read each destination line first, streaming ones skip that but leave
 * nothing in the cache, and which costs less depends on the machine, the collective and
 * the size, so each collective's drains time themselves (core/store_choice.h, the cheaper
 * kind wins). Intel VM, out of place, ms, alternating runs, ordinary against
 * streaming stores: 2 ranks, all-reduce 16 MiB 4.4 and 4.6 against 3.4 and 3.5, 64 MiB
 * 18.8 and 19.6 against 15.1 and 15.4 (in place, where ordinary stores find the lines in
 * the cache, 13.5 and 13.6 against 13.8 and 14.2); 4 ranks on 2 cores, 64 MiB: all-gather
 * 19.8 and 20.1 against 13.4 and 15.1 (in place 18.1 and 18.8 against 11.7 and 12.2),
 * broadcast 29.2 and 21.1 against 17.5 and 16.8, all-reduce 40.2 and 40.8 against 33.8
 * and 33.1; 2 ranks, all-gather 64 MiB 11.3 to 11.6 against 11.7 to 12.4 (3 runs). A
 * reduce-scatter folds its block a piece at a time into private memory and streams each
 * piece out, or folds straight into the receive buffer: 2 ranks, 64 MiB, 3 runs with each
 * kind forced, 11.8 to 13.0 against 11.2 to 11.9; 4 ranks alike. Timed from half the
 * streaming size, against from that size: 2 ranks, all-reduce 8 MiB 1.7 to 1.8 against
 * 2.2 to 2.3 (4 MiB, still below, alike); 4 ranks, 4 MiB, all-gather 0.72 to 0.74 against
 * 0.96 to 1.12, broadcast 0.91 to 0.99 against 1.11 to 1.29, all-reduce 2.0 to 2.1
 * against 2.6 to 2.8; 2 ranks, 8 MiB broadcast 1.7 to 2.1 against 1.6 to 1.9 and
 * reduce-scatter alike. NULL: the round copies nothing out of staging, or into a small
 * buffer. */
static collie_store_choice_t *drain_stores_of(collie_comm_t *comm, const collie_op_t *op) {
  if (!op->stream_timed || op->nat_inline) return NULL;
  collie_store_choice_t *kinds = comm->shm->drain_stores;
  switch (op->coll) {
    /* in place, the round has just read the receive lines: they are in the cache */
    case COLLIE_COLL_ALLREDUCE: return op->nat_in_place ? NULL : &kinds[0];
    case COLLIE_COLL_REDUCE: return comm->rank == op->root && !op->nat_in_place ? &kinds[0] : NULL;
    case COLLIE_COLL_BROADCAST: return comm->rank != op->root ? &kinds[1] : NULL;
    case COLLIE_COLL_ALLGATHER: return &kinds[2];
    case COLLIE_COLL_ALLTOALL: return &kinds[3];
    /* it folds into the receive buffer: a piece at a time, streamed out, or straight */
    case COLLIE_COLL_REDUCE_SCATTER: return op->nat_in_place ? NULL : &kinds[4];
    default: return NULL;
  }
}

static void drain(collie_comm_t *comm, collie_op_t *op, uint64_t g, uint64_t k) {
  const size_t e = op->nat_esz;
  const int me = comm->rank, n = comm->nranks;
  size_t lo, len;
  round_range(op, k, &lo, &len);
  char *recv = op->bufs[COLLIE_BUF_RECV];
  const char *send = op->bufs[COLLIE_BUF_SEND];
  collie_store_choice_t *stores = drain_stores_of(comm, op);
  /* the bytes it copies out of staging, for the cost per KiB: a block of every other rank
   * (all-gather, all-to-all), or the whole piece (the reductions' slices or block, a
   * broadcast) */
  const bool per_rank = op->coll == COLLIE_COLL_ALLGATHER || op->coll == COLLIE_COLL_ALLTOALL;
  const collie_store_span_t span =
      stores ? collie_store_begin(stores, len * e * (per_rank ? (size_t)(n - 1) : 1)) : (collie_store_span_t){0};
  op->nat_drain_streams = span.streaming;
  switch (op->coll) {
    case COLLIE_COLL_ALLREDUCE:
    case COLLIE_COLL_REDUCE:
      if (op->coll == COLLIE_COLL_REDUCE && me != op->root) break;
      if (op->nat_small) { /* every rank's whole vector, its own staged too, from rank 0 on */
        const char *src[n];
        staged_operands(comm, op, g, 0, NULL, src);
        shm_fold(comm, op, recv + lo * e, src, 0, 0, len);
        break;
      }
      for (int j = 0; j < n; j++) {
        size_t s0, sn;
        shm_slice(len, n, j, &s0, &sn);
        if (sn) shm_put(op, recv + (lo + s0) * e, staged(comm, op, j, g) + s0 * e, sn * e, true);
      }
      break;
    case COLLIE_COLL_BROADCAST: {
      if (own_piece_in_fill(comm, op, lo)) break; /* the root's piece, copied by the fill */
      if (me != op->root && op->nat_inline && op->nat_inl_lines > 1) {
        copy_inline_out(comm, op, op->root, g, recv + lo * e, len * e);
        break;
      }
      const char *src = me == op->root ? send + lo * e : staged(comm, op, op->root, g);
      shm_put(op, recv + lo * e, src, len * e, me != op->root);
      break;
    }
    case COLLIE_COLL_ALLGATHER: {
      const bool own_filled = own_piece_in_fill(comm, op, lo) != NULL;
      for (int j = 0; j < n; j++) {
        if (j == me && own_filled) continue;
        char *dst = recv + ((size_t)j * op->nat_count + lo) * e;
        const char *src = j == me ? send + lo * e : staged(comm, op, j, g);
        shm_put(op, dst, src, len * e, j != me);
      }
      break;
    }
    case COLLIE_COLL_REDUCE_SCATTER: {
      const char *src[n];
      staged_operands(comm, op, g, (size_t)me * op->nat_piece * e, send + ((size_t)me * op->nat_count + lo) * e, src);
      if (!op->nat_drain_streams || !fold_streamed(comm, op, recv + lo * e, src, me, 0, len))
        shm_fold(comm, op, recv + lo * e, src, me, 0, len);
      break;
    }
    case COLLIE_COLL_ALLTOALL: {
      for (int j = 0; j < n; j++) {
        if (j == me && own_block_early(op)) continue; /* copied already (copy_own_block) */
        const char *src = j == me ? send + ((size_t)me * op->nat_count + lo) * e
                                  : staged(comm, op, j, g) + (size_t)me * op->nat_piece * e;
        shm_put(op, recv + ((size_t)j * op->nat_count + lo) * e, src, len * e, j != me);
      }
      break;
    }
    default: break;
  }
  if (stores) collie_store_end(stores, &span);
}

/* Large reductions: each rank reduces a slice (combine) before everyone copies (drain). */
static bool two_phase(const collie_op_t *op) {
  return (op->coll == COLLIE_COLL_ALLREDUCE || op->coll == COLLIE_COLL_REDUCE) && !op->nat_small;
}

/* Whether the drain waits for every other rank's staging (or reduction): all but
 * broadcast and a reduce's non-roots. When it did, every rank has finished the round
 * before (see advance). */
static bool drain_waits_all(const collie_comm_t *comm, const collie_op_t *op) {
  if (op->coll == COLLIE_COLL_BROADCAST) return false;
  return op->coll != COLLIE_COLL_REDUCE || comm->rank == op->root;
}

/* Which ranks' staging this rank reads in the drain, and through which counter. */
static bool drain_ready(collie_comm_t *comm, collie_op_t *op, uint64_t want) {
  if (op->coll == COLLIE_COLL_BROADCAST) return shm_one_reached(comm, op, op->root, COLLIE_SHM_STAGED, want);
  if (!drain_waits_all(comm, op)) return true; /* a reduce's non-root reads nothing */
  return shm_all_reached(comm, op, two_phase(op) ? COLLIE_SHM_REDUCED : COLLIE_SHM_STAGED, want);
}

/* Whom this rank must see enter the operation's first round, and compare calls with: all
 * ranks, except in small rooted operations, where the others need only the root (and
 * the root nobody, for broadcast): a broadcast root then leaves as soon as it has staged,
 * as an eager MPI send would. The single-copy agreement needs everyone. */
static bool must_meet(const collie_comm_t *comm, const collie_op_t *op, int r) {
  if (r == comm->rank) return false;
  if (op->nat_may_direct) return true;
  if (op->coll == COLLIE_COLL_BROADCAST || op->coll == COLLIE_COLL_REDUCE) {
    if (comm->rank != op->root) return r == op->root;
    return op->coll == COLLIE_COLL_REDUCE;
  }
  return true;
}

/* Where a rank reads round g's key: in the inline line for inline rounds (one line to
 * fetch), else beside the counters. A staged first round writes both keys and the inline
 * tag, an inline round only its slot's key, so that when ranks disagree on whether a call
 * is inline, each side sees the mismatch itself (not only through the failure the other
 * side relays): the inline side reads the staged side's inline key, the staged side an
 * older staged call's key (a lower sequence number, so it differs), and both explain it
 * from sig[] of the slot. */
static uint64_t *call_key_slot(const collie_comm_t *comm, collie_shm_area_t *a, const collie_op_t *op, uint64_t g) {
  return op->nat_inline ? a->inl[inl_slot(comm, g)].key : a->line.key[g & 1];
}

/* A small reduce's other ranks need nothing from its root, so, like an eager MPI send,
 * they stage and return without waiting for it (waiting cost each of them a turn on its
 * CPU where ranks outnumber CPUs: 2 cores, 8 B, us, alternating runs, CPUs 0.06 us apart,
 * 4 ranks 1.82 against 0.27, 8 ranks 3.8 against 0.6, 2 ranks 0.15 against 0.14). The root still
 * compares every rank's call with its own; each other rank compares its call with the
 * root's later (verify_deferred), and `done` says that it has finished a round only once
 * it has, so that two ranks that each name the other as the root (no root at all, both
 * returning success) are still found, by the next call that waits for them, by
 * collie_comm_synchronize, or at the latest at destroy. Inline rounds only: their keys
 * and fingerprints stay in slots that neither side writes again before that comparison
 * (the root waits for this rank's `done` before it reuses them, this rank for the
 * comparison before it runs inline_slots rounds further, advance). */
static bool defers_check(const collie_comm_t *comm, const collie_op_t *op) {
  return op->coll == COLLIE_COLL_REDUCE && comm->rank != op->root && op->nat_inline;
}

/* A call's key differs from the key rank r wrote for the same round: fails the
 * communicator with a sentence that compares the two calls' fingerprints. */
static int explain_mismatch(collie_comm_t *comm, int r, uint64_t g) {
  collie_xfer_t want;
  memset(&want, 0, sizeof(want));
  want.hdr = shm_area_of(comm, comm->rank)->sig[inl_slot(comm, g)];
  want.hdr.src_rank = r;
  const collie_wire_hdr_t *theirs_sig = &shm_area_of(comm, r)->sig[inl_slot(comm, g)];
  return collie_xfer_check_header(comm, &comm->peers[r], &want, theirs_sig) < 0 ? -1 : 0;
}

/* Compares the deferred rounds' calls with their roots', oldest first, as far as the
 * roots have entered them, and publishes `done` up to the first round still to compare.
 * op, if any, notes whom it waits for. >0 if `done` moved, <0 after failing the
 * communicator. */
static int verify_deferred(collie_comm_t *comm, collie_op_t *op) {
  collie_shm_state_t *st = comm->shm;
  const uint64_t from = st->verify_lo;
  while (st->verify_lo < st->verify_hi) {
    const uint64_t g = st->verify_lo;
    const unsigned i = inl_slot(comm, g);
    const int root = st->verify_root[i] - 1;
    if (root >= 0) {
      collie_shm_area_t *a = shm_area_of(comm, root);
      if (atomic_load_explicit(&a->inl[i].tag, memory_order_acquire) < g + 1) {
        if (op) shm_lags(comm, op, root, COLLIE_SHM_READY);
        else if (comm->oversubscribed) collie_set_wait_peer(comm, root);
        break;
      }
      const uint64_t *mine = shm_area_of(comm, comm->rank)->inl[i].key, *theirs = a->inl[i].key;
      if ((theirs[0] != mine[0] || theirs[1] != mine[1]) && explain_mismatch(comm, root, g) < 0) return -1;
      st->verify_root[i] = 0;
    }
    st->verify_lo = g + 1;
  }
  if (st->verify_lo == from) return 0;
  if (op) {
    shm_publish(comm, op, COLLIE_SHM_DONE, st->verify_lo);
  } else {
    shm_store(comm, COLLIE_SHM_DONE, st->verify_lo);
    collie_shm_notify_others(comm);
  }
  return 1;
}

int collie_native_settle(collie_comm_t *comm) {
  return collie_native_deferred(comm) ? verify_deferred(comm, NULL) : 0;
}

int collie_native_fast_done(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t g) {
  collie_shm_state_t *st = comm->shm;
  if (c->coll == COLLIE_COLL_REDUCE && comm->rank != c->root) st->verify_root[inl_slot(comm, g)] = c->root + 1;
  st->verify_hi = g + 1;
  return verify_deferred(comm, NULL);
}

bool collie_native_deferred(const collie_comm_t *comm) {
  return comm->shm && comm->shm->verify_lo < comm->shm->verify_hi;
}

int collie_native_deferred_root(const collie_comm_t *comm) {
  if (!collie_native_deferred(comm)) return -1;
  const collie_shm_state_t *st = comm->shm;
  for (uint64_t g = st->verify_lo; g < st->verify_hi; g++) {
    const int root = st->verify_root[inl_slot(comm, g)] - 1;
    if (root >= 0) return root;
  }
  return -1;
}

void collie_native_drop_deferred(collie_comm_t *comm) {
  if (comm->shm) comm->shm->verify_lo = comm->shm->verify_hi;
}

/* This rank has finished the rounds below `end`: `done` follows once the deferred
 * comparisons allow. <0 after failing the communicator. */
static int publish_done(collie_comm_t *comm, collie_op_t *op, uint64_t end) {
  comm->shm->verify_hi = end;
  return verify_deferred(comm, op) < 0 ? -1 : 0;
}

/* A broadcast's or scatter's root meets nobody (must_meet), so a second rank that believes
 * it is the root of the same call would go unseen: each would return success with its own
 * data, their messages to each other waiting unread (2 ranks, shared-memory broadcast
 * with roots 0 and 1; 3 ranks, 16-element scatter as messages with a barrier after: all
 * succeeded). When every rank shares this host, each root claims the operation number in
 * its area, in a ring, fences, and looks for another rank's claim of it (Dekker: of two
 * roots, the later sees the earlier's claim). The receivers compare their call with the
 * root's they name, so together every difference of roots is seen by someone. A claim
 * seen is always real: no false alarm. A claim must also stay until a late second root
 * has looked: the shared-memory broadcast claims in its first round (check_calls), and
 * reaching the round that overwrites the claim (COLLIE_SHM_ROOT_CLAIMS operations later)
 * needs every rank to have finished this one (done_known); a call sent as messages
 * claims when posted (collie_coll_post), and only a root that posts more than that many
 * such calls ahead could overwrite its claim early. Across hosts nothing is shared: such
 * a mismatch is found by the next call that reads the unread messages. */
int collie_claim_root(collie_comm_t *comm, collie_coll_t coll, int root, uint64_t seq) {
  if (comm->rank != root || !comm->shm || !comm->shm->area_off) return 0;
  if (coll != COLLIE_COLL_BROADCAST && coll != COLLIE_COLL_SCATTER) return 0;
  const unsigned i = (unsigned)(seq % COLLIE_SHM_ROOT_CLAIMS);
  atomic_store_explicit(&shm_area_of(comm, comm->rank)->root_claim[i], seq, memory_order_relaxed);
  atomic_thread_fence(memory_order_seq_cst);
  for (int r = 0; r < comm->nranks; r++) {
    if (r == comm->rank || atomic_load_explicit(&shm_area_of(comm, r)->root_claim[i], memory_order_relaxed) != seq)
      continue;
    char pd[160];
    collie_comm_fail(comm, COLLIE_ERR_MISMATCH, false,
                     "rank %d called %s with root=%d as operation #%llu while %s also called operation #%llu "
                     "as its root: every rank must pass the same root",
                     comm->rank, collie_coll_name(coll), root, (unsigned long long)seq,
                     collie_peer_desc(comm, r, pd, sizeof(pd)), (unsigned long long)seq);
    return -1;
  }
  return 0;
}

/* The first round of an operation: the ranks this one must meet have entered it, with the
 * same call (their keys match; on a difference the full fingerprints say how). */
static int check_calls(collie_comm_t *comm, collie_op_t *op, uint64_t g) {
  if (defers_check(comm, op)) {
    comm->shm->verify_root[inl_slot(comm, g)] = op->root + 1;
    op->nat_checked = true;
    return 1;
  }
  for (int r = 0; r < comm->nranks; r++)
    if (must_meet(comm, op, r) && !shm_one_reached(comm, op, r, COLLIE_SHM_READY, g + 1)) return 0;
  const uint64_t *mine = call_key_slot(comm, shm_area_of(comm, comm->rank), op, g);
  for (int r = 0; r < comm->nranks; r++) {
    if (!must_meet(comm, op, r)) continue;
    const uint64_t *theirs = call_key_slot(comm, shm_area_of(comm, r), op, g);
    if (theirs[0] == mine[0] && theirs[1] == mine[1]) continue;
    if (explain_mismatch(comm, r, g) < 0) return -1;
  }
  /* the single-copy path meets everyone instead */
  if (!op->nat_may_direct && collie_claim_root(comm, op->coll, op->root, op->seq) < 0) return -1;
  op->nat_checked = true;
  return 1;
}

/* Writes the first round's fingerprint and key (before `ready` publishes them). */
static void sign(collie_comm_t *comm, collie_op_t *op, uint64_t g) {
  collie_shm_area_t *a = shm_area_of(comm, comm->rank);
  collie_op_fingerprint(op, comm->rank, &a->sig[inl_slot(comm, g)]);
  call_key(op, a->inl[inl_slot(comm, g)].key);
  /* Only staged rounds use the counters' key: an inline round may run ahead of a rank
   * still checking the staged round two before it, whose key sits in the same place. */
  if (!op->nat_inline) memcpy(a->line.key[g & 1], a->inl[inl_slot(comm, g)].key, sizeof(a->line.key[g & 1]));
}

/* Stages round g; the caller publishes (one wake-up for everything it stored). */
static void stage(collie_comm_t *comm, collie_op_t *op, uint64_t g, uint64_t k) {
  if (fills(op, comm->rank)) fill(comm, op, g, k);
  shm_store(comm, COLLIE_SHM_STAGED, g + 1);
}

/* Whether every other rank's `done` has reached want (shm_done_seen, which answers most
 * asks without fetching the other ranks' counter lines, and so without pulling them away
 * from the ranks that are writing them); if not, notes the laggard. */
static bool done_known(collie_comm_t *comm, collie_op_t *op, uint64_t want) {
  if (shm_done_seen(comm, want)) return true;
  /* short: shm_all_reached notes the laggard (for timeouts and the oversubscribed wait) */
  return shm_all_reached(comm, op, COLLIE_SHM_DONE, want);
}

/* A rank that stages without waiting for the others' staging (a broadcast's root, a
 * reduce's other ranks) runs inline rounds ahead of its readers, and the lines its next
 * round writes are, in the readers' caches, those of the round a slot cycle back: its first
 * store to them waits until every reader's copy is gone, at the next fence or lock of its
 * call. Asked for now (PREFETCHW), while this call ends, they are this core's by then; only
 * once the readers have finished that round (a line taken from a reader still reading it
 * would travel back and forth). Broadcast, us, alternating runs against the code before,
 * CPUs 0.33 us apart (line_probe): 2 ranks, 8 B 0.155 to 0.193 against 0.210 to 0.221,
 * 128 B 0.149 to 0.161 against 0.213 to 0.225; 4 ranks on 2 cores, 8 B 0.224 to 0.250
 * against 0.320 to 0.341, 448 B 0.288 to 0.322 against 0.388 to 0.406; 8 ranks, 8 B 0.446
 * to 0.547 against 0.536 to 0.548; 2 ranks, 256 and 448 B, ahead in some runs (0.196 to
 * 0.205 against 0.228 to 0.234; 0.183 to 0.207 against 0.240 to 0.246) and behind in others
 * (0.261 to 0.267 against 0.222 to 0.245; 0.256 to 0.285 against 0.236 to 0.249). CPUs 0.05
 * apart: within 4% either way. Not for wide rounds (1 KiB on 2 ranks: 0.29 to 0.31 against
 * 0.26 to 0.28), nor for the ranks that wait for everyone (all-reduce, all-gather, ...),
 * which write their next round while the others may still look at the slot (2 ranks, 8 B
 * all-reduce: 0.45 against 0.40 to 0.42 far apart). A reduce's pace is its root's: its
 * other ranks' claims change nothing there (2 and 4 ranks, 8 B: alike). */
static void claim_next_round(collie_comm_t *comm, const collie_op_t *op, uint64_t g) {
  if (inl_wide(op) || !fills(op, comm->rank) || drain_waits_all(comm, op)) return;
  const uint64_t next = g + 1, back = reuse_distance(comm, op);
  if (next >= back && comm->native_done_seen < next - back + 1) return;
  shm_prefetch_write(comm, &shm_area_of(comm, comm->rank)->inl[inl_slot(comm, next)]);
  const collie_shm_inline_ext_t *ext = inl_ext(comm, op, comm->rank, next);
  for (int i = 1; i < op->nat_inl_lines; i++) shm_prefetch_write(comm, &ext[i - 1]);
}

/* Runs as many phases of op as its peers allow. Returns >0 if anything moved, <0 after
 * failing the communicator. */
static int advance(collie_comm_t *comm, collie_op_t *op) {
  int moved = 0;
  while (op->nat_round < op->nat_end) {
    const uint64_t g = op->nat_round, k = g - op->nat_base;
    if (op->nat_phase == PH_FILL) {
      /* A round whose call is still to be compared with its root's (defers_check) keeps
       * the root's inline slot in use until then. A rank that waited for everyone's
       * staging of round g-1 takes it that everyone has finished with round g-1-back
       * and earlier (native_prev_all, below), so the comparison of round g+1-slots comes
       * before this rank stages round g. */
      if (g + 1 >= comm->shm->verify_lo + comm->shm->inl_slots) {
        if (verify_deferred(comm, op) < 0) return -1;
        if (g + 1 >= comm->shm->verify_lo + comm->shm->inl_slots) return moved;
      }
      /* This staging buffer was last used in round g-2 (a broadcast's slot in round
       * g-slots, an inline slot in round g-SLOTS): everyone must have finished that round.
       * A rank stages a round only after finishing the one before, so when round g-1
       * waited for everyone's staging, that is known already. After rounds in the other
       * layout, everyone must have finished those (nat_fence). */
      const uint64_t back = reuse_distance(comm, op);
      if (g >= back && !comm->native_prev_all && !done_known(comm, op, g - back + 1)) return moved;
      if (!done_known(comm, op, op->nat_fence)) return moved; /* at once once known (or 0) */
      /* The first round carries the call's fingerprint and buffer locations; only it is
       * checked. A rank whose buffers the others could reach stages nothing until everyone
       * has said whether theirs can be reached too: then nobody copies twice. */
      op->nat_unstaged = false;
      if (!op->nat_checked) {
        sign(comm, op, g);
        op->nat_unstaged = op->nat_may_direct && collie_direct_publish(comm, op, g);
      }
      if (!op->nat_unstaged) stage(comm, op, g, k);
      /* The inline tag, after the key and (inline rounds) the data: it stands for `ready`
       * and `staged` of inline rounds, and carries every first round's key. */
      if (op->nat_inline || !op->nat_checked)
        atomic_store_explicit(&shm_area_of(comm, comm->rank)->inl[inl_slot(comm, g)].tag, g + 1, memory_order_release);
      shm_publish(comm, op, COLLIE_SHM_READY, g + 1);
      if (op->nat_inline) claim_next_round(comm, op, g);
      op->nat_phase = two_phase(op) ? PH_COMBINE : PH_DRAIN;
      if (!op->nat_unstaged) copy_own_block(comm, op, k);
      moved = 1;
    }
    if (!op->nat_checked) {
      int c = check_calls(comm, op, g);
      if (c <= 0) return c < 0 ? -1 : moved;
      if (op->nat_may_direct && collie_direct_agreed(comm, op, g)) {
        if (collie_direct_run(comm, op, g) < 0) return -1;
        if (!comm->native_direct_logged) {
          comm->native_direct_logged = true;
          char what[96];
          COLLIE_INFO(COLLIE_SUB_COLL, comm->rank, "%s: every rank's buffers are reachable: single copy, nothing staged",
                      collie_request_what(op->req, what, sizeof(what)));
        }
        op->nat_direct = true;
        for (int c2 = 0; c2 < COLLIE_SHM_NCOUNTERS; c2++)
          if (c2 != COLLIE_SHM_DONE) shm_store(comm, c2, op->nat_end);
        if (publish_done(comm, op, op->nat_end) < 0) return -1;
        collie_shm_notify_others(comm);
        moved = 1;
      } else if (op->nat_unstaged) {
        stage(comm, op, g, k);
        collie_shm_notify_others(comm);
        copy_own_block(comm, op, k);
        op->nat_unstaged = false;
        moved = 1;
      }
    }
    if (op->nat_direct) {
      /* Nobody may return before the others have finished with its buffers. */
      if (!shm_all_reached(comm, op, COLLIE_SHM_DONE, op->nat_end)) return moved;
      op->nat_round = op->nat_end;
      comm->native_prev_all = true;
      return 1;
    }
    if (op->nat_phase == PH_COMBINE) {
      if (!shm_all_reached(comm, op, COLLIE_SHM_STAGED, g + 1)) return moved;
      combine(comm, op, g, k);
      shm_publish(comm, op, COLLIE_SHM_REDUCED, g + 1);
      op->nat_phase = PH_DRAIN;
      moved = 1;
    }
    if (!drain_ready(comm, op, g + 1)) return moved;
    drain(comm, op, g, k);
    if (publish_done(comm, op, g + 1) < 0) return -1;
    comm->native_prev_all = two_phase(op) || drain_waits_all(comm, op);
    op->nat_phase = PH_FILL;
    op->nat_round++;
    moved = 1;
  }
  return moved;
}

/* Returns >0 if anything moved, <0 after failing the communicator. */
int collie_native_progress(collie_comm_t *comm) {
  collie_op_t *op = comm->ops;
  while (op && (!op->native || op->steps_done)) op = op->next;
  /* Deferred comparisons first; with an operation under way its wake-up (one fence at the
   * end of the pass for an inline round, shm_publish) serves their `done` too. */
  int verified = 0;
  if (collie_native_deferred(comm)) {
    verified = verify_deferred(comm, op);
    if (verified < 0) return -1;
  }
  if (!op) return verified;
  int moved = advance(comm, op);
  if (moved >= 0) moved |= verified;
  if (comm->shm->wake_pending) { /* see shm_publish */
    comm->shm->wake_pending = false;
    collie_shm_notify_others(comm);
  }
  if (moved < 0) return -1;
  if (op->nat_round == op->nat_end) {
    op->steps_done = true;
    comm->native_ops--;
  }
  return moved;
}

void collie_native_describe(collie_comm_t *comm, const collie_op_t *op, char *buf, size_t len) {
  static const char *what[] = {"enter the collective", "stage its data", "reduce its slice", "finish reading"};
  char pd[160], w[96];
  uint64_t k = op->nat_round - op->nat_base;
  /* Before staging, a rank waits for a round that last used the same lines or buffer: of
   * an earlier call (up to comm->shm->inl_slots - 1 calls back, for a broadcast root). */
  const bool earlier = op->nat_phase == PH_FILL && op->nat_wait_flag == COLLIE_SHM_DONE;
  snprintf(buf, len, "%s: waiting in shared memory for %s to %s (round %llu of %llu)",
           collie_request_what(op->req, w, sizeof(w)), collie_peer_desc(comm, op->nat_wait, pd, sizeof(pd)),
           earlier ? "finish an earlier collective whose shared-memory space this one reuses"
                   : what[op->nat_wait_flag % COLLIE_SHM_NCOUNTERS],
           (unsigned long long)k + 1, (unsigned long long)op->nat_nrounds);
}
