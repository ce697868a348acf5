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
 * and reads its receiver sees. Now and then a decision goes the other way, so that the
 * average of the way not taken follows the machine too.
 *
 * Copies are timed in the thread's CPU time, not wall time: ranks that outnumber the
 * cores are preempted in the middle of long copies (a CMA read of a whole block) far more
 * often than in short ones (a slot), right after a wake-up; in wall time 4 ranks on 2
 * cores showed CMA reads at 2 to 4 times their cost. Reading that clock, and the page
 * fault count, are system calls (0.35 us each on the Intel VM, 1.3 to 1.6 on the AMD one:
 * timing one ring copy in 8 cost 2-rank 1 MiB all-to-all a tenth of its time there), so
 * only one copy into or out of the ring in SAMPLE_EVERY is timed. */
#include <sys/resource.h>
#include <time.h>

#include "core/comm.h"
#include "transport/shm.h"

#define COST_MIN_COPY (16 * 1024)
#define EXPLORE_MIN 16
#define EXPLORE_MAX 512
#define SAMPLE_EVERY 32
/* CMA is taken only when it is this much cheaper than the two copies: on a tie the ring
 * keeps the result in cache and costs no system call. */
#define CMA_MARGIN 1.15

static int64_t cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static long page_faults(void) {
  struct rusage u;
  return getrusage(RUSAGE_THREAD, &u) ? -1 : u.ru_minflt + u.ru_majflt;
}

int64_t collie_shm_cost_start(collie_shm_state_t *st, int what, bool weighed) {
  if (!st->cma_ok || st->cma_mode != 1 || !weighed) return 0;
  if (what != COLLIE_COST_CMA && ++st->cost_tick[what] % SAMPLE_EVERY) return 0;
  st->cost_faults[what] = page_faults();
  return cpu_ns();
}

void collie_shm_cost_note(collie_shm_state_t *st, int what, int64_t t0, size_t n) {
  if (!t0 || n < COST_MIN_COPY) return;
  const int64_t ns = cpu_ns() - t0;
  if (ns <= 0) return;
  /* A copy that took page faults wrote memory nothing had touched before: a fresh receive
   * buffer, the slots, the part of a buffer a larger message reaches first. It cost 7 to
   * 35 times a steady one (AMD VM: a 32 MiB CMA read 45 to 60 ms against 4 to 7, a 128 KiB
   * copy out of a slot 200 against 9 us), once; counted, it made every later choice of
   * that run wrong (1 to 64 MiB all-to-all at 2.8 GB/s busbw, where either way alone gives
   * 4 to 4.5). */
  if (st->cost_faults[what] < 0 || page_faults() != st->cost_faults[what]) return;
  /* The first of each kind too: the first CMA read of a run took no fault here and still
   * cost 10 times the next ones (2 ns a byte, AMD VM). */
  if (!st->cost_seen[what]++) return;
  double ps = (double)ns * 1000.0 / (double)n;
  uint32_t *avg = &st->cost_ps[what];
  if (*avg) {
    /* Other disturbances also only add (cache misses after a context switch): a cheaper
     * sample moves the average half way, a dearer one an eighth, and counts as at most 4
     * times the average. */
    const double a = *avg;
    ps = ps < a ? (a + ps) / 2.0 : (7.0 * a + (ps < 4.0 * a ? ps : 4.0 * a)) / 8.0;
  }
  *avg = ps < 1 ? 1u : ps > 1e9 ? 1000000000u : (uint32_t)ps; /* 0 means "not measured" */
  atomic_store_explicit(&st->mine->cost_ps[what], *avg, memory_order_relaxed);
}

/* A cost summed over both ranks of a pair: this rank's own and the receiver's published
 * one (either standing in for the other when not measured yet); twice its own for the
 * collectives, which weigh without a receiver. Both ranks of a pair sum the same figures,
 * so they choose alike for their two directions. They must: when one direction went by
 * CMA and the other by the ring, one rank did a copy into slots and a CMA read while the
 * other only copied out, one after the other (AMD VM, 2 ranks, pairwise all-to-all, 8 MiB
 * 4.4 GB/s busbw where either way alone gives 8). */
static double pair_cost(const collie_shm_state_t *st, const collie_shm_seg_hdr_t *rx, int what) {
  const double mine = st->cost_ps[what];
  const uint32_t v = rx ? atomic_load_explicit(&rx->cost_ps[what], memory_order_relaxed) : 0;
  const double theirs = v ? v : mine;
  return mine ? mine + theirs : 2.0 * theirs;
}

static bool cma_cheaper(const collie_shm_state_t *st, const collie_shm_seg_hdr_t *rx) {
  const double cma = pair_cost(st, rx, COLLIE_COST_CMA);
  double in = pair_cost(st, rx, COLLIE_COST_IN);
  double out = pair_cost(st, rx, COLLIE_COST_OUT);
  if (!cma) return true;          /* never measured: try it */
  if (!in && !out) return false;  /* the ring never measured: try it */
  if (!out) out = in;             /* a copy out costs about what a copy in does */
  if (!in) in = out;
  return in + out > CMA_MARGIN * cma;
}

bool collie_shm_cma_weighed(const collie_comm_t *comm, const collie_shm_seg_hdr_t *rx, collie_shm_choice_t *ch) {
  const bool cheaper = cma_cheaper(comm->shm, rx);
  /* The way not taken is tried every EXPLORE_MIN decisions at first, and half as often
   * each time that try leaves the answer as it was, down to one in EXPLORE_MAX: where one
   * way is three times the other (AMD VM, 4 MiB messages: CMA 2 to 3 ms against the ring's
   * 0.7), a try in 16 cost a fifth of the time. A changed answer starts over. */
  if (!ch->every || cheaper != ch->cma)
    ch->every = EXPLORE_MIN;
  else if (ch->explored && ch->every < EXPLORE_MAX)
    ch->every *= 2;
  ch->cma = cheaper;
  ch->explored = false;
  if (!ch->left || ch->left > ch->every) ch->left = ch->every;
  if (--ch->left) return cheaper;
  ch->explored = true;
  return !cheaper;
}

bool collie_shm_cma_wanted(const collie_comm_t *comm, const collie_shm_seg_hdr_t *rx, uint64_t nbytes,
                           collie_shm_choice_t *ch) {
  const collie_shm_state_t *st = comm->shm;
  if (!st->cma_ok || nbytes < COLLIE_CMA_MIN) return false;
  if (st->cma_mode == 2 || nbytes < COLLIE_CMA_MAX) return true;
  return collie_shm_cma_weighed(comm, rx, ch);
}

