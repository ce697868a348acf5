/* Which way a large message between two processes of one host is cheaper: the ring's two
 * copies (the sender's into a slot, the receiver's out of it) or one process_vm_readv
 * (shm_cma.c). The answer depends on the machine and moves with it:
 *   - two vCPUs sharing a large L3 (AMD EPYC VM, bench/exchange_probe 33 to 70 us): the
 *     copies run at 0.02 to 0.03 ns per byte each, CMA at about 0.08: the ring wins from
 *     256 KiB (2 ranks, 512 KiB all-to-all messages 37 against 55 us);
 *   - the same VM in its slow phases (exchange_probe 270 to 320 us): a copy into a slot
 *     runs at 0.40 ns/B and CMA wins three to five times over;
 *   - an Intel Xeon VM (exchange_probe 130 us): the copies run at 0.05 to 0.08 ns/B each,
 *     CMA at about 0.1: CMA wins 1.5 to 2 times from 1 MiB.
 * So each rank measures both ways as it uses them and takes the cheaper. Every copy of
 * COST_MIN_COPY bytes or more that belongs to a large message is timed and folded into
 * a moving average: the sender's copies into slots or the collectives' staging area
 * (`in`), the receiver's copies out (`out`) and its CMA reads (`cma`). Each rank
 * publishes its averages in its segment header, so that a sender weighs the copies out
 * and reads its receiver sees. One decision in EXPLORE_EVERY goes the other way, so that the
 * average of the way not taken follows the machine too.
 *
 * Copies are timed in the thread's CPU time, not wall time: ranks that outnumber the
 * cores are preempted in the middle of long copies (a CMA read of a whole block) far more
 * often than in short ones (a slot), right after a wake-up; in wall time 4 ranks on 2
 * cores showed CMA reads at 2 to 4 times their cost. Reading that clock is a system call
 * (0.35 us here), so only one copy into or out of the ring in SAMPLE_EVERY is timed. */
#include <time.h>

#include "core/comm.h"
#include "transport/shm.h"

#define COST_MIN_COPY (16 * 1024)
#define EXPLORE_EVERY 16
#define SAMPLE_EVERY 8
/* CMA is taken only when it is this much cheaper than the two copies: on a tie the ring
 * keeps the result in cache and costs no system call. */
#define CMA_MARGIN 1.15

static int64_t cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t collie_shm_cost_start(collie_shm_state_t *st, int what, bool weighed) {
  if (!st->cma_ok || st->cma_mode != 1 || !weighed) return 0;
  if (what != COLLIE_COST_CMA && ++st->cost_tick[what] % SAMPLE_EVERY) return 0;
  return cpu_ns();
}

void collie_shm_cost_note(collie_shm_state_t *st, int what, int64_t t0, size_t n) {
  if (!t0 || n < COST_MIN_COPY) return;
  const int64_t ns = cpu_ns() - t0;
  if (ns <= 0) return;
  double ps = (double)ns * 1000.0 / (double)n;
  if (ps > 1e9) ps = 1e9;
  uint32_t *avg = &st->cost_ps[what];
  *avg = *avg ? (uint32_t)((7.0 * *avg + ps) / 8.0) : (uint32_t)ps;
  if (!*avg) *avg = 1; /* 0 means "not measured" */
  atomic_store_explicit(&st->mine->cost_ps[what], *avg, memory_order_relaxed);
}

/* A receiver's published cost, or this rank's own when it has none. */
static double cost_of(const collie_shm_state_t *st, const collie_shm_seg_hdr_t *rx, int what) {
  const uint32_t v = rx ? atomic_load_explicit(&rx->cost_ps[what], memory_order_relaxed) : 0;
  return v ? v : st->cost_ps[what];
}

static bool cma_cheaper(const collie_shm_state_t *st, const collie_shm_seg_hdr_t *rx) {
  const double cma = cost_of(st, rx, COLLIE_COST_CMA);
  double in = st->cost_ps[COLLIE_COST_IN];
  double out = cost_of(st, rx, COLLIE_COST_OUT);
  if (!cma) return true;          /* never measured: try it */
  if (!in && !out) return false;  /* the ring never measured: try it */
  if (!out) out = in;             /* a copy out costs about what a copy in does */
  if (!in) in = out;
  return in + out > CMA_MARGIN * cma;
}

bool collie_shm_cma_weighed(const collie_comm_t *comm, const collie_shm_seg_hdr_t *rx, uint32_t *turn) {
  const bool cheaper = cma_cheaper(comm->shm, rx);
  return ++*turn % EXPLORE_EVERY == 0 ? !cheaper : cheaper;
}

bool collie_shm_cma_wanted(const collie_comm_t *comm, const collie_shm_seg_hdr_t *rx, uint64_t nbytes,
                           uint32_t *turn) {
  const collie_shm_state_t *st = comm->shm;
  if (!st->cma_ok || nbytes < COLLIE_CMA_MIN) return false;
  if (st->cma_mode == 2 || nbytes < COLLIE_CMA_MAX) return true;
  return collie_shm_cma_weighed(comm, rx, turn);
}

