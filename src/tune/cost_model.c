/* The cost model: one formula per (collective, algorithm), as the algorithm's header
 * comment in src/algo/ states it, kept as data. For p ranks, n bytes (the size the
 * collective's call weighs: the whole vector, or a rank's whole receive / send buffer, or
 * the root's buffer), L = ceil(log2 p) and f = (p-1)/p:
 *
 *   messages = m_one + m_log L + m_pm1 (p-1)         (a rank's messages: the alpha terms)
 *   bytes    = n (b_one + b_log L + b_frac f)        (sent by a rank)
 *   reduced  = n (g_one + g_log L + g_frac f)        (combined by a rank)
 *   copied   = n (d_one + d_log L)                   (moved locally, e.g. Bruck's rotation)
 *   estimate = messages alpha + bytes beta + reduced gamma + copied delta
 *
 * Recursive doubling / halving (fold) work on the largest power of two p' <= p, so L and
 * f use p'; when p is not a power of two they add the x_* terms (the fold-in and
 * hand-back). Pipelined algorithms cut the data into chunks of COLLIE_CHUNK_SIZE:
 *   BLOCK  (ring): every message of a round is c = ceil(n / p / chunk) chunk messages,
 *          and "the pipeline hides all but one chunk's worth of reduction" (ring.c): the
 *          reduced term is at most one chunk, as long as every rank has a core (with
 *          more ranks than cores no core is free to overlap anything);
 *   STREAM (tree, chain): k = ceil(s n / chunk) chunks stream through: the m_* messages
 *          fill the pipeline and k more drain it. With `fill`, each of the (m + k) steps
 *          moves n/k bytes (a chain: (p-2+k)(alpha + n/k beta)); without, bytes are as
 *          written (the tree's "about 2 n beta").
 *   AREA   (shm): the shared-memory collectives, only where every rank shares a host. A
 *          byte staged through the shared area costs what a message byte costs (a copy
 *          in and a copy out: beta); the m_* terms are synchronisations, paid once:
 *          rounds of COLLIE_SHM_COLL_SIZE overlap like a pipeline, and a rank waits only
 *          for the slowest. Reductions of at most 16 KiB take one synchronisation and
 *          every rank reduces everything ((p-1) n gamma); larger ones hide all but one
 *          round's reduction behind the others' staging, as the ring hides all but one
 *          chunk's, as long as every rank has a core. A single synchronisation for at
 *          most 16 KiB a rank costs 0.7 alpha (no header to match, no queue). Measured on 2 cores (bench/): 1 to 2.8 times the message
 *          algorithms from 3 ranks on; with 2 ranks, level with them up to 1 MiB and up to
 *          1.6 times the ring above.
 *   TREE   (binomial reduce): per level of the tree, a child stages its message while its
 *          parent reduces each chunk straight from the staging; the bytes and reductions
 *          come from tree_levels_cost, the m_* terms as written.
 *
 * alpha and beta are the transport's (shm when every rank shares a host, else tcp), gamma
 * the reduction kernels', delta the local copy's; each may be scaled per (collective,
 * algorithm) by the tuning file. When the busiest host has r > 1 ranks per core, alpha
 * grows by 1 + oversub.alpha_scale (r - 1) and beta, gamma and delta by r (the figures
 * are measured with a core per rank); a TREE instead shares the cores among each level's
 * busy ranks (tree_levels_cost). */
#include <math.h>
#include <string.h>

#include "algo/native/shm_native.h"
#include "transport/shm.h"
#include "tune/tune.h"

typedef enum { PIPE_NONE, PIPE_BLOCK, PIPE_STREAM, PIPE_AREA, PIPE_TREE, PIPE_HIER } pipe_t;

typedef struct {
  collie_coll_t coll;
  const char *algo;
  pipe_t pipe;
  double stream; /* STREAM: the fraction of n that one pipeline carries */
  bool fold, fill;
  double m_one, m_log, m_pm1;
  double b_one, b_log, b_frac;
  double g_one, g_log, g_frac;
  double d_one, d_log;
  double x_msgs, x_bytes, x_red; /* fold: extra when p is not a power of two */
  const char *text;
} formula_t;

#define C(x) COLLIE_COLL_##x
/* clang-format off */
static const formula_t formulas[] = {
  /* coll             algo                 pipe         s    fold   fill   m1  mL  mP    b1  bL  bf    g1  gL  gf    d1  dL    x_m x_b x_g */
  {C(ALLREDUCE),      "ring",              PIPE_BLOCK,  0,   false, false, 0,  0,  2,    0,  0,  2,    0,  0,  1,    0,  0,    0,  0,  0,
   "2(p-1) c alpha + 2 (p-1)/p n beta + min((p-1)/p n, chunk) gamma (a core per rank), c = chunks per block"},
  {C(ALLREDUCE),      "tree",              PIPE_STREAM, 0.5, false, false, 0,  2,  0,    2,  0,  0,    1,  0,  0,    0,  0,    0,  0,  0,
   "(2 ceil(log2 p) + k) alpha + 2 n beta + n gamma, k = chunks per tree"},
  {C(ALLREDUCE),      "mesh",              PIPE_NONE,   0,   false, false, 0,  0,  2,    0,  0,  2,    0,  0,  1,    0,  0,    0,  0,  0,
   "2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma"},
  {C(ALLREDUCE),      "rd",                PIPE_NONE,   0,   true,  false, 0,  1,  0,    0,  1,  0,    0,  1,  0,    0,  0,    2,  2,  1,
   "log2(p) (alpha + n beta + n gamma); not a power of two: + 2 alpha + 2 n beta + n gamma"},
  {C(ALLREDUCE),      "hd",                PIPE_NONE,   0,   true,  false, 0,  2,  0,    0,  0,  2,    0,  0,  1,    0,  0,    2,  2,  1,
   "2 log2(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma; not a power of two: + 2 alpha + 2 n beta + n gamma"},
  {C(ALLREDUCE),      "hier",              PIPE_HIER,   0,   false, false, 0,  0,  0,    0,  0,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "2(L-1) c1 alpha_shm + 2 (L-1)/L n beta_shm + 2(h-1) c2 alpha_tcp + 2 (h-1)/h n beta_tcp + gamma terms; h hosts of L ranks"},
  {C(ALLGATHER),      "ring",              PIPE_BLOCK,  0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "(p-1) c alpha + (p-1)/p n beta, c = chunks per block"},
  {C(ALLGATHER),      "rd",                PIPE_NONE,   0,   true,  false, 0,  1,  0,    0,  0,  1,    0,  0,  0,    0,  0,    2,  1,  0,
   "log2(p) alpha + (p-1)/p n beta; not a power of two: + 2 alpha + n beta"},
  {C(ALLGATHER),      "bruck",             PIPE_NONE,   0,   false, false, 0,  1,  0,    0,  0,  1,    0,  0,  0,    1,  0,    0,  0,  0,
   "ceil(log2 p) alpha + (p-1)/p n beta + n delta"},
  {C(ALLGATHER),      "mesh",              PIPE_NONE,   0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "(p-1) alpha + (p-1)/p n beta"},
  {C(REDUCE_SCATTER), "ring",              PIPE_BLOCK,  0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  1,    0,  0,    0,  0,  0,
   "(p-1) c alpha + (p-1)/p n beta + min((p-1)/p n, chunk) gamma (a core per rank), c = chunks per block"},
  {C(REDUCE_SCATTER), "hd",                PIPE_NONE,   0,   true,  false, 0,  1,  0,    0,  0,  1,    0,  0,  1,    0,  0,    2,  1,  1,
   "log2(p) alpha + (p-1)/p n beta + (p-1)/p n gamma; not a power of two: + 2 alpha + n beta + n gamma"},
  {C(REDUCE_SCATTER), "mesh",              PIPE_NONE,   0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  1,    0,  0,    0,  0,  0,
   "(p-1) alpha + (p-1)/p n beta + (p-1)/p n gamma"},
  {C(BROADCAST),      "binomial",          PIPE_NONE,   0,   false, false, 0,  1,  0,    0,  1,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "ceil(log2 p) (alpha + n beta)"},
  {C(BROADCAST),      "chain",             PIPE_STREAM, 1,   false, true,  -1, 0,  1,    1,  0,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "(p - 2 + k) (alpha + n/k beta), k = chunks"},
  {C(BROADCAST),      "scatter_allgather", PIPE_NONE,   0,   false, false, 0,  1,  1,    0,  0,  2,    0,  0,  0,    0,  0,    0,  0,  0,
   "(ceil(log2 p) + p - 1) alpha + 2 (p-1)/p n beta"},
  {C(BROADCAST),      "hier",              PIPE_HIER,   0,   false, false, 0,  0,  0,    0,  0,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "ceil(log2 h) (alpha_tcp + n beta_tcp) + ceil(log2 L) (alpha_shm + n beta_shm); h hosts of L ranks"},
  {C(REDUCE),         "binomial",          PIPE_TREE,   0,   false, false, 0,  1,  0,    0,  0,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "ceil(log2 p) alpha + per level n max(beta/2, gamma) (beta over TCP); levels with more busy ranks than cores share them"},
  {C(REDUCE),         "chain",             PIPE_STREAM, 1,   false, true,  -1, 0,  1,    1,  0,  0,    1,  0,  0,    0,  0,    0,  0,  0,
   "(p - 2 + k) (alpha + n/k beta + n/k gamma), k = chunks"},
  {C(REDUCE),         "rs_gather",         PIPE_NONE,   0,   false, false, 0,  1,  1,    0,  0,  2,    0,  0,  1,    0,  0,    0,  0,  0,
   "(p - 1 + ceil(log2 p)) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma"},
  {C(ALLTOALL),       "pairwise",          PIPE_NONE,   0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "(p-1) (alpha + n/p beta)"},
  {C(ALLTOALL),       "bruck",             PIPE_NONE,   0,   false, false, 0,  1,  0,    0,  0.5,0,    0,  0,  0,    1,  1,    0,  0,  0,
   "ceil(log2 p) alpha + ceil(log2 p) n/2 beta + (ceil(log2 p) + 1) n delta"},
  {C(ALLTOALL),       "mesh",              PIPE_NONE,   0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "(p-1) alpha + (p-1)/p n beta"},
  {C(SCATTER),        "binomial",          PIPE_NONE,   0,   false, false, 0,  1,  0,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "ceil(log2 p) alpha + (p-1)/p n beta"},
  {C(SCATTER),        "linear",            PIPE_NONE,   0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "(p-1) alpha + (p-1)/p n beta"},
  {C(GATHER),         "binomial",          PIPE_NONE,   0,   false, false, 0,  1,  0,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "ceil(log2 p) alpha + (p-1)/p n beta"},
  {C(GATHER),         "linear",            PIPE_NONE,   0,   false, false, 0,  0,  1,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "(p-1) alpha + (p-1)/p n beta"},
  {C(BARRIER),        "dissemination",     PIPE_NONE,   0,   false, false, 0,  1,  0,    0,  0,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "ceil(log2 p) alpha"},
  {C(ALLREDUCE),      "shm",               PIPE_AREA,   0,   false, false, 2,  0,  0,    0,  0,  2,    0,  0,  1,    0,  0,    0,  0,  0,
   "2 alpha + 2 (p-1)/p n beta + (p-1)/p n gamma"},
  {C(REDUCE),         "shm",               PIPE_AREA,   0,   false, false, 2,  0,  0,    0,  0,  2,    0,  0,  1,    0,  0,    0,  0,  0,
   "2 alpha + 2 (p-1)/p n beta + (p-1)/p n gamma"},
  {C(BROADCAST),      "shm",               PIPE_AREA,   0,   false, false, 1,  0,  0,    1,  0,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "alpha + n beta"},
  {C(ALLGATHER),      "shm",               PIPE_AREA,   0,   false, false, 1,  0,  0,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "alpha + (p-1)/p n beta; from n = 16 MiB 3/4 of the beta term"},
  {C(REDUCE_SCATTER), "shm",               PIPE_AREA,   0,   false, false, 1,  0,  0,    0,  0,  1,    0,  0,  1,    0,  0,    0,  0,  0,
   "alpha + (p-1)/p n beta + (p-1)/p n gamma"},
  {C(ALLTOALL),       "shm",               PIPE_AREA,   0,   false, false, 1,  0,  0,    0,  0,  1,    0,  0,  0,    0,  0,    0,  0,  0,
   "alpha + (p-1)/p n beta; from n = 4 MiB 0.9 of the beta term, unless messages go by CMA"},
  {C(BARRIER),        "shm",               PIPE_AREA,   0,   false, false, 1,  0,  0,    0,  0,  0,    0,  0,  0,    0,  0,    0,  0,  0,
   "alpha"},
};
/* clang-format on */
#undef C

/* The v-variants move data like their plain forms. */
static collie_coll_t base_coll(collie_coll_t c) {
  switch (c) {
    case COLLIE_COLL_ALLGATHERV: return COLLIE_COLL_ALLGATHER;
    case COLLIE_COLL_REDUCE_SCATTERV: return COLLIE_COLL_REDUCE_SCATTER;
    case COLLIE_COLL_ALLTOALLV: return COLLIE_COLL_ALLTOALL;
    default: return c;
  }
}

static const formula_t *find(collie_coll_t coll, const char *algo) {
  coll = base_coll(coll);
  for (size_t i = 0; i < sizeof(formulas) / sizeof(formulas[0]); i++)
    if (formulas[i].coll == coll && !strcmp(formulas[i].algo, algo)) return &formulas[i];
  return NULL;
}

const char *collie_tune_formula(collie_coll_t coll, const char *algo) {
  const formula_t *f = find(coll, algo);
  return f ? f->text : NULL;
}

static int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

static int pow2_le(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/* Whether every rank waits for every other at each call of this rooted collective. Down
 * a tree or a chain ranks run ahead: a sender is done once its message is queued, and
 * back-to-back calls overlap. The shared area (a staging buffer is reused only once all
 * have read it) and the two-phase algorithms (every rank exchanges with every other)
 * make each call a barrier, and with more ranks than cores each barrier is a round of
 * context switches: their synchronisations then cost p alpha. AMD VM, 2 cores, median
 * of 3, against binomial: 4 ranks, broadcast 16 B shm 8.4 us against 2.7, 64 KiB shm
 * 15.8 against 37.9 (bytes still decide there); reduce 16 B shm 9.5 against 2.6, 64 KiB
 * rs_gather 53 and shm 36 against 13.6; 8 ranks, broadcast 16 B shm 23.1 against 7.3,
 * reduce 64 KiB rs_gather 252 and shm 116 against 34. */
static bool all_wait(const formula_t *f, double n) {
  if (f->coll != COLLIE_COLL_BROADCAST && f->coll != COLLIE_COLL_REDUCE) return false;
  /* ... except a broadcast small enough for the inline lines: its root runs up to 32
   * rounds (128 with more ranks than CPUs) ahead of the receivers (transport/shm.h). AMD
   * VM, 2 cores, 8 B, medians of 3 to 5: 4 ranks 0.31 us against binomial's 0.8, 8 ranks
   * 1.23 against 2.34 (with 32 slots); 4 KiB (a broadcast's inline lines take
   * COLLIE_SHM_INLINE_BYTES) 4 ranks 0.58 to 0.64
   * against 1.04 to 1.62, 8 ranks 1.00 to 1.05 against 2.26 to 2.37. So does a reduce's
   * every other rank in inline rounds (shm_native.c: defers_check): 8 B, 4 ranks 0.28 us
   * against binomial's 1.00 (1.8 while they waited for the root), 8 ranks 0.61 against 2.15. */
  if (f->pipe == PIPE_AREA && f->coll == COLLIE_COLL_BROADCAST && n <= COLLIE_SHM_INLINE_BYTES) return false;
  if (f->pipe == PIPE_AREA && f->coll == COLLIE_COLL_REDUCE && n <= COLLIE_SHM_INLINE_SMALL_BYTES) return false;
  return f->pipe == PIPE_AREA || !strcmp(f->algo, "rs_gather") || !strcmp(f->algo, "scatter_allgather");
}

/* A single synchronisation for a small call has nothing to match or queue, and costs
 * less than a message: 2 ranks, 8 B allreduce 0.28 us against recursive doubling's
 * 0.40; allgather, broadcast, alltoall and reduce_scatter 0.2 to 0.35 us against 0.4
 * to 0.5, and at 16 KiB 1.9 to 2.1 us against 2.3 to 2.5. Beyond, the estimate stays a
 * message's (the ring's reduction overlap wins allreduce from 32 KiB), except as below. A
 * reduce only in inline rounds, where its other ranks leave once they have staged, as the
 * binomial tree's leaves do (2 ranks, 8 B: shm 0.14 us, binomial 0.22; before, when they
 * waited for the root, shm 0.66 against 0.45); staged, they wait for it. The
 * all-gather keeps it up to 128 KiB a rank: there the staged area beat messages, staged
 * or read by CMA, in every sweep (AMD VM, 2 ranks, median of 5, GB/s busbw, shm against
 * rd, by all-gather size: 32 KiB 14.6 against 11.8, 128 KiB 15.9 against 6.2 and 10.8
 * against 7.4, 256 KiB 11.3 against 7.8 and 11.4 against 8.4); from 512 KiB the CMA read
 * was ahead or behind by turns (9.9 against 12.9, 10.4 against 9.5). That VM's ring beat
 * process_vm_readv at creation as a rule (transport/shm_cma_choice.c); where CMA measured
 * faster, a message of COLLIE_CMA_MIN or more copies once, by CMA, against the area's two
 * copies, and the discount stops there (Intel VM, 2 ranks, out of place, us, shm against
 * rd, two sweeps of -n 200: 128 KiB 8.6 and 9.1 against 6.5 and 5.7, 256 KiB 15.7 and 15.2
 * against 10.8 and 9.6, Open MPI 7.9 and 14.2; 64 KiB 4.3 against 5.1 and 4.5). The
 * all-to-all keeps it up to 512 KiB in all (its staged path copies its own block while the others stage,
 * shm_native.c): 2 ranks, out of place, busbw shm / pairwise, medians of 6 alternating
 * runs of -n 200: 32 KiB 1.33, 64 KiB 1.17, 128 KiB 1.00, 256 KiB 1.09, 512 KiB 0.97,
 * 1 MiB 0.93; in place shm 1.2 to 1.6 times pairwise at each size (pairwise first copies
 * the outgoing blocks to scratch). Returns the largest size (a rank's for all-gather, the
 * whole call's otherwise) for which the shared area's single synchronisation costs 0.7
 * alpha (-1: none). */
static double single_sync_bytes(const collie_tune_ctx_t *ctx, collie_coll_t coll) {
  switch (coll) {
    case COLLIE_COLL_REDUCE: return COLLIE_SHM_INLINE_SMALL_BYTES;
    case COLLIE_COLL_ALLGATHER: return ctx->cma_msgs ? COLLIE_CMA_MIN - 1.0 : 128.0 * 1024;
    case COLLIE_COLL_ALLTOALL: return 512.0 * 1024;
    default: return COLLIE_SHM_SMALL_REDUCTION_BYTES;
  }
}

/* From this size (the whole call's) an all-gather through the shared area costs 3/4 of
 * what its bytes cost elsewhere: its copies out of staging into a receive buffer that
 * large may stream (shm_native.c, drain_stores_of), while the message algorithms' copies
 * (process_vm_readv, or out of a ring slot) read every destination line first. Intel VM,
 * 2 ranks, out of place, ms, shm against rd, 2 or 3 runs of -n 6 to 10: 16 MiB 2.0 to 2.2
 * against 2.6 to 3.0, 32 MiB 4.3 and 4.5 against 5.9 and 5.9, 64 MiB 8.7 and 9.1 against
 * 11.9 and 12.4 (with COLLIE_SHM_CMA=0 4.1 and 4.1 against 6.2 and 5.8, 8.9 and 8.6
 * against 12.8 and 12.1); 8 MiB level out of place (0.88 to 1.00 against 0.90 to 1.12)
 * and rd ahead in place (0.40 to 0.51 against 0.64 to 0.67). With more ranks than cores
 * the area wins there anyway. */
#define AREA_STREAMED_ALLGATHER_MIN (16.0 * 1024 * 1024)

/* From this size an all-to-all through the shared area costs 0.9 of what its bytes cost as
 * messages, where those go through the ring too (not by CMA: ctx->cma_msgs): the area
 * stages its rounds in slots (shm_native.c, layout) and its copies out may stream.
 * AMD EPYC VM, 2 ranks, out of place, us, medians of 5 alternating runs, shm against
 * pairwise: 4 MiB 264 against 304, 8 MiB 933 against 1118, 16 MiB 1923 against 2140, 64
 * MiB 8577 against 9691; 1 and 2 MiB the other way (53.8 against 46.5, 103 against 86),
 * 128 to 512 KiB alike. */
#define AREA_ALLTOALL_MIN (4.0 * 1024 * 1024)

/* A TREE's (the binomial reduce's) bytes and reductions. At each level a sender stages
 * its partial result (over shared memory half a message byte's beta: the copy in) while
 * its parent reduces straight from the staging (gamma: the reduction's read is the copy
 * out), chunk by chunk, so with a core each a level costs n max(beta/2, gamma), not
 * n (beta + gamma). The level of span s has ceil((p - s) / 2s) such pairs, sharing the
 * cores: it costs the larger of one pair's time and pairs n (beta/2 + gamma) / cores (the
 * larger only when the pairs' ranks outnumber the cores). A leaf is done once its
 * message is staged, so deep levels are not slowed by ranks that have left. AMD VM, 2
 * cores, malloc buffers, median of 3, GB/s: 2 ranks 1 MiB binomial 21.6 against shm 7.6
 * (the former estimate chose shm), 4 ranks 4 MiB 7.0 against chain 4.4, 8 ranks 1 MiB
 * 2.9 against 1.7. */
static double tree_levels_cost(const collie_tune_ctx_t *ctx, double n, double beta, double gamma) {
  const int p = ctx->nranks;
  const double staged = ctx->link == COLLIE_LINK_TCP ? beta : beta / 2;
  const double cores = ctx->ranks_per_core > 1 ? p / ctx->ranks_per_core : p;
  double t = 0;
  for (int span = 1; span < p; span *= 2) {
    const int pairs = (p + span - 1) / (2 * span);
    t += fmax(n * fmax(staged, gamma), pairs * n * (staged + gamma) / cores);
  }
  return t;
}

/* The tuning file's corrections for (coll, algo): alpha, beta and gamma scales. */
static void override_scales(const collie_tune_table_t *t, collie_coll_t coll, const char *algo, double scale[3]) {
  scale[0] = scale[1] = scale[2] = 1;
  for (int i = 0; i < t->noverrides; i++)
    if (t->ov[i].coll == (int)coll && !strcmp(t->ov[i].algo, algo)) {
      scale[0] *= t->ov[i].alpha_scale;
      scale[1] *= t->ov[i].beta_scale;
      scale[2] *= t->ov[i].gamma_scale;
    }
}

/* HIER (algo/hier.c): h groups (hosts) of L ranks, only where every host holds L >= 2
 * ranks and there are 2 hosts or more. The allreduce: inside a host a ring reduce-scatter
 * and a ring allgather over shared memory; between hosts the L ranks allreduce their
 * blocks at once, sharing the host's link, which carries 2 (h-1)/h n bytes in all.
 * Reductions hide behind the pipelines as in the ring. The broadcast: binomial trees,
 * between hosts and then inside each. */
static double hier_cost(const collie_tune_ctx_t *ctx, collie_coll_t coll, double n, double chunk,
                        const double scale[3]) {
  const collie_tune_table_t *t = ctx->table;
  const int h = ctx->groups, L = ctx->group_size;
  if (h < 2 || L < 2 || h * L != ctx->nranks) return -1;
  if (coll == COLLIE_COLL_BROADCAST)
    return ceil_log2(h) * (t->link[COLLIE_LINK_TCP].alpha_us * scale[0] +
                           n * t->link[COLLIE_LINK_TCP].beta_us_per_byte * scale[1]) +
           ceil_log2(L) * (t->link[COLLIE_LINK_SHM].alpha_us * scale[0] +
                           n * t->link[COLLIE_LINK_SHM].beta_us_per_byte * scale[1]);
  const double c1 = fmax(1, ceil(n / L / chunk)), c2 = fmax(1, ceil(n / L / h / chunk));
  const double red = fmin(n * ((L - 1.0) / L + (h - 1.0) / h / L), 2 * chunk);
  const double alpha = 2 * (L - 1) * c1 * t->link[COLLIE_LINK_SHM].alpha_us +
                       2 * (h - 1) * c2 * t->link[COLLIE_LINK_TCP].alpha_us;
  const double beta = 2 * (L - 1.0) / L * n * t->link[COLLIE_LINK_SHM].beta_us_per_byte +
                      2 * (h - 1.0) / h * n * t->link[COLLIE_LINK_TCP].beta_us_per_byte;
  return alpha * scale[0] + beta * scale[1] + red * t->gamma_us_per_byte * scale[2];
}

double collie_tune_estimate(const collie_tune_ctx_t *ctx, collie_coll_t coll, const char *algo, size_t bytes) {
  const formula_t *f = find(coll, algo);
  if (!f) return -1;
  const collie_tune_table_t *t = ctx->table;
  const int p = ctx->nranks;
  if (p <= 1) return 0;
  double scale[3];
  override_scales(t, coll, algo, scale);
  if (f->pipe == PIPE_HIER)
    return hier_cost(ctx, coll, (double)bytes, ctx->chunk_bytes ? (double)ctx->chunk_bytes : 65536.0, scale);
  const double n = (double)bytes;
  const double chunk = ctx->chunk_bytes ? (double)ctx->chunk_bytes : 65536.0;
  const int q = f->fold ? pow2_le(p) : p; /* the ranks the log and (p-1)/p terms see */
  const double L = ceil_log2(q), frac = (q - 1.0) / q;

  double msgs = f->m_one + f->m_log * L + f->m_pm1 * (p - 1.0);
  double sent = n * (f->b_one + f->b_log * L + f->b_frac * frac);
  double red = n * (f->g_one + f->g_log * L + f->g_frac * frac);
  double copied = n * (f->d_one + f->d_log * L);
  if (f->fold && q != p) {
    msgs += f->x_msgs;
    sent += n * f->x_bytes;
    red += n * f->x_red;
  }
  if (f->pipe == PIPE_BLOCK) {
    double c = ceil(n / p / chunk);
    if (c > 1) msgs *= c;
    if (red > chunk && ctx->ranks_per_core <= 1) red = chunk; /* hiding needs a free core */
  } else if (f->pipe == PIPE_AREA) {
    /* only where every rank shares a host; elsewhere the shared area does not exist */
    if (ctx->link != COLLIE_LINK_SHM || !ctx->area_bytes) return -1;
    if ((coll == COLLIE_COLL_ALLREDUCE || coll == COLLIE_COLL_REDUCE) && n <= COLLIE_SHM_SMALL_REDUCTION_BYTES) {
      msgs = 1; /* one synchronisation; every rank reduces every rank's vector */
      red = n * (p - 1);
    } else if (red > (double)ctx->area_bytes && ctx->ranks_per_core <= 1) {
      red = (double)ctx->area_bytes; /* a rank reduces round g while the others stage g+1 */
    }
    /* A large broadcast whose receivers' buffers the root can write shares its copying:
     * the root and each receiver copy (p-1)/p n (algo/native/shm_direct.c). */
    if (coll == COLLIE_COLL_BROADCAST && ctx->bcast_split_min && n >= (double)ctx->bcast_split_min) sent = n * frac;
    if (coll == COLLIE_COLL_ALLGATHER && n >= AREA_STREAMED_ALLGATHER_MIN) sent *= 0.75;
    if (coll == COLLIE_COLL_ALLTOALL && !ctx->cma_msgs && n >= AREA_ALLTOALL_MIN) sent *= 0.9;
    const double per_rank = coll == COLLIE_COLL_ALLGATHER ? n / p : n;
    if (msgs == 1 && per_rank <= single_sync_bytes(ctx, coll)) msgs = 0.7;
  } else if (f->pipe == PIPE_STREAM) {
    double k = ceil(f->stream * n / chunk);
    if (k < 1) k = 1;
    if (f->fill && msgs > 0) {
      sent += msgs * sent / k;
      red += msgs * red / k;
    }
    msgs += k;
  }
  if (msgs < 0) msgs = 0;
  if (ctx->ranks_per_core > 1 && all_wait(f, n)) msgs *= p;

  const int link = ctx->link == COLLIE_LINK_TCP ? COLLIE_LINK_TCP : COLLIE_LINK_SHM;
  double alpha = t->link[link].alpha_us * scale[0], beta = t->link[link].beta_us_per_byte * scale[1];
  double gamma = t->gamma_us_per_byte * scale[2], delta = t->delta_us_per_byte;
  /* More ranks than cores: every message waits for a peer to be scheduled. */
  if (ctx->ranks_per_core > 1) alpha *= 1 + t->oversub_alpha_scale * (ctx->ranks_per_core - 1);
  if (f->pipe == PIPE_TREE) return msgs * alpha + tree_levels_cost(ctx, n, beta, gamma);
  if (ctx->ranks_per_core > 1) {
    /* A rank gets 1/r of a core, so its copies and reductions take r times longer. */
    beta *= ctx->ranks_per_core;
    gamma *= ctx->ranks_per_core;
    delta *= ctx->ranks_per_core;
  }
  return msgs * alpha + sent * beta + red * gamma + copied * delta;
}
