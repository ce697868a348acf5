/* Shared-memory transport between ranks of one host (processes or threads).
 *
 * Each rank owns one segment holding its incoming rings (one per local sender) and its
 * doorbell. A ring is `nslots` slots of `slot_size` bytes; the sender publishes `head`, the
 * receiver publishes `tail`, each on its own cache line, as 64-bit counters with
 * acquire/release ordering. Segments are unlinked as soon as every local peer has mapped
 * them, so even kill -9 leaves nothing in /dev/shm. */
#ifndef COLLIE_SHM_H
#define COLLIE_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "core/own_waits.h"
#include "core/store_choice.h"
#include "transport/wire.h"

typedef struct {
  _Atomic uint32_t doorbell; /* bumped by peers that made progress for us while we sleep */
  char pad0[60];
  _Atomic uint32_t sleeping; /* how many of our threads are (about to be) asleep on the doorbell */
  char pad1[60];
  uint64_t magic, nslots, slot_size, nrings;
  /* The single-copy probe (shm_peer_mem.c): a one-page collie_mem_alloc the owner offers,
   * and whether the owner could map every peer's. */
  int32_t probe_pid, probe_fd;
  uint64_t probe_id;
  _Atomic uint32_t maps_peers;
  /* The cross-memory-attach probe (shm_cma.c): whether the owner could read every peer
   * with process_vm_readv, whether it leaves the choice to the measurement at creation
   * (COLLIE_SHM_CMA unset; bits in shm_cma.c), and where its probe value is. */
  _Atomic uint32_t cma_peers;
  int32_t cma_pid;
  uint32_t cma_pad;
  uint64_t cma_addr;
  /* We are in sched_yield, with more ranks than cores: with `sleeping`, a hint for
   * waiters, who poll only while we may run (wait.c). Not beside `sleeping`, which every
   * rank reads after each of its inline rounds (collie_shm_notify_others): a rank that
   * yields writes `away` twice per yield, and on that line each of those reads missed. The
   * rest of this line is read only at creation. */
  _Atomic uint32_t away;
  char pad2[52];
  /* Why this rank's communicator failed, for its local peers (collie_shm_post_failure).
   * Failure notices otherwise pass through rank 0 (bootstrap/control.c), and a rank 0 that
   * is stopped (a debugger, SIGSTOP) passed none on: a rank that waited for a local peer
   * that had timed out on rank 0, or aborted, timed out in turn naming only that peer.
   * `fail_claim` picks one writer; `failed` (its collie_result_t, 0 until then) is released
   * after `fail_text`. */
  _Atomic uint32_t fail_claim, failed;
  char fail_text[1016];
  /* What this rank waits for while it waits without progress (collie_shm_post_waits), for
   * a local peer that times out waiting for it: the question otherwise passes through rank
   * 0, and a stopped rank 0 passed none on, so that peer could only say this rank "did not
   * answer". A seqlock: `waits_seq` is odd while the owner writes; `waits_ns` is when. One
   * writer at a time: collie_own_waits_post holds its process-wide list lock. */
  _Atomic uint64_t waits_seq;
  _Atomic int64_t waits_ns;
  char waits_text[COLLIE_WAITS_TEXT], waits_end[COLLIE_WAITS_TEXT];
  char pad3[48];
} collie_shm_seg_hdr_t;
_Static_assert(sizeof(collie_shm_seg_hdr_t) == 2304, "the header keeps its size");
_Static_assert(offsetof(collie_shm_seg_hdr_t, away) / 64 != offsetof(collie_shm_seg_hdr_t, sleeping) / 64,
               "`away` and `sleeping` on lines of their own");

/* The collective area at the end of each rank's segment (algo/shm_native.c): counters
 * that only its owner writes and every local peer reads, then two staging buffers. The
 * counters count rounds of shared-memory collectives since the communicator began. */
/* Where one of the owner's buffers is, for peers that read or write it directly
 * (algo/native/shm_direct.c). */
enum { COLLIE_BUFLOC_NONE, COLLIE_BUFLOC_ADDR, COLLIE_BUFLOC_MEM, COLLIE_BUFLOC_CMA };
typedef struct {
  uint8_t kind;   /* NONE: not reachable; ADDR: an address in the owner's process (ranks
                     that are threads of one process); MEM: inside a collie_mem_alloc;
                     CMA: an address in process `pid`, read with process_vm_readv or
                     written with process_vm_writev (shm_cma.c) */
  uint8_t pad[3];
  int32_t pid, fd;  /* MEM: the owner's process and the allocation's descriptor */
  uint32_t pad2;
  uint64_t id, off; /* MEM: the allocation's id and the buffer's offset in it */
  uint64_t addr;    /* ADDR: the address */
  uint64_t len;
} collie_shm_bufloc_t;

/* The area's counters. They share one cache line, with the keys of the staged first
 * rounds (inline rounds keep theirs in their slot's first line): only the owner writes
 * it, and a rank waiting on the owner then fetches one line, not four. */
enum {
  COLLIE_SHM_READY,   /* rounds the owner has entered (fingerprint and buffer locations written) */
  COLLIE_SHM_STAGED,  /* rounds whose data the owner has staged */
  COLLIE_SHM_REDUCED, /* rounds whose slice the owner has reduced in place */
  COLLIE_SHM_DONE,    /* rounds the owner has finished reading from everyone */
  COLLIE_SHM_NCOUNTERS
};
typedef struct {
  _Atomic uint64_t ctr[COLLIE_SHM_NCOUNTERS];
  /* Per staging buffer: a staged first round's call, its sequence number and a hash of
   * the rest of its fingerprint (inline rounds keep theirs in their slot's first line).
   * The first round compares these; sig[] is read only to explain a mismatch. */
  uint64_t key[2][2];
} collie_shm_line_t;
_Static_assert(sizeof(collie_shm_line_t) == 64, "the counters fill one cache line");

/* Small collectives (one round of at most COLLIE_SHM_INLINE_BYTES per rank, most of them
 * far fewer: shm_native.c, inline_lines_max) stage in the cache line that carries their
 * tag (the round + 1): NCCL's low-latency idea, the flag in the data's line. Per slot,
 * the first line holds the tag, the call key and 40 bytes, and up to COLLIE_SHM_INLINE_EXT
 * more lines 64 bytes each, written before the tag (which is released after them and
 * stands for `ready` and `staged`). A reader waiting for the tag prefetches the other
 * lines (those of a wide round, below, once the tag is there: algo/native/shm_rounds.h),
 * so that they travel together instead of one after the other (through the staging
 * buffer: the counters' line, then the data's). Those lines once
 * carried a tag each, as in NCCL, where the data crosses a bus that may reorder it; here
 * the release/acquire pair orders them. */
/* Inline rounds cycle through slots of lines (staged rounds through the two staging
 * buffers), so that a rank that waits for nobody in a small call (a broadcast's root) runs
 * up to that many rounds ahead of the slowest reader before it must wait. (A small
 * reduce's other ranks wait for the root's entry into each round: they stay within about
 * one round of it.) The area has COLLIE_SHM_INLINE_SLOTS; a communicator uses all of them
 * where the host's ranks outnumber its CPUs, and COLLIE_SHM_INLINE_SLOTS_UNCROWDED
 * otherwise (collie_shm_state_t.inl_slots). Crowded, each rank of a CPU must run in turn,
 * and the further its root runs ahead the more calls each reader finishes per turn (2
 * cores, 8 B broadcast, medians of 8 to 10 alternating runs, us, 32 slots against 128: 3
 * ranks 0.51 and 0.28, 4 ranks 0.41 and 0.29, 8 ranks 1.04 and 0.79). With a CPU each
 * there is no turn to save, and a root far ahead only leaves colder lines: 128 slots of 8
 * lines overflow the first-level cache (2 ranks, 200 B: 0.161 us with 32, 0.198 with 128;
 * 8 B within noise). */
#define COLLIE_SHM_INLINE_SLOTS 128
#define COLLIE_SHM_INLINE_SLOTS_UNCROWDED 32
#define COLLIE_SHM_ROOT_CLAIMS 256
_Static_assert(COLLIE_SHM_ROOT_CLAIMS > COLLIE_SHM_INLINE_SLOTS, "a root's claim outlives its run-ahead");
_Static_assert((COLLIE_SHM_INLINE_SLOTS & (COLLIE_SHM_INLINE_SLOTS - 1)) == 0 &&
                   (COLLIE_SHM_INLINE_SLOTS_UNCROWDED & (COLLIE_SHM_INLINE_SLOTS_UNCROWDED - 1)) == 0 &&
                   COLLIE_SHM_INLINE_SLOTS_UNCROWDED >= 2 &&
                   COLLIE_SHM_INLINE_SLOTS_UNCROWDED <= COLLIE_SHM_INLINE_SLOTS,
               "inline slots (inl_slot masks with their count): powers of two, the uncrowded count at most the "
               "area's");
/* Every slot has 7 further lines: up to 8 lines in all, COLLIE_SHM_INLINE_LINES_SMALL, what
 * most collectives use at most. A broadcast goes up to 4 KiB in inline rounds (its root
 * runs ahead through the slots, shm_native.c: inline_lines_max); a round of more than 8
 * lines keeps its further lines in one of COLLIE_SHM_WIDE_SLOTS wide slots instead (round g
 * in slot g mod that), so that a root runs up to that many such rounds ahead (32: where
 * the ranks outnumber the CPUs, they would use 128 slots), and the area grows by 128 KiB
 * rather than 456 KiB for 64 lines in every one of 128 slots: a segment is reserved whole
 * (8 ranks: 7.5 MiB of /dev/shm per communicator before, 8.5 now, and
 * tests/proc/shm_footprint_test.sh fits 7 of them in Docker's default 64 MiB). 4 ranks on
 * 2 cores, 4 KiB broadcast, us, CPUs 0.33 us apart (line_probe): 16 wide slots 1.38, 32
 * 0.65, 64 0.60, the binomial tree 1.6 to 1.8; 1 KiB, 0.05 us apart: 32 0.33, 64 0.29, the
 * tree 0.8. */
#define COLLIE_SHM_INLINE_FIRST 40
#define COLLIE_SHM_INLINE_NEXT 64
#define COLLIE_SHM_INLINE_LINES_SMALL 8
#define COLLIE_SHM_INLINE_EXT (COLLIE_SHM_INLINE_LINES_SMALL - 1)
#define COLLIE_SHM_WIDE_EXT 64
#define COLLIE_SHM_WIDE_SLOTS 32
#define COLLIE_SHM_INLINE_BYTES (COLLIE_SHM_INLINE_FIRST + COLLIE_SHM_WIDE_EXT * COLLIE_SHM_INLINE_NEXT)
/* The most bytes of a round of COLLIE_SHM_INLINE_LINES_SMALL lines (488). */
#define COLLIE_SHM_INLINE_SMALL_BYTES (COLLIE_SHM_INLINE_FIRST + COLLIE_SHM_INLINE_EXT * COLLIE_SHM_INLINE_NEXT)
_Static_assert(COLLIE_SHM_WIDE_SLOTS <= COLLIE_SHM_INLINE_SLOTS_UNCROWDED &&
                   (COLLIE_SHM_WIDE_SLOTS & (COLLIE_SHM_WIDE_SLOTS - 1)) == 0,
               "wide slots: a power of two, reused no later than the inline slots");
typedef struct {
  _Atomic uint64_t tag;
  uint64_t key[2];
  char data[COLLIE_SHM_INLINE_FIRST];
} collie_shm_inline_t;
_Static_assert(sizeof(collie_shm_inline_t) == 64, "an inline round's first line fills one cache line");
typedef struct {
  char data[COLLIE_SHM_INLINE_NEXT];
} collie_shm_inline_ext_t;
_Static_assert(sizeof(collie_shm_inline_ext_t) == 64, "an inline round's further line fills one cache line");

typedef struct collie_shm_area {
  _Alignas(64) collie_shm_line_t line;
  collie_shm_inline_t inl[COLLIE_SHM_INLINE_SLOTS];
  collie_shm_inline_ext_t inl_ext[COLLIE_SHM_INLINE_SLOTS][COLLIE_SHM_INLINE_EXT];
  collie_shm_inline_ext_t inl_wide[COLLIE_SHM_WIDE_SLOTS][COLLIE_SHM_WIDE_EXT]; /* rounds of more than 8 lines */
  collie_wire_hdr_t sig[COLLIE_SHM_INLINE_SLOTS]; /* per inline slot: a first round's call, to explain mismatches */
  /* By operation number, in a ring: the broadcasts and scatters whose root this rank
   * believes it is. A root waits for nobody, so two ranks that both think they are the
   * root would otherwise each return success (shm_native.c: collie_claim_root). */
  _Atomic uint64_t root_claim[COLLIE_SHM_ROOT_CLAIMS];
  /* Per inline slot, as sig[]: a first round's send [0] and receive [1] buffers, for the
   * single-copy path. Not per staging buffer: a broadcast root runs up to the area's slots
   * ahead, and its later calls overwrote where an earlier one's buffer was while a slower
   * rank still had to read it (that rank then copied a later call's buffer, of another
   * size: wrong data or SIGSEGV). */
  collie_shm_bufloc_t loc[COLLIE_SHM_INLINE_SLOTS][2];
} collie_shm_area_t;
_Static_assert(sizeof(collie_shm_area_t) % 64 == 0, "the staging buffers start on a cache line");

/* A piece of a large reduction folded in private memory while staging copies stream: it
 * stays in the first-level cache through the ranks' passes (algo/native/shm_native.c). */
#define COLLIE_SHM_FOLD_PIECE (16 * 1024)
/* The collectives whose drains copy out of staging, each timing its own copies: all-reduce
 * and reduce, broadcast, all-gather, all-to-all, reduce-scatter. */
enum { COLLIE_SHM_DRAIN_KINDS = 5 };

typedef struct collie_shm_state {
  collie_shm_seg_hdr_t *mine;
  size_t seg_bytes;
  char name[64];
  int unlinked;
  void **segs;      /* per local index: mapped segment (mine included) */
  struct collie_shm_area **areas; /* per local index: its collective area in segs (NULL: none) */
  uint64_t nslots, slot_size;
  size_t area_off;  /* offset of the collective area in every segment; 0: none */
  size_t area_size; /* bytes of each of its two staging buffers */
  size_t round_size; /* bytes a round stages in them, in the two-buffer layout (shm_native.c) */
  bool crowded;      /* this host's ranks outnumber its online CPUs: the same on every rank,
                     * so protocol choices may depend on it (comm->oversubscribed may not) */
  uint64_t inl_slots; /* inline slots in use, a power of two (COLLIE_SHM_INLINE_SLOTS above) */
  bool one_process; /* every rank is a thread of this process */
  bool direct_ok;   /* every local rank can map every other's collie_mem_alloc memory */
  bool cma_ok;      /* every local rank can read every other with process_vm_readv */
  bool cma_msgs;    /* and messages (and the all-to-all) from 64 KiB do: unless measured slower */
  bool cma_measure; /* after settling: cma_ok, with cma_msgs left to collie_shm_cma_measure */
  bool lazy_rings;  /* rings get their memory as pairs use them, not at creation (shm.c) */
  bool prewrite;    /* staging buffers are mapped (and written) whole at creation */
  bool wake_pending; /* a collective published progress; peers asleep are not woken yet (shm_rounds.h) */
  bool prefetchw;    /* x86-64: the CPU has PREFETCHW (shm_prefetch_write in shm_rounds.h) */
  /* A small reduce's other ranks return without waiting for its root (shm_native.c,
   * defers_check): rounds from verify_lo to verify_hi have finished here, but `done` says
   * so only once each such round's call was compared with its root's; verify_root, per
   * inline slot, names that root (+1; 0: nothing to compare in that round). */
  uint64_t verify_lo, verify_hi;
  int32_t verify_root[COLLIE_SHM_INLINE_SLOTS];
  char *inl_bytes;   /* per rank, COLLIE_SHM_INLINE_BYTES: an inline round's bytes in one piece */
  collie_store_choice_t fill_stores; /* how the collectives' staging copies store (core/store_choice.h) */
  /* how copies out of staging into large receive buffers store, per collective
   * (shm_native.c, drain_stores_of) */
  collie_store_choice_t drain_stores[COLLIE_SHM_DRAIN_KINDS];
  char *fold_piece; /* COLLIE_SHM_FOLD_PIECE bytes: a reduction folded here, then streamed out (shm_native.c) */
  int cma_mode;     /* COLLIE_SHM_CMA: 0 never, 1 messages and all-to-all from 64 KiB (also when unset:
                     * measured), 2 also all-gather and broadcast */
  uint64_t cma_probe[2]; /* the value peers read to probe CMA (until settled) */
  void *probe;      /* this rank's probe page, until the ranks have agreed */
  struct collie_shm_peer_map *maps; /* peers' collie_mem_alloc allocations mapped here */
  int nmaps, maps_cap;
} collie_shm_state_t;

/* The local address of a peer's buffer that `loc` (published by `rank`) describes, mapped
 * on first use and kept until the communicator is destroyed. NULL after failing the
 * communicator with a sentence (the peer's allocation could not be opened or is gone). */
char *collie_shm_peer_buffer(collie_comm_t *comm, int rank, const collie_shm_bufloc_t *loc);
void collie_shm_unmap_peers(collie_shm_state_t *st);
/* The single-copy probe. Create phase: offer a page. Connect phase: map every peer's and
 * publish whether all worked. After the barrier that follows: direct_ok = every rank could
 * (the same answer everywhere). COLLIE_SHM_DIRECT=0 skips it all (direct_ok false). */
void collie_shm_probe_offer(collie_comm_t *comm);
/* Logs (INFO) that a single-copy probe found local peer `li` out of reach, and why. */
void collie_shm_probe_failed(collie_comm_t *comm, int li, const char *what, const char *why);
void collie_shm_probe_peers(collie_comm_t *comm);
void collie_shm_probe_settle(collie_comm_t *comm);
/* Cross-memory attach (shm_cma.c): single copy of ordinary buffers between processes.
 * A message that shm.c sends that way (cma_for) travels as its location only, and the
 * receiver reads it with process_vm_readv. The probe runs beside the one above, in the same
 * phases; cma_ok ends the same on every rank. */
#define COLLIE_CMA_MIN (64 * 1024)
void collie_shm_cma_offer(collie_comm_t *comm);
void collie_shm_cma_probe(collie_comm_t *comm);
void collie_shm_cma_settle(collie_comm_t *comm);
/* COLLIE_SHM_CMA unset (shm_cma_choice.c): on a working communicator, local ranks 0 and 1
 * time an exchange of ordinary buffers by CMA and through the ring, and every local rank
 * keeps CMA for messages (cma_msgs) only if it was faster. Called by every rank after
 * creation; returns at once where there is nothing to measure. */
collie_result_t collie_shm_cma_measure(collie_comm_t *comm);
/* Reads x's payload (all of it) from the sender's buffer at loc into x's destination,
 * reducing when x is a receive-reduce (through `bounce`, COLLIE_CMA_BOUNCE bytes). 0, or
 * -1 after failing the communicator with a sentence. */
#define COLLIE_CMA_BOUNCE (64 * 1024)
struct collie_xfer;
int collie_shm_cma_read(collie_comm_t *comm, int peer, struct collie_xfer *x, const collie_shm_bufloc_t *loc,
                        char *bounce);
/* Describes [p, p+len) of this process as a CMA location (a message's, or a buffer the
 * shared-memory collectives publish: algo/native/shm_direct.c). */
void collie_shm_cma_locate(const void *p, size_t len, collie_shm_bufloc_t *loc);
/* Reads len bytes at offset off of a peer's CMA location into dst: 0, or -1 after failing
 * the communicator with a sentence. */
int collie_shm_cma_copy(collie_comm_t *comm, int peer, char *dst, const collie_shm_bufloc_t *loc, uint64_t off,
                        size_t len);
/* Writes len bytes from src at offset off of a peer's CMA location (process_vm_writev): 0,
 * or -1 after failing the communicator with a sentence. */
int collie_shm_cma_put(collie_comm_t *comm, int peer, const collie_shm_bufloc_t *loc, uint64_t off, const char *src,
                       size_t len);

/* Describes [p, p+len) for the other local ranks; false (kind NONE) when they cannot reach
 * it: not collie_mem_alloc memory, and the ranks are not threads of one process. */
bool collie_shm_locate(const collie_comm_t *comm, const void *p, size_t len, collie_shm_bufloc_t *loc);

/* Phase 1: create this rank's segment. Phase 2 (after all local ranks created theirs):
 * map the peers' segments and set up their transport state. Phase 3 (after all mapped):
 * unlink. The caller runs a barrier between the phases. */
/* The collective area of a host with nlocal ranks (COLLIE_SHM_COLL_SIZE, or what it means
 * unset there), the same on every rank of a host with the same settings: the bytes of
 * each of its two buffers (0: none), and of a round in the two-buffer layout
 * (shm_native.c). The round is the whole buffer, except with a CPU per rank and
 * COLLIE_SHM_COLL_SIZE unset, where the buffers are larger than the rounds (the slot
 * layout of all-gathers and broadcasts uses all of them). */
typedef struct {
  size_t buffer, round;
} collie_shm_area_sizes_t;
collie_shm_area_sizes_t collie_shm_area_sizes(int nlocal);

collie_result_t collie_shm_create(collie_comm_t *comm);
collie_result_t collie_shm_connect(collie_comm_t *comm);
void collie_shm_unlink(collie_comm_t *comm);
/* After a failed creation: removes every local rank's segment name. A rank that died
 * between creating its segment and its unlink cannot remove its own, and nobody will map
 * them any more (the failure reaches every rank). */
void collie_shm_unlink_peers(collie_comm_t *comm);
void collie_shm_destroy(collie_comm_t *comm);

/* The collective area of local rank `li` (NULL when the communicator has none), and its
 * staging buffer `parity` (0 or 1). */
static inline collie_shm_area_t *collie_shm_area(const collie_comm_t *comm, int li) {
  const collie_shm_state_t *st = comm->shm;
  return st && st->areas ? st->areas[li] : NULL;
}
static inline char *collie_shm_area_buf(collie_shm_area_t *a, int parity, size_t area_size) {
  return (char *)(a + 1) + (size_t)parity * area_size;
}
/* Wakes every other local rank that sleeps on its doorbell. */
void collie_shm_notify_others(collie_comm_t *comm);

/* Waiting: read the doorbell, announce sleep, re-check for work, then sleep. */
uint32_t collie_shm_sleep_prepare(collie_comm_t *comm);
void collie_shm_sleep(collie_comm_t *comm, uint32_t seen, int timeout_ms);
void collie_shm_sleep_done(collie_comm_t *comm);
void collie_shm_wake_self(collie_comm_t *comm);
/* Whether local rank li may be running now: it has not said that it yields or sleeps (it may
 * still have lost its core to the scheduler, or be busy outside collie). Inline: the
 * oversubscribed wait asks it for every laggard and every poll. */
static inline bool collie_shm_peer_on_cpu(const collie_comm_t *comm, int li) {
  const collie_shm_seg_hdr_t *h = comm->shm->segs[li];
  return !atomic_load_explicit(&h->away, memory_order_relaxed) &&
         !atomic_load_explicit(&h->sleeping, memory_order_relaxed);
}

/* This rank gives up its core (sched_yield), saying so to waiters. */
void collie_shm_yield(collie_comm_t *comm);

/* This rank's communicator failed, for the reason `msg` (the sentence the others should
 * see): written once into its segment for the local peers, who are woken to look. Safe
 * from any thread while the segments are mapped. */
void collie_shm_post_failure(collie_comm_t *comm, collie_result_t res, const char *msg);
/* A local peer's notice that its communicator failed: its result, with the peer's rank in
 * *rank and its sentence in text; COLLIE_SUCCESS when no local peer posted one. */
collie_result_t collie_shm_peer_failure(const collie_comm_t *comm, int *rank, char *text, size_t len);
/* This rank waits without progress: `text` and `end` (COLLIE_WAITS_TEXT each, as
 * collie_own_waits_describe writes them) say in what, for its local peers. */
void collie_shm_post_waits(collie_comm_t *comm, const char *text, const char *end);
/* What local rank `rank` last posted that it waits for, if it did at or after `since_ns`
 * (collie_now_ns) and its post is whole; false otherwise (not local, never posted, or a
 * post being written, or cut short by the writer's death). */
bool collie_shm_peer_waits(const collie_comm_t *comm, int rank, int64_t since_ns, char *text, char *end);

#endif
