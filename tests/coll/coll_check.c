/* coll_check: the multi-process correctness matrix of every collective, written only
 * against collie.h (API.md).
 *
 *   coll_check [--threads N] [--coll NAME[,NAME..]] [--dtypes quick|all] [--big]
 *              [--counts C[,C..]] [--register [mixed]] [--mismatch] [--init-in-group] [--seed S]
 *              [--fuzz K [--fuzz-bytes B] [--fuzz-threads T] [--fuzz-split] [--fuzz-repeat]
 *                        [--fuzz-kill R:K | --fuzz-stop R:K]]
 *              [--signal-storm] [-v]
 *
 * Without --threads the ranks come from the launcher (collie_comm_init_env: collie-run,
 * mpirun, mpiexec, srun, torchrun-style variables); with it, N ranks run as threads of this
 * process (collie_comm_init_all). --init-in-group creates the communicator between
 * collie_group_start and collie_group_end, as NCCL programs may do with ncclCommInitRank.
 *
 * Sections (--coll): allreduce broadcast reduce allgather allgatherv reduce_scatter
 * reduce_scatterv alltoall alltoallv scatter gather barrier p2p nonblocking determinism
 * (default: all of them).
 *
 * The matrix runs every selected collective over every datatype, every op (reductions),
 * counts {0, 1, 7, n-1, n+1, 54, 109, 1003} (+ 65549 with --big; --counts gives others, up
 * to 64, to probe an algorithm's size boundaries), roots {0, n-1} (rooted ones), in
 * place and out of place, with send/receive pointers offset from 64-byte alignment by whole
 * elements and by odd bytes. Every buffer carries guard bytes before and after and starts
 * filled with a position-dependent pattern, so that the check covers: every result element
 * (bit for bit against a reference computed locally from inputs that make sums and products
 * exact in any order, see coll_ref.c), send buffers left unchanged, gaps between v-variant
 * blocks left unchanged, buffers a rank should not touch (non-root receive buffers) left
 * unchanged, and no write before or after any buffer. Allreduce results are also compared
 * across ranks (hash allgathered per datatype).
 *
 * Also: point-to-point sanity (grouped ring, isend/irecv waited in reverse, all pairs with
 * self, two messages in flight to one peer), barrier (a late rank holds the others back),
 * nonblocking (every i-collective in flight at once, waited in reverse order, then polled
 * with collie_test, then collie_comm_synchronize), determinism (order-sensitive random
 * floats: identical bits on every rank and on every repetition).
 *
 * --register mixed: each buffer, on each rank, from one or the other at random (the seed, the
 * rank and the thread), so that a collective meets peers with and without reachable buffers.
 * --register: every send and receive buffer comes from collie_mem_alloc, so the
 * shared-memory collectives of 64 KiB and more take their single-copy path between
 * processes (with --big).
 * --mismatch: rank 0 calls allreduce with count 1000, the others with 1024; every rank must
 * get COLLIE_ERR_MISMATCH naming allreduce (and, where the rank saw the counts, both
 * counts); then a datatype mismatch on a second communicator, counts that differ on
 * two more, alltoallv counts arrays that disagree, allgatherv recvcounts that differ with
 * the same sum (4 ranks and more), a broadcast, a reduce and a large
 * broadcast whose ranks disagree on the root, an all-to-allv that sends nothing where data
 * is expected; then a healthy communicator must still work.
 *
 * --fuzz K: instead of the sections, a random sequence of K operations drawn from --seed,
 * the same on every rank: any collective or a point-to-point ring, any datatype, op and
 * root, in place or not, counts on a log scale from 0 to what fills --fuzz-bytes (default 1 MiB) in the
 * largest buffer, so that consecutive calls cross the protocols' boundaries (inline lines,
 * staging, single copy, streaming stores) in every order, on three communicators (the
 * world, a copy, and its halves by rank parity numbered backwards). Most are nonblocking,
 * up to 8 in flight across the communicators; each rank waits for them in an order of its
 * own (operations complete in the order they were issued, API.md; which one a rank waits
 * for first is its business), by collie_wait or by polling collie_test. A quarter are
 * blocking: alone, or 2 to 4 between collie_group_start and collie_group_end (on any of
 * the communicators); what their communicators issued before them must then test done.
 * Every case is verified like the matrix's.
 * --fuzz-threads T: T such sequences at once in each process, a thread each, on copies of
 * the world (a communicator per thread, as API.md allows), with seeds of their own.
 * --fuzz-split: one operation in 48 splits one of the communicators (a color drawn per
 * rank, or none) while others are in flight, runs a case on the new one and destroys it.
 * --fuzz-repeat: one operation in 8 is a run of 2 to 40 blocking all-reduces, all-gathers,
 * reduce-scatters, all-to-alls, broadcasts or reduces of one call of at most 40, 488 or
 * 4136 bytes staged per rank, or of barriers (their repeats take the fast lane,
 * src/coll/fast_lane.c, where nothing else is in flight on that communicator); a victim
 * (below) strikes inside such a run.
 * --fuzz-kill R:K: rank R kills itself (SIGKILL) before operation K. Every other rank must
 * then stop with an error naming R's pid, or another survivor's abort, and passes when it
 * does (collie-run then exits 137, the victim's status; see fuzz_kill_verdict).
 * --fuzz-stop R:K: rank R stops itself (SIGSTOP) instead, and every other rank must stop
 * with an error naming it (a timeout: set COLLIE_EXEC_TIMEOUT low) or another's abort. Once
 * they have, the test resumes it (SIGCONT, tests/coll/fuzz_stop_test.sh), and its next
 * operations must fail, saying why (see fuzz_resumed_verdict).
 *
 * --signal-storm: SIGALRM and SIGPROF fire every 20 to 500 us (chosen per process) from
 * before the communicator is created to the exit, through handlers installed without
 * SA_RESTART, as a profiler or a timer would: any blocking call the library makes may
 * return EINTR, and it must neither fail, nor lose data, nor hang.
 *
 * Output: "coll_check: rank R: N cases OK", or the first mismatches with their full context
 * and a failure summary; the exit status is non-zero on any failure. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_ref.h"
#include "collie.h"
#include "signal_storm.h"

enum {
  K_ALLREDUCE, K_BROADCAST, K_REDUCE, K_ALLGATHER, K_ALLGATHERV, K_REDUCE_SCATTER, K_REDUCE_SCATTERV,
  K_ALLTOALL, K_ALLTOALLV, K_SCATTER, K_GATHER, K_BARRIER, K_P2P, K_NONBLOCKING, K_DETERMINISM, K_NUM
};
static const char *kind_names[K_NUM] = {"allreduce", "broadcast", "reduce", "allgather", "allgatherv",
                                        "reduce_scatter", "reduce_scatterv", "alltoall", "alltoallv", "scatter",
                                        "gather", "barrier", "p2p", "nonblocking", "determinism"};

static struct {
  int threads;
  unsigned kinds; /* bit per K_* */
  int all_dtypes;
  int big;
  int mismatch;
  int reg; /* --register: buffers from collie_mem_alloc (2: mixed) */
  uint64_t seed;
  int verbose;
  int init_in_group; /* --init-in-group: the communicator is created inside a group */
  int ncounts;       /* --counts: the element counts of every matrix, instead of the usual ones */
  size_t counts[64];
  long fuzz;         /* --fuzz: operations in the random sequence (0: the sections) */
  size_t fuzz_bytes; /* --fuzz-bytes: the largest buffer of a fuzz case */
  int kill_rank;     /* --fuzz-kill R:K: rank R kills itself before operation K (-1: none) */
  long kill_at;
  int fuzz_threads;  /* --fuzz-threads T: T sequences at once, a thread and communicator each */
  int stop;          /* --fuzz-stop R:K: rank R stops itself (SIGSTOP) instead of dying */
  int fuzz_split;    /* --fuzz-split: one operation in 48 is a communicator split */
  int fuzz_repeat;   /* --fuzz-repeat: one operation in 8 is a run of repeated small all-reduces */
} opt = {0, (1u << K_NUM) - 1, 1, 0, 0, 0, 1, 0, 0, 0, {0}, 0, (size_t)1 << 20, -1, 0, 1, 0, 0, 0};

static const collie_datatype_t all_dtypes[] = {COLLIE_INT8,    COLLIE_UINT8,    COLLIE_INT32,   COLLIE_UINT32,
                                               COLLIE_INT64,   COLLIE_UINT64,   COLLIE_FLOAT16, COLLIE_BFLOAT16,
                                               COLLIE_FLOAT32, COLLIE_FLOAT64};
/* One of each width, both half formats, an integer and a float of 4 and 8 bytes. */
static const collie_datatype_t quick_dtypes[] = {COLLIE_UINT8, COLLIE_INT32, COLLIE_FLOAT16, COLLIE_BFLOAT16,
                                                 COLLIE_FLOAT64};

#define GUARD 64
#define MAX_PRINTED 8
#define BIG_COUNT (65536 + 13)

/* ---- per-rank state ---------------------------------------------------------------- */

typedef struct {
  collie_comm_t *comm;
  int rank, n;
  long cases, failed;
  int printed;
  int fatal;       /* an API call failed unexpectedly: stop issuing collectives */
  uint64_t next_id; /* case ids: the same sequence on every rank */
  int64_t *vals;   /* n inputs of one element */
  char fail_msg[1024]; /* the first failed call's error (--fuzz-kill), whole: as long as the library's (its chain of waits names the stopped rank last) */
} ctx_t;

static void say(const ctx_t *x, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "coll_check: rank %d: %s\n", x->rank, buf);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- buffers with guards and expectations ------------------------------------------ */

typedef struct {
  unsigned char *base, *exp, *care;
  size_t off, len, total;
  const char *name;
  int used;
  bool reg; /* from collie_mem_alloc */
} region_t;

/* --register mixed: this thread's draws (run_rank and fuzz_thread_main set the salt). */
static _Thread_local uint64_t region_salt, region_draws;

static unsigned char sentinel(size_t k) { return (unsigned char)(k * 131u + 0x5d); }

static int region_init(region_t *g, const char *name, size_t off, size_t len) {
  g->name = name;
  g->off = off;
  g->len = len;
  g->total = off + len + GUARD;
  size_t alloc = (g->total + 63) & ~(size_t)63;
  g->base = NULL;
  g->reg = opt.reg == 1 || (opt.reg == 2 && cr_hash4(opt.seed, 0x4E6, region_salt, region_draws++) % 2);
  if (g->reg) { /* --register: buffers the other ranks may read directly */
    void *p;
    if (collie_mem_alloc(&p, alloc) == COLLIE_SUCCESS) g->base = p;
  } else {
    g->base = aligned_alloc(64, alloc);
  }
  g->exp = malloc(g->total);
  g->care = malloc(g->total);
  if (!g->base || !g->exp || !g->care) {
    fprintf(stderr, "coll_check: out of memory (%zu bytes)\n", alloc);
    exit(2);
  }
  for (size_t k = 0; k < g->total; k++) {
    g->base[k] = g->exp[k] = sentinel(k);
    g->care[k] = 1;
  }
  g->used = 1;
  return 0;
}

static void region_free(region_t *g) {
  if (!g->used) return;
  if (g->reg) collie_mem_free(g->base);
  else free(g->base);
  free(g->exp);
  free(g->care);
  memset(g, 0, sizeof(*g));
}

static unsigned char *rptr(region_t *g) { return g->base + g->off; }

/* Input data: written into the buffer and expected to be there afterwards. */
static void put(region_t *g, size_t esz, size_t idx, uint64_t bits) {
  cr_store(g->base + g->off + idx * esz, esz, bits);
  cr_store(g->exp + g->off + idx * esz, esz, bits);
}

static void expect(region_t *g, size_t esz, size_t idx, uint64_t bits) {
  cr_store(g->exp + g->off + idx * esz, esz, bits);
  memset(g->care + g->off + idx * esz, 1, esz);
}

static void dontcare_all(region_t *g) { memset(g->care + g->off, 0, g->len); }

static uint64_t region_hash(region_t *g) {
  uint64_t h = 1469598103934665603ull;
  for (size_t k = 0; k < g->len; k++) h = (h ^ g->base[g->off + k]) * 1099511628211ull;
  return h;
}

/* ---- cases --------------------------------------------------------------------------- */

typedef struct {
  int kind;
  collie_datatype_t dt;
  collie_redop_t op;
  size_t count;
  int root;     /* rooted collectives; p2p: the mode */
  int in_place;
  int offsel;
  uint64_t id;
  size_t esz;
  region_t send, recv;
  const void *sp;
  void *rp;
  size_t *c1, *d1, *c2, *d2; /* v-variant counts and displacements */
  size_t gidx_base;          /* reductions: global index of recv element 0 */
  int reduction_result;      /* recv holds reduced values (print inputs on mismatch) */
  collie_request_t *req;
  collie_request_t *req2; /* the fuzz's point-to-point cases: the receive */
} case_t;

static int is_reduction(int k) {
  return k == K_ALLREDUCE || k == K_REDUCE || k == K_REDUCE_SCATTER || k == K_REDUCE_SCATTERV;
}
static int is_rooted(int k) { return k == K_BROADCAST || k == K_REDUCE || k == K_SCATTER || k == K_GATHER; }

/* Byte offsets of the send and receive pointers from 64-byte alignment: aligned, whole
 * elements (breaking 8/16/32/64-byte alignment), odd bytes (breaking element alignment). */
static void offsets(const case_t *c, size_t *so, size_t *ro) {
  size_t e = c->esz;
  switch (c->offsel) {
    case 0: *so = 0; *ro = 0; break;
    case 1: *so = e; *ro = 3 * e; break;
    case 2: *so = 1; *ro = 3; break;
    default: *so = 5 * e + 3; *ro = 1; break;
  }
}

static uint64_t hsh(const case_t *c, int rank, uint64_t idx) {
  return cr_hash4(opt.seed, c->id, (uint64_t)rank, idx);
}

static uint64_t red_in(const case_t *c, int n, int rank, uint64_t gidx) {
  return cr_encode_int(c->dt, cr_input(c->dt, c->op, n, rank, hsh(c, rank, gidx)));
}

static uint64_t red_exp(ctx_t *x, const case_t *c, uint64_t gidx) {
  for (int r = 0; r < x->n; r++) x->vals[r] = cr_input(c->dt, c->op, x->n, r, hsh(c, r, gidx));
  return cr_reduce(c->dt, c->op, x->n, x->vals);
}

static uint64_t raw(const case_t *c, int rank, uint64_t idx) { return cr_raw(c->dt, hsh(c, rank, idx)); }

static uint64_t blk(int r, size_t j) { return ((uint64_t)(unsigned)r << 32) | (uint64_t)j; }

/* v-variant block sizes around base: some zero, never all equal. */
static void v_counts(const ctx_t *x, const case_t *c, size_t *cnt) {
  for (int r = 0; r < x->n; r++) {
    uint64_t h = cr_hash4(opt.seed, c->id, (uint64_t)r, 0xC0C0);
    if (c->count == 0 || (x->n >= 3 && (uint64_t)r == c->id % (uint64_t)x->n) || h % 5 == 0)
      cnt[r] = 0;
    else
      cnt[r] = c->count / 2 + (size_t)((h >> 8) % (c->count + 1));
  }
}

/* Displacements: blocks in reversed or rotated rank order with gaps of 0..2 elements
 * between them; returns the extent. `who` varies the layout between ranks and sides. */
static size_t v_displs(const ctx_t *x, const case_t *c, uint64_t who, const size_t *cnt, size_t *d) {
  size_t pos = (size_t)(cr_hash4(opt.seed, c->id, who, 0xD0) % 2);
  uint64_t sel = c->id + who;
  for (int k = 0; k < x->n; k++) {
    int r = sel % 2 == 0 ? x->n - 1 - k : (int)(((uint64_t)k + sel / 2) % (uint64_t)x->n);
    size_t gap = (size_t)(cr_hash4(opt.seed, c->id, who * 4096 + (uint64_t)r, 0xD1) % 3);
    d[r] = pos + gap;
    pos = d[r] + cnt[r];
  }
  return pos;
}

static size_t a2av_count(const case_t *c, int s, int r) {
  if (c->count == 0) return 0;
  uint64_t h = cr_hash4(opt.seed, c->id, blk(s, (size_t)r), 0xA2A2);
  if (h % 4 == 0) return 0;
  return (size_t)((h >> 8) % (2 * c->count + 1));
}

static void fmt_counts(char *buf, size_t len, const char *name, const size_t *v, int n) {
  size_t used = (size_t)snprintf(buf, len, " %s=[", name);
  for (int r = 0; r < n && used + 24 < len; r++) used += (size_t)snprintf(buf + used, len - used, r ? ",%zu" : "%zu", v[r]);
  if (used + 2 < len) snprintf(buf + used, len - used, "]");
}

static void describe(const ctx_t *x, const case_t *c, char *buf, size_t len) {
  size_t so, ro;
  offsets(c, &so, &ro);
  int n = snprintf(buf, len, "%s dtype=%s", kind_names[c->kind], collie_datatype_name(c->dt));
  if (is_reduction(c->kind)) n += snprintf(buf + n, len - (size_t)n, " op=%s", collie_redop_name(c->op));
  if (c->kind == K_P2P)
    n += snprintf(buf + n, len - (size_t)n, " mode=%s",
                  c->root == 0   ? "group-ring"
                  : c->root == 1 ? "isend/irecv-reverse"
                  : c->root == 2 ? "all-pairs"
                  : c->root == 4 ? "isend/irecv-in-flight"
                                 : "two-in-flight");
  n += snprintf(buf + n, len - (size_t)n, " count=%zu", c->count);
  if (is_rooted(c->kind)) n += snprintf(buf + n, len - (size_t)n, " root=%d", c->root);
  n += snprintf(buf + n, len - (size_t)n, " in_place=%d offsets=(send+%zu,recv+%zu) nranks=%d case=%llu", c->in_place,
                so, ro, x->n, (unsigned long long)c->id);
  if (c->c1 && (size_t)n < len) fmt_counts(buf + n, len - (size_t)n, c->kind == K_ALLTOALLV ? "sendcounts" : "counts", c->c1, x->n);
  n = (int)strlen(buf);
  if (c->d1 && (size_t)n < len) fmt_counts(buf + n, len - (size_t)n, c->kind == K_ALLTOALLV ? "sdispls" : "displs", c->d1, x->n);
  n = (int)strlen(buf);
  if (c->c2 && (size_t)n < len) fmt_counts(buf + n, len - (size_t)n, "recvcounts", c->c2, x->n);
  n = (int)strlen(buf);
  if (c->d2 && (size_t)n < len) fmt_counts(buf + n, len - (size_t)n, "rdispls", c->d2, x->n);
}

static size_t *alloc_counts(int n) {
  size_t *p = calloc((size_t)n, sizeof(size_t));
  if (!p) exit(2);
  return p;
}

/* A whole-vector reduction result on this rank (allreduce, reduce at the root): this
 * rank's inputs in the send buffer (or the receive buffer in place), the full reduction
 * expected in the receive buffer. */
static void reduction_buffers(ctx_t *x, case_t *c, size_t so, size_t ro) {
  const int n = x->n, me = x->rank;
  const size_t e = c->esz, cnt = c->count;
  c->reduction_result = 1;
  if (c->in_place) {
    region_init(&c->recv, "recvbuf (in place)", ro, cnt * e);
    for (size_t i = 0; i < cnt; i++) put(&c->recv, e, i, red_in(c, n, me, i));
    c->sp = rptr(&c->recv);
  } else {
    region_init(&c->send, "sendbuf", so, cnt * e);
    region_init(&c->recv, "recvbuf", ro, cnt * e);
    for (size_t i = 0; i < cnt; i++) put(&c->send, e, i, red_in(c, n, me, i));
    c->sp = rptr(&c->send);
  }
  for (size_t i = 0; i < cnt; i++) expect(&c->recv, e, i, red_exp(x, c, i));
  c->rp = rptr(&c->recv);
}

/* Prepares buffers, inputs and expectations of one case for this rank. */
static void case_setup(ctx_t *x, case_t *c) {
  const int n = x->n, me = x->rank;
  const size_t e = c->esz, cnt = c->count;
  size_t so, ro;
  offsets(c, &so, &ro);
  c->sp = NULL;
  c->rp = NULL;
  switch (c->kind) {
    case K_ALLREDUCE:
      reduction_buffers(x, c, so, ro);
      break;

    case K_BROADCAST:
      if (me == c->root && c->in_place) {
        region_init(&c->recv, "recvbuf (in place)", ro, cnt * e);
        for (size_t i = 0; i < cnt; i++) put(&c->recv, e, i, raw(c, c->root, i));
        c->sp = rptr(&c->recv);
      } else {
        if (me == c->root) {
          region_init(&c->send, "sendbuf", so, cnt * e);
          for (size_t i = 0; i < cnt; i++) put(&c->send, e, i, raw(c, c->root, i));
          c->sp = rptr(&c->send);
        } else if (!c->in_place) {
          /* a non-root's sendbuf is ignored: it must stay untouched */
          region_init(&c->send, "sendbuf (ignored at non-root)", so, cnt * e);
          c->sp = rptr(&c->send);
        }
        region_init(&c->recv, "recvbuf", ro, cnt * e);
        for (size_t i = 0; i < cnt; i++) expect(&c->recv, e, i, raw(c, c->root, i));
      }
      c->rp = rptr(&c->recv);
      break;

    case K_REDUCE:
      if (me == c->root) {
        reduction_buffers(x, c, so, ro);
      } else {
        region_init(&c->send, "sendbuf", so, cnt * e);
        for (size_t i = 0; i < cnt; i++) put(&c->send, e, i, red_in(c, n, me, i));
        c->sp = rptr(&c->send);
        if (!c->in_place) { /* non-root recvbuf: must stay untouched; else NULL */
          region_init(&c->recv, "recvbuf (ignored at non-root)", ro, cnt * e);
          c->rp = rptr(&c->recv);
        }
      }
      break;

    case K_ALLGATHER:
      region_init(&c->recv, c->in_place ? "recvbuf (in place)" : "recvbuf", ro, (size_t)n * cnt * e);
      if (c->in_place) {
        for (size_t j = 0; j < cnt; j++) put(&c->recv, e, (size_t)me * cnt + j, raw(c, me, j));
        c->sp = rptr(&c->recv) + (size_t)me * cnt * e;
      } else {
        region_init(&c->send, "sendbuf", so, cnt * e);
        for (size_t j = 0; j < cnt; j++) put(&c->send, e, j, raw(c, me, j));
        c->sp = rptr(&c->send);
      }
      for (int r = 0; r < n; r++)
        for (size_t j = 0; j < cnt; j++) expect(&c->recv, e, (size_t)r * cnt + j, raw(c, r, j));
      c->rp = rptr(&c->recv);
      break;

    case K_ALLGATHERV: {
      c->c1 = alloc_counts(n);
      c->d1 = alloc_counts(n);
      v_counts(x, c, c->c1);
      size_t ext = v_displs(x, c, 0, c->c1, c->d1); /* the same layout on every rank */
      region_init(&c->recv, c->in_place ? "recvbuf (in place)" : "recvbuf", ro, ext * e);
      size_t mine = c->c1[me];
      if (c->in_place) {
        for (size_t j = 0; j < mine; j++) put(&c->recv, e, c->d1[me] + j, raw(c, me, j));
        c->sp = rptr(&c->recv) + c->d1[me] * e;
      } else {
        region_init(&c->send, "sendbuf", so, mine * e);
        for (size_t j = 0; j < mine; j++) put(&c->send, e, j, raw(c, me, j));
        c->sp = rptr(&c->send);
      }
      for (int r = 0; r < n; r++)
        for (size_t j = 0; j < c->c1[r]; j++) expect(&c->recv, e, c->d1[r] + j, raw(c, r, j));
      c->rp = rptr(&c->recv);
      break;
    }

    case K_REDUCE_SCATTER:
    case K_REDUCE_SCATTERV: {
      size_t total, mine, myoff = 0;
      if (c->kind == K_REDUCE_SCATTERV) {
        c->c1 = alloc_counts(n);
        v_counts(x, c, c->c1);
        total = 0;
        for (int r = 0; r < n; r++) {
          if (r < me) myoff += c->c1[r];
          total += c->c1[r];
        }
        mine = c->c1[me];
      } else {
        total = (size_t)n * cnt;
        mine = cnt;
        myoff = (size_t)me * cnt;
      }
      c->reduction_result = 1;
      if (c->in_place) {
        region_init(&c->recv, "sendbuf/recvbuf (in place)", ro, total * e);
        for (size_t g = 0; g < total; g++) put(&c->recv, e, g, red_in(c, n, me, g));
        dontcare_all(&c->recv); /* only this rank's block is defined afterwards */
        for (size_t j = 0; j < mine; j++) expect(&c->recv, e, myoff + j, red_exp(x, c, myoff + j));
        c->sp = rptr(&c->recv);
        c->rp = rptr(&c->recv) + myoff * e;
        c->gidx_base = 0;
      } else {
        region_init(&c->send, "sendbuf", so, total * e);
        for (size_t g = 0; g < total; g++) put(&c->send, e, g, red_in(c, n, me, g));
        region_init(&c->recv, "recvbuf", ro, mine * e);
        for (size_t j = 0; j < mine; j++) expect(&c->recv, e, j, red_exp(x, c, myoff + j));
        c->sp = rptr(&c->send);
        c->rp = rptr(&c->recv);
        c->gidx_base = myoff;
      }
      break;
    }

    case K_ALLTOALL:
      region_init(&c->recv, c->in_place ? "recvbuf (in place)" : "recvbuf", ro, (size_t)n * cnt * e);
      if (c->in_place) {
        for (int r = 0; r < n; r++)
          for (size_t j = 0; j < cnt; j++) put(&c->recv, e, (size_t)r * cnt + j, raw(c, me, blk(r, j)));
        c->sp = rptr(&c->recv);
      } else {
        region_init(&c->send, "sendbuf", so, (size_t)n * cnt * e);
        for (int r = 0; r < n; r++)
          for (size_t j = 0; j < cnt; j++) put(&c->send, e, (size_t)r * cnt + j, raw(c, me, blk(r, j)));
        c->sp = rptr(&c->send);
      }
      for (int s = 0; s < n; s++)
        for (size_t j = 0; j < cnt; j++) expect(&c->recv, e, (size_t)s * cnt + j, raw(c, s, blk(me, j)));
      c->rp = rptr(&c->recv);
      break;

    case K_ALLTOALLV: {
      c->c1 = alloc_counts(n);
      c->d1 = alloc_counts(n);
      c->c2 = alloc_counts(n);
      c->d2 = alloc_counts(n);
      for (int r = 0; r < n; r++) {
        c->c1[r] = a2av_count(c, me, r);
        c->c2[r] = a2av_count(c, r, me);
      }
      size_t sext = v_displs(x, c, 2 * (uint64_t)me + 1, c->c1, c->d1);
      size_t rext = v_displs(x, c, 2 * (uint64_t)me + 2, c->c2, c->d2);
      if (c->in_place) {
        region_init(&c->recv, "sendbuf/recvbuf (in place)", ro, (sext > rext ? sext : rext) * e);
        for (int r = 0; r < n; r++)
          for (size_t j = 0; j < c->c1[r]; j++) put(&c->recv, e, c->d1[r] + j, raw(c, me, blk(r, j)));
        dontcare_all(&c->recv); /* outside the receive blocks nothing is promised */
        c->sp = rptr(&c->recv);
      } else {
        region_init(&c->send, "sendbuf", so, sext * e);
        region_init(&c->recv, "recvbuf", ro, rext * e);
        for (int r = 0; r < n; r++)
          for (size_t j = 0; j < c->c1[r]; j++) put(&c->send, e, c->d1[r] + j, raw(c, me, blk(r, j)));
        c->sp = rptr(&c->send);
      }
      for (int s = 0; s < n; s++)
        for (size_t j = 0; j < c->c2[s]; j++) expect(&c->recv, e, c->d2[s] + j, raw(c, s, blk(me, j)));
      c->rp = rptr(&c->recv);
      break;
    }

    case K_SCATTER:
      if (me == c->root) {
        region_init(&c->send, c->in_place ? "sendbuf (in place)" : "sendbuf", so, (size_t)n * cnt * e);
        for (size_t g = 0; g < (size_t)n * cnt; g++) put(&c->send, e, g, raw(c, c->root, g));
        c->sp = rptr(&c->send);
        if (c->in_place) { /* the root's block stays where it is; nothing else may change */
          c->rp = rptr(&c->send) + (size_t)me * cnt * e;
          break;
        }
      } else if (!c->in_place) {
        region_init(&c->send, "sendbuf (ignored at non-root)", so, (size_t)n * cnt * e);
        c->sp = rptr(&c->send);
      }
      region_init(&c->recv, "recvbuf", ro, cnt * e);
      for (size_t j = 0; j < cnt; j++) expect(&c->recv, e, j, raw(c, c->root, (size_t)me * cnt + j));
      c->rp = rptr(&c->recv);
      break;

    case K_GATHER:
      if (me == c->root) {
        region_init(&c->recv, c->in_place ? "recvbuf (in place)" : "recvbuf", ro, (size_t)n * cnt * e);
        if (c->in_place) {
          for (size_t j = 0; j < cnt; j++) put(&c->recv, e, (size_t)me * cnt + j, raw(c, me, j));
          c->sp = rptr(&c->recv) + (size_t)me * cnt * e;
        }
        for (int r = 0; r < n; r++)
          for (size_t j = 0; j < cnt; j++) expect(&c->recv, e, (size_t)r * cnt + j, raw(c, r, j));
        c->rp = rptr(&c->recv);
        if (c->in_place) break;
      } else if (!c->in_place) {
        region_init(&c->recv, "recvbuf (ignored at non-root)", ro, (size_t)n * cnt * e);
        c->rp = rptr(&c->recv);
      }
      region_init(&c->send, "sendbuf", so, cnt * e);
      for (size_t j = 0; j < cnt; j++) put(&c->send, e, j, raw(c, me, j));
      c->sp = rptr(&c->send);
      break;

    case K_P2P: {
      int right = (me + 1) % n, left = (me + n - 1) % n;
      switch (c->root) {
        case 0:   /* group: send right, receive from left */
        case 4:   /* the same as requests the fuzz completes (run_fuzz) */
        case 1: { /* isend left, irecv from right */
          int src = c->root == 1 ? right : left;
          region_init(&c->send, "sendbuf", so, cnt * e);
          region_init(&c->recv, "recvbuf", ro, cnt * e);
          for (size_t j = 0; j < cnt; j++) {
            put(&c->send, e, j, raw(c, me, j));
            expect(&c->recv, e, j, raw(c, src, j));
          }
          break;
        }
        case 2: /* all pairs, self included */
          region_init(&c->send, "sendbuf", so, (size_t)n * cnt * e);
          region_init(&c->recv, "recvbuf", ro, (size_t)n * cnt * e);
          for (int r = 0; r < n; r++)
            for (size_t j = 0; j < cnt; j++) {
              put(&c->send, e, (size_t)r * cnt + j, raw(c, me, blk(r, j)));
              expect(&c->recv, e, (size_t)r * cnt + j, raw(c, r, blk(me, j)));
            }
          break;
        default: /* two messages in flight to the right, matched in order on the left */
          region_init(&c->send, "sendbuf", so, 2 * cnt * e);
          region_init(&c->recv, "recvbuf", ro, 2 * cnt * e);
          for (int k = 0; k < 2; k++)
            for (size_t j = 0; j < cnt; j++) {
              put(&c->send, e, (size_t)k * cnt + j, raw(c, me, blk(k, j)));
              expect(&c->recv, e, (size_t)k * cnt + j, raw(c, left, blk(k, j)));
            }
          break;
      }
      c->sp = rptr(&c->send);
      c->rp = rptr(&c->recv);
      break;
    }

    default: /* barrier: no data */
      break;
  }
}

static void case_free(case_t *c) {
  region_free(&c->send);
  region_free(&c->recv);
  free(c->c1);
  free(c->d1);
  free(c->c2);
  free(c->d2);
  c->c1 = c->d1 = c->c2 = c->d2 = NULL;
}

/* Issues the case: blocking (rq == NULL) or nonblocking. P2P cases complete here. */
static collie_result_t case_post(ctx_t *x, case_t *c, collie_request_t **rq) {
  collie_comm_t *comm = x->comm;
  const collie_datatype_t dt = c->dt;
  const size_t cnt = c->count, e = c->esz;
  const unsigned char *sp = c->sp;
  unsigned char *rp = c->rp;
  switch (c->kind) {
    case K_ALLREDUCE:
      return rq ? collie_iallreduce(sp, rp, cnt, dt, c->op, comm, rq) : collie_allreduce(sp, rp, cnt, dt, c->op, comm);
    case K_BROADCAST:
      return rq ? collie_ibroadcast(sp, rp, cnt, dt, c->root, comm, rq) : collie_broadcast(sp, rp, cnt, dt, c->root, comm);
    case K_REDUCE:
      return rq ? collie_ireduce(sp, rp, cnt, dt, c->op, c->root, comm, rq)
                : collie_reduce(sp, rp, cnt, dt, c->op, c->root, comm);
    case K_ALLGATHER:
      return rq ? collie_iallgather(sp, rp, cnt, dt, comm, rq) : collie_allgather(sp, rp, cnt, dt, comm);
    case K_ALLGATHERV:
      return rq ? collie_iallgatherv(sp, c->c1[x->rank], rp, c->c1, c->d1, dt, comm, rq)
                : collie_allgatherv(sp, c->c1[x->rank], rp, c->c1, c->d1, dt, comm);
    case K_REDUCE_SCATTER:
      return rq ? collie_ireduce_scatter(sp, rp, cnt, dt, c->op, comm, rq)
                : collie_reduce_scatter(sp, rp, cnt, dt, c->op, comm);
    case K_REDUCE_SCATTERV:
      return rq ? collie_ireduce_scatterv(sp, rp, c->c1, dt, c->op, comm, rq)
                : collie_reduce_scatterv(sp, rp, c->c1, dt, c->op, comm);
    case K_ALLTOALL:
      return rq ? collie_ialltoall(sp, rp, cnt, dt, comm, rq) : collie_alltoall(sp, rp, cnt, dt, comm);
    case K_ALLTOALLV:
      return rq ? collie_ialltoallv(sp, c->c1, c->d1, rp, c->c2, c->d2, dt, comm, rq)
                : collie_alltoallv(sp, c->c1, c->d1, rp, c->c2, c->d2, dt, comm);
    case K_SCATTER:
      return rq ? collie_iscatter(sp, rp, cnt, dt, c->root, comm, rq) : collie_scatter(sp, rp, cnt, dt, c->root, comm);
    case K_GATHER:
      return rq ? collie_igather(sp, rp, cnt, dt, c->root, comm, rq) : collie_gather(sp, rp, cnt, dt, c->root, comm);
    case K_BARRIER:
      return rq ? collie_ibarrier(comm, rq) : collie_barrier(comm);
    case K_P2P: {
      const int n = x->n, me = x->rank, right = (me + 1) % n, left = (me + n - 1) % n;
      collie_result_t r;
      if (c->root == 0 || c->root == 2) {
        collie_result_t first = COLLIE_SUCCESS;
        if ((r = collie_group_start())) return r;
        if (c->root == 0) {
          if ((r = collie_send(sp, cnt, dt, right, comm)) && !first) first = r;
          if ((r = collie_recv(rp, cnt, dt, left, comm)) && !first) first = r;
        } else {
          for (int k = 1; k <= n; k++) { /* every peer, in a rank-dependent order, self included */
            int p = (me + k) % n;
            if ((r = collie_send(sp + (size_t)p * cnt * e, cnt, dt, p, comm)) && !first) first = r;
            int q = (me + n - k % n) % n;
            if ((r = collie_recv(rp + (size_t)q * cnt * e, cnt, dt, q, comm)) && !first) first = r;
          }
        }
        r = collie_group_end();
        return first ? first : r;
      }
      /* Every request posted is completed before the buffers can go, also after an error
       * (which fails the communicator: the rest then complete at once, with it). Returned
       * at the first error, the others leaked (ASan), and a progress thread could still
       * write into the receive buffer the caller then freed. */
      collie_request_t *q[4] = {NULL, NULL, NULL, NULL};
      collie_result_t first = COLLIE_SUCCESS;
      if (c->root == 1) {
        first = collie_irecv(rp, cnt, dt, right, comm, &q[0]);
        if (!first) first = collie_isend(sp, cnt, dt, left, comm, &q[1]);
        if (!first) {
          first = collie_wait(q[1]);
          q[1] = NULL;
        }
        for (int done = 0; !first && !done;) { /* collie_test frees it once done, or on an error */
          first = collie_test(q[0], &done);
          if (done || first) q[0] = NULL;
        }
      } else {
        /* two in flight each way; receives posted first on odd ranks */
        for (int k = 0; k < 4 && !first; k++) {
          const int j = k % 2;
          if ((me % 2 == 1) == (k < 2))
            first = collie_irecv(rp + (size_t)j * cnt * e, cnt, dt, left, comm, &q[j]);
          else
            first = collie_isend(sp + (size_t)j * cnt * e, cnt, dt, right, comm, &q[2 + j]);
        }
      }
      for (int k = 3; k >= 0; k--) {
        if (!q[k]) continue;
        r = collie_wait(q[k]);
        if (!first) first = r;
      }
      return first;
    }
    default:
      return COLLIE_ERR_INTERNAL;
  }
}

/* Compares one region with its expectation; returns the number of bad elements/guard bytes. */
static long region_check(ctx_t *x, case_t *c, region_t *g, int is_result) {
  if (!g->used) return 0;
  long bad = 0;
  size_t first = (size_t)-1;
  const size_t e = c->esz;
  for (size_t k = 0; k < g->total; k++) {
    if (!g->care[k] || g->base[k] == g->exp[k]) continue;
    if (first == (size_t)-1) first = k;
    bad++;
    if (k >= g->off && k < g->off + g->len) { /* count elements, not bytes */
      size_t el_end = g->off + ((k - g->off) / e + 1) * e;
      k = el_end - 1;
    }
  }
  if (!bad) return 0;
  if (x->printed < MAX_PRINTED) {
    x->printed++;
    char d[1024], where[600];
    describe(x, c, d, sizeof(d));
    size_t k = first;
    if (k < g->off || k >= g->off + g->len) {
      long rel = k < g->off ? -(long)(g->off - k) : (long)(k - g->off - g->len);
      snprintf(where, sizeof(where), "%s guard byte %s%ld %s the buffer was overwritten: got 0x%02x expected 0x%02x",
               g->name, k < g->off ? "" : "+", rel, k < g->off ? "before" : "after", g->base[k], g->exp[k]);
    } else {
      size_t el = (k - g->off) / e;
      char got[64], want[64];
      cr_format(c->dt, cr_load(g->base + g->off + el * e, e), got, sizeof(got));
      cr_format(c->dt, cr_load(g->exp + g->off + el * e, e), want, sizeof(want));
      int m = snprintf(where, sizeof(where), "%s element %zu: got %s expected %s", g->name, el, got, want);
      if (is_result && c->reduction_result && m > 0 && (size_t)m < sizeof(where)) {
        size_t gi = c->gidx_base + el;
        m += snprintf(where + m, sizeof(where) - (size_t)m, "; inputs at index %zu:", gi);
        for (int r = 0; r < x->n && r < 16 && (size_t)m < sizeof(where); r++) {
          char in[64];
          cr_format(c->dt, red_in(c, x->n, r, gi), in, sizeof(in));
          m += snprintf(where + m, sizeof(where) - (size_t)m, " r%d=%s", r, in);
        }
      }
    }
    say(x, "MISMATCH %s: %s (%ld bad elements or guard bytes in this buffer)", d, where, bad);
  }
  return bad;
}

static void case_verify(ctx_t *x, case_t *c) {
  long bad = region_check(x, c, &c->send, 0) + region_check(x, c, &c->recv, 1);
  x->cases++;
  if (bad) x->failed++;
  if (opt.verbose > 1) {
    char d[1024];
    describe(x, c, d, sizeof(d));
    say(x, "%s %s", bad ? "FAIL" : "ok", d);
  }
}

static void api_failed(ctx_t *x, const case_t *c, const char *what, collie_result_t r) {
  char d[1024] = "";
  if (c) describe(x, c, d, sizeof(d));
  const char *msg = collie_get_last_error(x->comm);
  if (!msg || !*msg) msg = collie_get_last_error(NULL); /* a group's end: the thread's error */
  if (!x->fail_msg[0]) snprintf(x->fail_msg, sizeof(x->fail_msg), "%s", msg ? msg : "(none)");
  say(x, "%s: %s returned %s (%s): %s", opt.kill_rank >= 0 ? "stopped" : "FAILED", what, collie_get_error_string(r), d,
      msg);
  x->fatal = 1;
  x->failed++;
}

static void case_init(ctx_t *x, case_t *c, int kind, collie_datatype_t dt, collie_redop_t op, size_t count, int root,
                      int in_place) {
  memset(c, 0, sizeof(*c));
  c->kind = kind;
  c->dt = dt;
  c->op = op;
  c->count = count;
  c->root = root;
  c->in_place = in_place;
  c->id = x->next_id++;
  c->offsel = (int)((c->id + c->id / 2) % 4); /* both in-place settings see every offset pair */
  c->esz = collie_datatype_size(dt);
}

/* One blocking case from setup to verdict. Returns the recv region's hash (allreduce). */
static uint64_t run_case(ctx_t *x, int kind, collie_datatype_t dt, collie_redop_t op, size_t count, int root,
                         int in_place) {
  case_t c;
  case_init(x, &c, kind, dt, op, count, root, in_place);
  case_setup(x, &c);
  collie_result_t r = case_post(x, &c, NULL);
  uint64_t h = 0;
  if (r) api_failed(x, &c, kind_names[kind], r);
  else {
    case_verify(x, &c);
    if (c.recv.used) h = region_hash(&c.recv);
  }
  case_free(&c);
  return h;
}

/* ---- sections ------------------------------------------------------------------------ */

static int dtype_list(const collie_datatype_t **list) {
  if (opt.all_dtypes) {
    *list = all_dtypes;
    return (int)(sizeof(all_dtypes) / sizeof(all_dtypes[0]));
  }
  *list = quick_dtypes;
  return (int)(sizeof(quick_dtypes) / sizeof(quick_dtypes[0]));
}

/* 54 and 109: the shared-memory collectives' inline lines full (54 float64: 432 bytes,
 * eight lines) and just past them (109 float32: 436 bytes, the staging buffer). */
#define MAX_COUNTS 64
static int count_list(const ctx_t *x, size_t *out) {
  if (opt.ncounts) {
    memcpy(out, opt.counts, sizeof(size_t) * (size_t)opt.ncounts);
    return opt.ncounts;
  }
  size_t want[] = {0, 1, 7, (size_t)x->n - 1, (size_t)x->n + 1, 54, 109, 1000 + 3, BIG_COUNT};
  const int nwant = (int)(sizeof(want) / sizeof(want[0]));
  int m = 0;
  for (int i = 0; i < (opt.big ? nwant : nwant - 1); i++) {
    int dup = 0;
    for (int j = 0; j < m; j++) dup |= out[j] == want[i];
    if (!dup) out[m++] = want[i];
  }
  return m;
}

/* All ranks must hold the same value h: allgathered and compared. */
static void check_identical(ctx_t *x, uint64_t h, const char *what) {
  uint64_t *all = calloc((size_t)x->n, sizeof(uint64_t));
  if (!all) exit(2);
  collie_result_t r = collie_allgather(&h, all, 1, COLLIE_UINT64, x->comm);
  x->cases++;
  if (r) {
    api_failed(x, NULL, "allgather of result hashes", r);
  } else {
    for (int q = 0; q < x->n; q++)
      if (all[q] != h) {
        x->failed++;
        if (x->printed++ < MAX_PRINTED)
          say(x, "MISMATCH %s: rank %d holds different result bits than rank %d (hash %016llx vs %016llx)", what, q,
              x->rank, (unsigned long long)all[q], (unsigned long long)h);
        break;
      }
  }
  free(all);
}

static void run_matrix(ctx_t *x, int kind) {
  const collie_datatype_t *dts;
  int ndt = dtype_list(&dts);
  size_t counts[MAX_COUNTS];
  int nc = count_list(x, counts);
  int roots[2] = {0, x->n - 1}, nroots = is_rooted(kind) ? (x->n > 1 ? 2 : 1) : 1;
  int nops = is_reduction(kind) ? COLLIE_NUM_OPS : 1;
  for (int d = 0; d < ndt && !x->fatal; d++) {
    uint64_t acc = 0;
    for (int op = 0; op < nops && !x->fatal; op++)
      for (int ci = 0; ci < nc && !x->fatal; ci++)
        for (int ri = 0; ri < nroots && !x->fatal; ri++)
          for (int ip = 0; ip < 2 && !x->fatal; ip++) {
            uint64_t h = run_case(x, kind, dts[d], (collie_redop_t)op, counts[ci], is_rooted(kind) ? roots[ri] : -1, ip);
            acc = cr_hash4(acc, h, 0, 0);
          }
    if (kind == K_ALLREDUCE && !x->fatal) {
      char what[128];
      snprintf(what, sizeof(what), "allreduce results of dtype %s (all ops, counts, in place or not)",
               collie_datatype_name(dts[d]));
      check_identical(x, acc, what);
    }
  }
}

static void run_p2p(ctx_t *x) {
  const collie_datatype_t *dts;
  int ndt = dtype_list(&dts);
  size_t counts[4] = {0, 1, 7, 1003};
  for (int d = 0; d < ndt && !x->fatal; d++)
    for (int ci = 0; ci < 4 && !x->fatal; ci++)
      for (int mode = 0; mode < 4 && !x->fatal; mode++) run_case(x, K_P2P, dts[d], COLLIE_SUM, counts[ci], mode, 0);
  if (opt.big && !x->fatal) run_case(x, K_P2P, COLLIE_FLOAT32, COLLIE_SUM, BIG_COUNT, 0, 0);
}

static void run_barrier(ctx_t *x) {
  for (int i = 0; i < 3 && !x->fatal; i++) run_case(x, K_BARRIER, COLLIE_UINT8, COLLIE_SUM, 0, -1, 0);
  if (x->n < 2 || x->fatal) return;
  /* a late rank (0, then n-1) holds every other rank in the barrier */
  int late[2] = {0, x->n - 1};
  for (int i = 0; i < 2 && !x->fatal; i++) {
    collie_result_t r = collie_barrier(x->comm);
    if (r) {
      api_failed(x, NULL, "barrier", r);
      return;
    }
    double t0 = now_s();
    /* The whole 200 ms even when signals (--signal-storm) cut the sleep short: to an
     * absolute time, as a relative sleep restarted with what was left drifts, and under
     * a storm on a loaded machine may never end. */
    if (x->rank == late[i]) {
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_nsec += 200 * 1000 * 1000;
      if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) continue;
    }
    r = collie_barrier(x->comm);
    if (r) {
      api_failed(x, NULL, "barrier", r);
      return;
    }
    double waited = now_s() - t0;
    x->cases++;
    if (x->rank != late[i] && waited < 0.05) {
      x->failed++;
      if (x->printed++ < MAX_PRINTED)
        say(x, "MISMATCH barrier: rank %d slept 200 ms before entering the barrier but this rank left it after "
               "%.1f ms", late[i], waited * 1e3);
    }
  }
}

/* Every i-collective in flight at once: waited in reverse order, polled with collie_test,
 * and completed by collie_comm_synchronize. */
static void run_nonblocking(ctx_t *x) {
  const int n = x->n;
  struct {
    int kind;
    collie_datatype_t dt;
    collie_redop_t op;
    size_t count;
    int root, ip;
  } plan[] = {
      {K_ALLREDUCE, COLLIE_FLOAT32, COLLIE_SUM, 1003, -1, 0},
      {K_ALLGATHER, COLLIE_INT32, COLLIE_SUM, (size_t)n + 1, -1, 1},
      {K_BROADCAST, COLLIE_UINT8, COLLIE_SUM, 1003, n - 1, 0},
      {K_REDUCE, COLLIE_BFLOAT16, COLLIE_MAX, 1003, 0, 0},
      {K_ALLGATHERV, COLLIE_FLOAT16, COLLIE_SUM, 7, -1, 0},
      {K_REDUCE_SCATTER, COLLIE_INT64, COLLIE_AVG, 1003, -1, 1},
      {K_REDUCE_SCATTERV, COLLIE_UINT32, COLLIE_PROD, 7, -1, 0},
      {K_ALLTOALL, COLLIE_FLOAT64, COLLIE_SUM, 7, -1, 1},
      {K_ALLTOALLV, COLLIE_INT8, COLLIE_SUM, 7, -1, 0},
      {K_SCATTER, COLLIE_UINT64, COLLIE_SUM, 7, n - 1, 0},
      {K_GATHER, COLLIE_FLOAT16, COLLIE_SUM, 7, 0, 1},
      {K_BARRIER, COLLIE_UINT8, COLLIE_SUM, 0, -1, 0},
      {K_ALLREDUCE, COLLIE_INT8, COLLIE_MIN, 0, -1, 0}, /* count 0: completes after those before it */
      {K_ALLREDUCE, COLLIE_FLOAT16, COLLIE_AVG, (size_t)n + 1, -1, 1},
  };
  enum { NP = sizeof(plan) / sizeof(plan[0]) };
  case_t cs[NP];
  for (int round = 0; round < 3 && !x->fatal; round++) {
    int posted = 0;
    for (int i = 0; i < NP; i++) {
      case_init(x, &cs[i], plan[i].kind, plan[i].dt, plan[i].op, plan[i].count, plan[i].root, plan[i].ip);
      case_setup(x, &cs[i]);
    }
    for (int i = 0; i < NP && !x->fatal; i++) {
      collie_result_t r = case_post(x, &cs[i], &cs[i].req);
      if (r) api_failed(x, &cs[i], "posting a nonblocking collective", r);
      else posted++;
    }
    if (round == 0) { /* reverse order */
      for (int i = posted - 1; i >= 0; i--) {
        collie_result_t r = collie_wait(cs[i].req);
        cs[i].req = NULL;
        if (r) api_failed(x, &cs[i], "collie_wait (reverse order)", r);
      }
    } else if (round == 1) { /* polling, all at once */
      int left = posted;
      while (left > 0 && !x->fatal)
        for (int i = posted - 1; i >= 0; i--) {
          if (!cs[i].req) continue;
          int done = 0;
          collie_result_t r = collie_test(cs[i].req, &done);
          if (r) {
            api_failed(x, &cs[i], "collie_test", r);
            cs[i].req = NULL;
            left--;
          } else if (done) {
            cs[i].req = NULL;
            left--;
          }
        }
    } else { /* synchronize, after which every request must test done */
      collie_result_t r = collie_comm_synchronize(x->comm);
      if (r) api_failed(x, NULL, "collie_comm_synchronize", r);
      for (int i = 0; i < posted; i++) {
        int done = 0;
        r = collie_test(cs[i].req, &done);
        if (r) api_failed(x, &cs[i], "collie_test after collie_comm_synchronize", r);
        else if (!done) {
          x->failed++;
          char d[1024];
          describe(x, &cs[i], d, sizeof(d));
          if (x->printed++ < MAX_PRINTED)
            say(x, "MISMATCH %s: collie_test says not done after collie_comm_synchronize returned", d);
          if (collie_wait(cs[i].req)) x->fatal = 1;
        }
        cs[i].req = NULL;
      }
    }
    for (int i = 0; i < NP; i++) {
      if (!x->fatal) case_verify(x, &cs[i]);
      case_free(&cs[i]);
    }
  }
}

/* Order-sensitive inputs (random floats): the result must be bitwise identical on every rank
 * and on every repetition of the same call, and close to the exact value. */
static void run_determinism(ctx_t *x) {
  const collie_datatype_t *dts;
  int ndt = dtype_list(&dts);
  const int n = x->n, me = x->rank;
  size_t counts[3] = {1003, (size_t)n + 1, BIG_COUNT};
  collie_redop_t ops[3] = {COLLIE_SUM, COLLIE_PROD, COLLIE_AVG};
  for (int d = 0; d < ndt && !x->fatal; d++) {
    collie_datatype_t dt = dts[d];
    if (!cr_is_float(dt)) continue;
    size_t e = collie_datatype_size(dt);
    for (int oi = 0; oi < 3 && !x->fatal; oi++)
      for (int ci = 0; ci < (opt.big ? 3 : 2) && !x->fatal; ci++)
        for (int ip = 0; ip < 2 && !x->fatal; ip++) {
          case_t c;
          case_init(x, &c, K_DETERMINISM, dt, ops[oi], counts[ci], -1, ip);
          size_t cnt = c.count;
          unsigned char *in = malloc(cnt * e + 1), *out[2], *rs[2];
          out[0] = malloc(cnt * e + 1);
          out[1] = malloc(cnt * e + 1);
          size_t rsn = cnt / (size_t)n + 1;
          unsigned char *rsin = malloc((size_t)n * rsn * e + 1);
          rs[0] = malloc((size_t)n * rsn * e + 1);
          rs[1] = malloc((size_t)n * rsn * e + 1);
          if (!in || !out[0] || !out[1] || !rsin || !rs[0] || !rs[1]) exit(2);
          for (size_t i = 0; i < cnt; i++) cr_store(in + i * e, e, cr_random_float(dt, c.op, hsh(&c, me, i)));
          for (size_t i = 0; i < (size_t)n * rsn; i++)
            cr_store(rsin + i * e, e, cr_random_float(dt, c.op, hsh(&c, me, blk(1, i))));
          for (int rep = 0; rep < 2 && !x->fatal; rep++) {
            collie_result_t r;
            if (ip) {
              memcpy(out[rep], in, cnt * e);
              r = collie_allreduce(out[rep], out[rep], cnt, dt, c.op, x->comm);
            } else {
              r = collie_allreduce(in, out[rep], cnt, dt, c.op, x->comm);
            }
            if (r) {
              api_failed(x, &c, "allreduce (determinism)", r);
              break;
            }
            if (ip) {
              memcpy(rs[rep], rsin, (size_t)n * rsn * e);
              r = collie_reduce_scatter(rs[rep], rs[rep] + (size_t)me * rsn * e, rsn, dt, c.op, x->comm);
            } else {
              r = collie_reduce_scatter(rsin, rs[rep], rsn, dt, c.op, x->comm);
            }
            if (r) api_failed(x, &c, "reduce_scatter (determinism)", r);
          }
          if (!x->fatal) {
            char dsc[1024];
            describe(x, &c, dsc, sizeof(dsc));
            x->cases++;
            size_t rsoff = ip ? (size_t)me * rsn * e : 0;
            if (memcmp(out[0], out[1], cnt * e) || memcmp(rs[0] + rsoff, rs[1] + rsoff, rsn * e)) {
              x->failed++;
              if (x->printed++ < MAX_PRINTED)
                say(x, "MISMATCH %s: repeating the same allreduce/reduce_scatter gave different bits", dsc);
            }
            /* close to the exact result (catches gross errors in non-integer data) */
            double eps = dt == COLLIE_FLOAT16 ? 0x1p-10 : dt == COLLIE_BFLOAT16 ? 0x1p-7 : dt == COLLIE_FLOAT32 ? 0x1p-23 : 0x1p-52;
            size_t badi = (size_t)-1;
            double got_v = 0, ref_v = 0;
            for (size_t i = 0; i < cnt && badi == (size_t)-1; i++) {
              double ref = c.op == COLLIE_PROD ? 1 : 0, mag = 0;
              for (int q = 0; q < n; q++) {
                double v = cr_decode_float(dt, cr_random_float(dt, c.op, hsh(&c, q, i)));
                if (c.op == COLLIE_PROD) ref *= v;
                else ref += v;
                mag += v < 0 ? -v : v;
              }
              if (c.op == COLLIE_AVG) {
                ref /= n;
                mag /= n;
              }
              if (c.op == COLLIE_PROD) mag = ref < 0 ? -ref : ref;
              double got = cr_decode_float(dt, cr_load(out[0] + i * e, e));
              double tol = 2.0 * (n + 1) * eps * (mag + 1e-30) + eps * (ref < 0 ? -ref : ref);
              if (!(got - ref <= tol && ref - got <= tol)) {
                badi = i;
                got_v = got;
                ref_v = ref;
              }
            }
            if (badi != (size_t)-1) {
              x->failed++;
              if (x->printed++ < MAX_PRINTED)
                say(x, "MISMATCH %s: allreduce element %zu is %.9g, exact value %.9g (beyond rounding error)", dsc, badi,
                    got_v, ref_v);
            }
            /* identical bits on every rank: allreduce results hashed */
            uint64_t h = 1469598103934665603ull;
            for (size_t k = 0; k < cnt * e; k++) h = (h ^ out[0][k]) * 1099511628211ull;
            check_identical(x, h, dsc);
          }
          free(in);
          free(out[0]);
          free(out[1]);
          free(rsin);
          free(rs[0]);
          free(rs[1]);
        }
  }
}

/* After the sections or the fuzz: abort after a failed call, else destroy (which must work). */
static void release_comm(ctx_t *x) {
  if (x->fatal) {
    say(x, "stopping after the failed call; aborting the communicator");
    collie_comm_abort(x->comm);
    return;
  }
  collie_result_t r = collie_comm_destroy(x->comm);
  if (r) {
    say(x, "FAILED: collie_comm_destroy returned %s: %s", collie_get_error_string(r), collie_get_last_error(NULL));
    x->failed++;
  }
}

/* ---- fuzz mode ----------------------------------------------------------------------- */

/* The sequence's seed: --seed, varied per thread with --fuzz-threads. */
static _Thread_local uint64_t fuzz_seed;

static uint64_t fuzz_draw(uint64_t i, uint64_t what) { return cr_hash4(fuzz_seed, 0xF022, i, what); }

/* Elements of the largest buffer of a case per unit of count: the bound on count. */
enum { FUZZ_ALONE, FUZZ_GROUP, FUZZ_NONBLOCKING }; /* how a fuzz case is issued */

static size_t fuzz_span(int kind, int n) {
  switch (kind) {
    case K_ALLGATHER: case K_REDUCE_SCATTER: case K_ALLTOALL: case K_SCATTER: case K_GATHER: return (size_t)n;
    case K_ALLGATHERV: case K_REDUCE_SCATTERV: return (size_t)n * 2 + 4; /* up to 1.5 count each, gaps */
    case K_ALLTOALLV: return (size_t)n * 2 + 4;                           /* up to 2 count each, gaps */
    case K_P2P: return (size_t)n * 2;                                     /* all pairs, two in flight */
    default: return 1;
  }
}

/* Case i of the sequence: the same on every rank. Point to point: a ring, in one of the
 * matrix's modes (0 to 3, complete when posted; 0 only, in a group), or mode 4 (a send and
 * a receive in flight) when nonblocking. */
static void fuzz_case(ctx_t *x, case_t *c, uint64_t i, int how) {
  static const int kinds[] = {K_ALLREDUCE,       K_BROADCAST, K_REDUCE,   K_ALLGATHER, K_ALLGATHERV,
                              K_REDUCE_SCATTER, K_REDUCE_SCATTERV, K_ALLTOALL, K_ALLTOALLV, K_SCATTER,
                              K_GATHER,         K_BARRIER,         K_P2P};
  const int kind = kinds[fuzz_draw(i, 1) % (sizeof(kinds) / sizeof(kinds[0]))];
  const collie_datatype_t dt = all_dtypes[fuzz_draw(i, 2) % (sizeof(all_dtypes) / sizeof(all_dtypes[0]))];
  const collie_redop_t op = (collie_redop_t)(fuzz_draw(i, 3) % COLLIE_NUM_OPS);
  const size_t unit = collie_datatype_size(dt) * fuzz_span(kind, x->n);
  const size_t most = opt.fuzz_bytes / unit;
  const uint64_t h = fuzz_draw(i, 4);
  size_t count = 0;
  if (h % 8 && most > 0) { /* a count 0 one time in 8; else 2^(u * log2(most)), u uniform */
    double u = (double)((h >> 8) % 100000) / 100000.0;
    count = (size_t)exp2(u * log2((double)most));
    if (count > most) count = most;
  }
  int root = is_rooted(kind) ? (int)(fuzz_draw(i, 5) % (uint64_t)x->n) : -1;
  if (kind == K_P2P) root = how == FUZZ_ALONE ? (int)(fuzz_draw(i, 5) % 4) : how == FUZZ_GROUP ? 0 : 4;
  case_init(x, c, kind, dt, op, kind == K_BARRIER ? 0 : count, root, kind != K_P2P && fuzz_draw(i, 6) % 3 == 0);
  case_setup(x, c);
}

/* Waits for in-flight case k (collie_wait, collie_test until done, or one time in 8
 * collie_comm_synchronize of its communicator first: it waits for the others in flight
 * there too, and other ranks may meanwhile wait on other communicators) and verifies it. */
static collie_result_t fuzz_complete(collie_comm_t *comm, collie_request_t *req, uint64_t *mine) {
  *mine = cr_hash4(*mine, 1, 0, 0);
  if (*mine % 8 == 1) {
    const collie_result_t r = collie_comm_synchronize(comm);
    int done = 0;
    collie_result_t t = collie_test(req, &done); /* done: that completed the request */
    if (!done) {
      const collie_result_t w = collie_wait(req); /* frees it */
      if (!r && !t) {
        fprintf(stderr, "coll_check: a request was not done after collie_comm_synchronize\n");
        return COLLIE_ERR_INTERNAL;
      }
      if (!t) t = w;
    }
    return r ? r : t;
  }
  if (*mine % 2) return collie_wait(req);
  collie_result_t r;
  int done = 0;
  while (!(r = collie_test(req, &done)) && !done) continue;
  return r;
}

static void fuzz_finish(ctx_t *x, case_t *c, uint64_t *mine) {
  collie_result_t r, r2 = COLLIE_SUCCESS;
  *mine = cr_hash4(*mine, 5, 0, 0);
  if (c->req2 && *mine % 2) { /* the receive first, or the send */
    r2 = fuzz_complete(x->comm, c->req2, mine);
    c->req2 = NULL;
  }
  r = fuzz_complete(x->comm, c->req, mine);
  if (c->req2) r2 = fuzz_complete(x->comm, c->req2, mine);
  if (!r) r = r2;
  c->req = c->req2 = NULL;
  if (r) api_failed(x, c, "completing a nonblocking collective", r);
  else case_verify(x, c);
  case_free(c);
}

/* An in-flight case issued before a blocking call that has returned: it must test done. */
static void fuzz_predecessor(ctx_t *x, case_t *c, const char *later) {
  collie_result_t r = COLLIE_SUCCESS;
  collie_request_t *reqs[2] = {c->req, c->req2};
  for (int k = 0; k < 2 && reqs[k]; k++) {
    int done = 0;
    collie_result_t rk = collie_test(reqs[k], &done);
    if (!rk && !done) {
      char d[1024];
      describe(x, c, d, sizeof(d));
      x->failed++;
      if (x->printed++ < MAX_PRINTED)
        say(x, "MISMATCH %s: not done after a later blocking call had returned (%s)", d, later);
      rk = collie_wait(reqs[k]);
    }
    if (!r) r = rk;
  }
  c->req = c->req2 = NULL;
  if (r) api_failed(x, c, "completing a collective issued before a blocking call that returned", r);
  else case_verify(x, c);
}

/* The fuzz's communicators: the world, a copy of it, and its halves by parity with the
 * ranks numbered backwards; one ctx each (case ids count per communicator). */
enum { FUZZ_COMMS = 3 };

static int fuzz_comms(ctx_t *x, ctx_t *xs) {
  for (int ci = 0; ci < FUZZ_COMMS; ci++) {
    xs[ci] = *x;
    xs[ci].cases = xs[ci].failed = 0;
    xs[ci].printed = xs[ci].fatal = 0;
    xs[ci].next_id = 0;
    if (ci == 0) continue;
    collie_result_t r = collie_comm_split(x->comm, ci == 1 ? 0 : x->rank % 2, ci == 1 ? x->rank : -x->rank,
                                          &xs[ci].comm);
    if (r) {
      api_failed(x, NULL, "collie_comm_split", r);
      return ci;
    }
    collie_comm_rank(xs[ci].comm, &xs[ci].rank);
    collie_comm_size(xs[ci].comm, &xs[ci].n);
    xs[ci].vals = calloc((size_t)xs[ci].n, sizeof(int64_t));
    if (!xs[ci].vals) exit(2);
  }
  return FUZZ_COMMS;
}

/* A communicator's or thread's counts and first error, added to the rank's. */
static void fuzz_absorb(ctx_t *into, const ctx_t *from) {
  into->cases += from->cases;
  into->failed += from->failed;
  if (!into->fail_msg[0]) memcpy(into->fail_msg, from->fail_msg, sizeof(into->fail_msg));
}

/* After a failure, the requests still in flight are collected once their communicators
 * are aborted (their wait then returns at once, with the failure): waited for before, one
 * on a communicator that has not failed here could wait for peers that gave up. Without
 * a wait they leaked (ASan's leak check). Their buffers stay until then: the library may
 * write into a receive buffer until its request completes, and a progress thread did, on
 * a communicator that had not yet learnt of the failure, after these buffers had been
 * freed (glibc: "corrupted double-linked list"; CI, coll_fuzz_stop_progress_thread_4).
 * Per thread: each has its own communicators. */
enum { FUZZ_ORPHANS = 64 }; /* in flight at once: a window of 8, and a group of 4 */
static _Thread_local struct {
  case_t c[FUZZ_ORPHANS];
  int n;
} fuzz_orphans;

static void fuzz_drop(case_t *c) {
  if (!c->req && !c->req2) { /* completed */
    case_free(c);
    return;
  }
  if (fuzz_orphans.n == FUZZ_ORPHANS) { /* never: stop rather than free buffers in use */
    fprintf(stderr, "coll_check: more than %d operations in flight after a failure\n", FUZZ_ORPHANS);
    exit(2);
  }
  fuzz_orphans.c[fuzz_orphans.n++] = *c;
  c->req = c->req2 = NULL;
}

static void fuzz_collect_orphans(void) {
  for (int k = 0; k < fuzz_orphans.n; k++) {
    case_t *c = &fuzz_orphans.c[k];
    if (c->req) collie_wait(c->req);
    if (c->req2) collie_wait(c->req2);
    case_free(c);
  }
  fuzz_orphans.n = 0;
}

/* --fuzz-kill: the victim dies as kill -9 would (before operation K, or inside a group
 * that spans it). --fuzz-stop: it stops (SIGSTOP), as a rank frozen by a debugger, a paused
 * container or a swapping host does, once per process (with --fuzz-threads, the first thread
 * there); the test resumes it (SIGCONT) after the others have given up on it. */
static int fuzz_victim_stopped;

static void fuzz_victim_strikes(ctx_t *x, long i) {
  if (!opt.stop) {
    fflush(stdout);
    raise(SIGKILL);
  }
  if (__atomic_exchange_n(&fuzz_victim_stopped, 1, __ATOMIC_SEQ_CST)) return;
  printf("coll_check: rank %d (pid %lld) stops itself before operation %ld\n", x->rank, (long long)getpid(), i);
  fflush(stdout);
  raise(SIGSTOP);
  say(x, "resumed");
}

/* Operation i as a communicator split (one in 48), with operations still in flight on the
 * three communicators: the parent (any of them) splits by a color drawn per rank (or none),
 * and the new communicator runs a blocking case of the sequence and is destroyed. Creating
 * and destroying communicators are blocking calls a peer may have to wait behind: the
 * operations in flight must still move. Returns false on a failure. */
static bool fuzz_split(ctx_t *xs, uint64_t i) {
  ctx_t *p = &xs[fuzz_draw(i, 12) % FUZZ_COMMS];
  const uint64_t c = fuzz_draw(i, 13) + (uint64_t)p->rank * 0x9E37u;
  const int color = c % 5 == 0 ? COLLIE_SPLIT_NOCOLOR : (int)(c % 3);
  ctx_t y = *p;
  y.cases = y.failed = 0;
  y.printed = y.fatal = 0;
  y.next_id = 0;
  y.fail_msg[0] = 0;
  collie_result_t r = collie_comm_split(p->comm, color, (int)(fuzz_draw(i, 14) % 4) - p->rank, &y.comm);
  if (r) {
    api_failed(p, NULL, "collie_comm_split with operations in flight", r);
    return false;
  }
  if (!y.comm) return true; /* COLLIE_SPLIT_NOCOLOR */
  collie_comm_rank(y.comm, &y.rank);
  collie_comm_size(y.comm, &y.n);
  y.vals = calloc((size_t)y.n, sizeof(int64_t));
  if (!y.vals) exit(2);
  case_t cs;
  fuzz_case(&y, &cs, i, FUZZ_ALONE);
  r = case_post(&y, &cs, NULL);
  if (r) api_failed(&y, &cs, "a blocking collective on a communicator just split off", r);
  else case_verify(&y, &cs);
  case_free(&cs);
  release_comm(&y);
  free(y.vals);
  fuzz_absorb(p, &y);
  p->fatal |= y.fatal;
  return !y.fatal;
}

/* A case in flight, and the communicator it was issued on. */
typedef struct {
  case_t c;
  int ci;
} fuzz_fly_t;

/* Blocking calls on communicators gci[0..posted) have returned (`later` describes the
 * last), so everything issued before them there must test done: checks and drops those of
 * the nfly cases in flight; returns how many are left. */
static int fuzz_blocked(ctx_t *xs, fuzz_fly_t *fly, int nfly, const int *gci, int posted, const char *later,
                        bool *fatal) {
  int kept = 0;
  for (int k = 0; k < nfly; k++) {
    bool before = false;
    for (int j = 0; j < posted; j++) before |= fly[k].ci == gci[j];
    if (!before) {
      fly[kept++] = fly[k];
      continue;
    }
    if (!*fatal) fuzz_predecessor(&xs[fly[k].ci], &fly[k].c, later);
    *fatal |= xs[fly[k].ci].fatal;
    fuzz_drop(&fly[k].c);
  }
  return kept;
}

/* --fuzz-repeat: whether operation i is a run of repeated small collectives. */
static bool fuzz_is_run(uint64_t i) {
  return opt.fuzz_repeat && !(opt.fuzz_split && fuzz_draw(i, 11) % 48 == 0) && fuzz_draw(i, 15) % 8 == 0;
}

/* Operation i as a run of 2 to 40 blocking all-reduces, all-gathers, reduce-scatters,
 * all-to-alls, broadcasts or reduces (from a root drawn per call) of one call (what a rank
 * stages, its vector or block, or all its blocks, up to 40, 488 or 4136 bytes by turns
 * where the rank count allows: one inline line, up to 8, or up to 65, a wide slot's; any
 * datatype, sum, prod, max or min: AVG never takes the fast lane) on one communicator, in
 * place or not by turns, each verified, or (one run in 4) of barriers; a victim of
 * operation i strikes inside it, where the others are in their fast lanes. Fills *ci and
 * `later` (the last call). False on a failure. */
static bool fuzz_repeat_run(ctx_t *xs, uint64_t i, int world_rank, int *ci, char *later, size_t len) {
  *ci = (int)(fuzz_draw(i, 8) % FUZZ_COMMS);
  ctx_t *x = &xs[*ci];
  const collie_datatype_t dt = all_dtypes[fuzz_draw(i, 2) % (sizeof(all_dtypes) / sizeof(all_dtypes[0]))];
  const collie_redop_t op = (collie_redop_t)(fuzz_draw(i, 3) % COLLIE_AVG);
  static const int kinds[] = {K_ALLREDUCE, K_ALLGATHER, K_REDUCE_SCATTER, K_ALLTOALL, K_BROADCAST, K_REDUCE};
  const int kind = kinds[fuzz_draw(i, 61) % 6];
  /* reduce-scatter and all-to-all stage a block for every rank */
  const size_t blocks = kind == K_REDUCE_SCATTER || kind == K_ALLTOALL ? (size_t)x->n : 1;
  /* one inline line (40 bytes), up to 8 (488 bytes) or up to 65 (4136, a broadcast's most,
   * an all-gather's 2088: transport/shm.h), by turns */
  static const size_t limits[] = {40, 488, 4136};
  const size_t esz = collie_datatype_size(dt), most = limits[fuzz_draw(i, 59) % 3] / esz / blocks;
  const size_t count = 1 + (size_t)(fuzz_draw(i, 4) % (most ? most : 1));
  const int runs = 2 + (int)(fuzz_draw(i, 16) % 39), strike = (int)(fuzz_draw(i, 17) % (uint64_t)runs);
  const bool barriers = fuzz_draw(i, 60) % 4 == 0;
  later[0] = 0;
  if (opt.verbose)
    say(x, "operation %llu: a run of %d %s, count %zu", (unsigned long long)i, runs,
        barriers ? "barriers" : kind_names[kind], barriers ? (size_t)0 : count);
  for (int k = 0; k < runs; k++) {
    if ((long)i == opt.kill_at && world_rank == opt.kill_rank && k == strike) fuzz_victim_strikes(x, (long)i);
    case_t c;
    if (barriers) case_init(x, &c, K_BARRIER, dt, op, 0, -1, 0);
    else {
      const int root = is_rooted(kind) ? (int)(fuzz_draw(i, 62 + (uint64_t)k) % (uint64_t)x->n) : -1;
      case_init(x, &c, kind, dt, op, count, root, fuzz_draw(i, 18 + (uint64_t)k) % 4 == 0);
    }
    case_setup(x, &c);
    collie_result_t r = case_post(x, &c, NULL);
    if (r) api_failed(x, &c, barriers ? "a repeated barrier" : "a repeated blocking collective", r);
    else case_verify(x, &c);
    if (k == runs - 1 || r) describe(x, &c, later, len);
    case_free(&c);
    if (r || x->fatal) return false;
  }
  return true;
}

static void run_fuzz(ctx_t *x) {
  enum { WMAX = 8 };
  ctx_t xs[FUZZ_COMMS];
  const int ncomms = fuzz_comms(x, xs);
  fuzz_fly_t fly[WMAX]; /* in flight, in the order they were issued */
  int nfly = 0;
  bool fatal = ncomms < FUZZ_COMMS;
  uint64_t mine = cr_hash4(fuzz_seed, 0xF0F0, (uint64_t)x->rank, 0); /* this rank's choices */
  for (long i = 0; i < opt.fuzz && !fatal; i++) {
    /* a run's victim strikes inside it (fuzz_repeat_run) */
    if (i >= opt.kill_at && x->rank == opt.kill_rank && !(i == opt.kill_at && fuzz_is_run((uint64_t)i)))
      fuzz_victim_strikes(x, i);
    if (opt.fuzz_split && fuzz_draw((uint64_t)i, 11) % 48 == 0) {
      fatal |= !fuzz_split(xs, (uint64_t)i);
      continue;
    }
    if (fuzz_is_run((uint64_t)i)) {
      int ci;
      char later[1024];
      fatal |= !fuzz_repeat_run(xs, (uint64_t)i, x->rank, &ci, later, sizeof(later));
      nfly = fuzz_blocked(xs, fly, nfly, &ci, 1, later, &fatal);
      continue;
    }
    /* one blocking call in 8, a group of 2 to 4 in 8 (each the same on every rank) */
    const uint64_t how = fuzz_draw((uint64_t)i, 7) % 8;
    if (how < 2) {
      int len = how == 0 ? 1 : 2 + (int)(fuzz_draw((uint64_t)i, 9) % 3);
      if (len > opt.fuzz - i) len = (int)(opt.fuzz - i);
      case_t g[4];
      int gci[4], posted = 0;
      if (how == 1) collie_group_start();
      for (int j = 0; j < len && !fatal; j++) {
        gci[j] = (int)(fuzz_draw((uint64_t)(i + j), 8) % FUZZ_COMMS);
        fuzz_case(&xs[gci[j]], &g[j], (uint64_t)(i + j), how ? FUZZ_GROUP : FUZZ_ALONE);
        collie_result_t r = case_post(&xs[gci[j]], &g[j], NULL);
        if (r) {
          api_failed(&xs[gci[j]], &g[j], how ? "a blocking collective in a group" : "a blocking collective", r);
          case_free(&g[j]);
          fatal = true;
        } else {
          posted++;
        }
      }
      if (how == 1) {
        collie_result_t r = collie_group_end();
        if (r && !fatal) api_failed(&xs[gci[0]], NULL, "collie_group_end", r);
        fatal |= r != COLLIE_SUCCESS;
      }
      char later[1024];
      describe(&xs[gci[posted ? posted - 1 : 0]], &g[posted ? posted - 1 : 0], later, sizeof(later));
      for (int j = 0; j < posted; j++) {
        if (!fatal) case_verify(&xs[gci[j]], &g[j]);
        case_free(&g[j]);
      }
      /* they completed, so everything issued before them on their communicators did too */
      nfly = fuzz_blocked(xs, fly, nfly, gci, posted, later, &fatal);
      i += len - 1;
      continue;
    }
    const int ci = (int)(fuzz_draw((uint64_t)i, 8) % FUZZ_COMMS);
    ctx_t *cx = &xs[ci];
    case_t c;
    fuzz_case(cx, &c, (uint64_t)i, FUZZ_NONBLOCKING);
    collie_result_t r;
    if (c.kind == K_P2P) {
      const int right = (cx->rank + 1) % cx->n, left = (cx->rank + cx->n - 1) % cx->n;
      r = collie_irecv(c.rp, c.count, c.dt, left, cx->comm, &c.req2);
      if (!r) r = collie_isend(c.sp, c.count, c.dt, right, cx->comm, &c.req);
    } else {
      r = case_post(cx, &c, &c.req);
    }
    if (r) {
      api_failed(cx, &c, "posting a nonblocking collective", r);
      fuzz_drop(&c); /* a ring's receive may be posted */
      fatal = true;
      break;
    }
    fly[nfly].c = c;
    fly[nfly++].ci = ci;
    /* this rank's own window and order: some in-flight case, of any communicator, until
     * the window allows (the others' progress depends on the library's, not on a wait) */
    mine = cr_hash4(mine, 2, 0, 0);
    const int window = 1 + (int)(mine % WMAX);
    while (nfly > 0 && !fatal && (nfly >= window || nfly == WMAX || cr_hash4(mine, (uint64_t)nfly, 3, 0) % 3 == 0)) {
      mine = cr_hash4(mine, 4, 0, 0);
      const int k = (int)(mine % (uint64_t)nfly);
      fuzz_finish(&xs[fly[k].ci], &fly[k].c, &mine);
      fatal |= xs[fly[k].ci].fatal;
      memmove(&fly[k], &fly[k + 1], sizeof(fly[0]) * (size_t)(nfly - k - 1));
      nfly--;
    }
  }
  for (int k = 0; k < nfly; k++) {
    if (!fatal) fuzz_finish(&xs[fly[k].ci], &fly[k].c, &mine);
    else fuzz_drop(&fly[k].c);
    fatal |= xs[fly[k].ci].fatal;
  }
  if (opt.kill_rank >= 0 && !fatal) { /* the last operations may not have needed the victim */
    collie_result_t r = collie_barrier(xs[0].comm);
    if (r) api_failed(&xs[0], NULL, "a barrier after the sequence", r);
    fatal |= r != COLLIE_SUCCESS;
  }
  for (int ci = 0; ci < ncomms; ci++) {
    if (ci) { /* the world's is released by the caller */
      xs[ci].fatal |= fatal;
      release_comm(&xs[ci]);
      free(xs[ci].vals);
    }
    fuzz_absorb(x, &xs[ci]);
  }
  x->fatal |= fatal;
}

/* --fuzz-threads: each thread runs its own sequence on its own copy of the world (API.md
 * lets threads use communicators of their own at once), with a seed of its own. */
typedef struct {
  ctx_t x;
  uint64_t seed;
} fuzz_thread_t;

static void *fuzz_thread_main(void *arg) {
  fuzz_thread_t *t = arg;
  fuzz_seed = t->seed;
  region_salt = t->seed + (uint64_t)t->x.rank; /* each thread its own draws */
  run_fuzz(&t->x);
  release_comm(&t->x);
  fuzz_collect_orphans();
  return NULL;
}

static void run_fuzz_threads(ctx_t *x) {
  const int nt = opt.fuzz_threads;
  fuzz_thread_t *ts = calloc((size_t)nt, sizeof(*ts));
  pthread_t *th = calloc((size_t)nt, sizeof(*th));
  if (!ts || !th) exit(2);
  int made = 0;
  for (; made < nt; made++) { /* one after the other: splits of one communicator are collectives on it */
    ts[made].x = *x;
    ts[made].x.vals = calloc((size_t)x->n, sizeof(int64_t));
    if (!ts[made].x.vals) exit(2);
    ts[made].seed = opt.seed + 0x9E3779B97F4A7C15ull * (uint64_t)(made + 1);
    collie_result_t r = collie_comm_split(x->comm, 0, x->rank, &ts[made].x.comm);
    if (r) {
      api_failed(x, NULL, "collie_comm_split", r);
      free(ts[made].x.vals);
      break;
    }
  }
  int started = 0;
  for (; started < made; started++)
    if (pthread_create(&th[started], NULL, fuzz_thread_main, &ts[started])) break;
  for (int t = 0; t < made; t++) {
    if (t < started) pthread_join(th[t], NULL);
    else release_comm(&ts[t].x);
    fuzz_absorb(x, &ts[t].x);
    x->fatal |= ts[t].x.fatal || t >= started;
    free(ts[t].x.vals);
  }
  if (started < made) say(x, "FAILED: could not start a thread for the fuzz");
  free(ts);
  free(th);
}

/* --fuzz-kill: every rank learns the victim's pid first (the error sentences name ranks
 * with their pid, and the split communicators number them otherwise). */
static void fuzz_victim_pid(ctx_t *x, int64_t *victim) {
  int64_t me = (int64_t)getpid(), *all = calloc((size_t)x->n, sizeof(int64_t));
  if (!all) exit(2);
  collie_result_t r = opt.kill_rank < x->n ? collie_allgather(&me, all, 1, COLLIE_INT64, x->comm) : COLLIE_SUCCESS;
  if (r) api_failed(x, NULL, "allgather of pids", r);
  else if (opt.kill_rank < x->n) *victim = all[opt.kill_rank];
  free(all);
}

/* A survivor passes when its sequence stopped with an error that names the victim's pid
 * (its death, or a timeout waiting for it when it was stopped), or that says another
 * survivor aborted a communicator (which survivors do once they have seen the death or timed
 * out: a rank still waiting on that communicator may hear of the abort first). The test
 * around it wants at least one survivor to have named the victim. */
static void fuzz_kill_verdict(ctx_t *x, int64_t victim) {
  const char *what = opt.stop ? "stop" : "death", *done = opt.stop ? "stopped" : "killed";
  char pid[32];
  snprintf(pid, sizeof(pid), "pid %lld", (long long)victim);
  if (!x->fatal) {
    say(x, "FAILED: every operation succeeded after rank %d was %s before operation %ld", opt.kill_rank, done,
        opt.kill_at);
  } else if (strstr(x->fail_msg, pid)) {
    say(x, "the %s of rank %d (%s) was reported", what, opt.kill_rank, pid);
    x->failed = 0;
    return;
  } else if (strstr(x->fail_msg, "aborted its communicator")) {
    say(x, "stopped by another survivor's abort after the %s of rank %d (%s)", what, opt.kill_rank, pid);
    x->failed = 0;
    return;
  } else {
    say(x, "FAILED: the error after rank %d (%s) was %s does not name it: %s", opt.kill_rank, pid, done, x->fail_msg);
  }
  x->failed++;
}

/* --fuzz-stop: the victim, resumed after the others gave up on it, must not hang nor go on
 * as if nothing happened: its next operation that needs them fails, saying that a peer
 * aborted the communicator, closed its connection or timed out (or, creating one, gave up). */
static void fuzz_resumed_verdict(ctx_t *x) {
  if (!fuzz_victim_stopped) {
    say(x, "FAILED: the sequence ended before operation %ld, where this rank was to stop", opt.kill_at);
  } else if (!x->fatal) {
    say(x, "FAILED: every operation succeeded after this rank was stopped and resumed");
  } else if (strstr(x->fail_msg, "aborted its communicator") || strstr(x->fail_msg, "closed its connection") ||
             strstr(x->fail_msg, "timed out") || strstr(x->fail_msg, "has given up creating the communicator")) {
    say(x, "resumed, the stopped rank was told: %s", x->fail_msg);
    x->failed = 0;
    return;
  } else {
    say(x, "FAILED: the error after this rank was stopped and resumed does not say why: %s", x->fail_msg);
  }
  x->failed++;
}

/* ---- mismatch mode ------------------------------------------------------------------- */

static int contains(const char *s, const char *w) { return s && strstr(s, w) != NULL; }

static void run_mismatch(ctx_t *x) {
  collie_comm_t *dtc = NULL, *healthy = NULL, *tiny = NULL, *lines = NULL, *vc = NULL, *vg = NULL;
  collie_result_t r;
  if ((r = collie_comm_split(x->comm, 0, x->rank, &dtc)) || (r = collie_comm_split(x->comm, 0, x->rank, &healthy)) ||
      (r = collie_comm_split(x->comm, 0, x->rank, &tiny)) || (r = collie_comm_split(x->comm, 0, x->rank, &lines)) ||
      (r = collie_comm_split(x->comm, 0, x->rank, &vc)) || (r = collie_comm_split(x->comm, 0, x->rank, &vg))) {
    api_failed(x, NULL, "collie_comm_split", r);
    return;
  }
  float *sb = calloc(1024, sizeof(float)), *rb = calloc(1024, sizeof(float));
  if (!sb || !rb) exit(2);
  int has_both = 0;
  char first_msg[1024] = "(none)";
  if (x->n < 2) {
    say(x, "FAILED: --mismatch needs at least 2 ranks");
    x->failed++;
  }

  /* 1. count mismatch on the world communicator */
  size_t cnt = x->rank == 0 ? 1000 : 1024;
  r = collie_allreduce(sb, rb, cnt, COLLIE_FLOAT32, COLLIE_SUM, x->comm);
  const char *msg = collie_get_last_error(x->comm);
  if (msg) snprintf(first_msg, sizeof(first_msg), "%s", msg);
  x->cases++;
  if (r != COLLIE_ERR_MISMATCH) {
    x->failed++;
    say(x, "MISMATCH mismatch: allreduce with count %zu returned %s, expected COLLIE_ERR_MISMATCH (last error: %s)", cnt,
        collie_get_error_string(r), msg ? msg : "(none)");
  } else if (!contains(msg, "allreduce")) {
    x->failed++;
    say(x, "MISMATCH mismatch: the error sentence does not name allreduce: %s", msg ? msg : "(none)");
  } else {
    has_both = contains(msg, "count=1000") && contains(msg, "count=1024");
    if (opt.verbose || x->rank == 0) say(x, "expected mismatch error: %s", msg);
  }
  /* the failed communicator fails later operations at once with the same error */
  r = collie_barrier(x->comm);
  x->cases++;
  if (r != COLLIE_ERR_MISMATCH) {
    x->failed++;
    say(x, "MISMATCH mismatch: a barrier on the failed communicator returned %s, expected COLLIE_ERR_MISMATCH",
        collie_get_error_string(r));
  }
  r = collie_comm_destroy(x->comm);
  x->comm = NULL;
  if (r) say(x, "note: destroying the failed communicator returned %s", collie_get_error_string(r));

  /* 2. datatype mismatch on a second communicator: rank 0 int32, the others float32 */
  r = collie_allreduce(sb, rb, 1024, x->rank == 0 ? COLLIE_INT32 : COLLIE_FLOAT32, COLLIE_SUM, dtc);
  msg = collie_get_last_error(dtc);
  x->cases++;
  if (x->n > 1 && (r != COLLIE_ERR_MISMATCH || !contains(msg, "allreduce"))) {
    x->failed++;
    say(x, "MISMATCH mismatch: allreduce with datatype %s returned %s, expected COLLIE_ERR_MISMATCH naming allreduce "
           "(last error: %s)", x->rank == 0 ? "int32" : "float32", collie_get_error_string(r), msg ? msg : "(none)");
  } else if (x->n > 1 && contains(msg, "int32") != contains(msg, "float32")) {
    x->failed++;
    say(x, "MISMATCH mismatch: the datatype mismatch sentence names only one side: %s", msg);
  }
  collie_comm_destroy(dtc);

  /* 2b. rank 0 tiny (2 elements: the shared-memory collectives' first inline line), the
   * others not inline (200 elements, 800 bytes: the staging buffer); 2c. rank 0 in one
   * inline line, the others in eight (100 elements, 400 bytes). Still mismatches, not
   * timeouts */
  for (int c = 0; c < 2; c++) {
    collie_comm_t *cc = c ? lines : tiny;
    cnt = x->rank == 0 ? 2 : c ? 100 : 200;
    r = collie_allreduce(sb, rb, cnt, COLLIE_FLOAT32, COLLIE_SUM, cc);
    msg = collie_get_last_error(cc);
    x->cases++;
    if (r != COLLIE_ERR_MISMATCH || !contains(msg, "allreduce")) {
      x->failed++;
      say(x, "MISMATCH mismatch: allreduce with count %zu returned %s, expected COLLIE_ERR_MISMATCH naming allreduce "
             "(last error: %s)", cnt, collie_get_error_string(r), msg ? msg : "(none)");
    }
    collie_comm_destroy(cc);
  }

  /* 2d. alltoallv whose counts arrays disagree: rank 0 sends and expects 12 elements per
   * rank, the others 10. The calls carry no counts, so the sentence must show the two
   * message sizes (it once read "alltoallv(count=0, float32)" on both sides) */
  size_t vcnt[64], vdis[64];
  for (int i = 0; i < x->n && i < 64; i++) {
    vcnt[i] = x->rank == 0 ? 12 : 10;
    vdis[i] = (size_t)i * 16;
  }
  r = x->n <= 64 ? collie_alltoallv(sb, vcnt, vdis, rb, vcnt, vdis, COLLIE_FLOAT32, vc) : COLLIE_ERR_MISMATCH;
  msg = collie_get_last_error(vc);
  x->cases++;
  if (x->n > 1 && (r != COLLIE_ERR_MISMATCH || !contains(msg, "alltoallv") || !contains(msg, "40 bytes") ||
                   !contains(msg, "48 bytes") || !contains(msg, "sendcounts"))) {
    x->failed++;
    say(x, "MISMATCH mismatch: alltoallv with disagreeing counts returned %s, expected COLLIE_ERR_MISMATCH showing "
           "40 and 48 bytes and naming sendcounts (last error: %s)", collie_get_error_string(r), msg ? msg : "(none)");
  }
  collie_comm_destroy(vc);

  /* 2d'. allgatherv whose recvcounts disagree with the same sum: rank 1 swaps the counts of
   * ranks 2 and 3. Every message may have the size its receiver expects (an algorithm that
   * sends several blocks at once), and rank 1 laid the blocks out by its own counts: wrong
   * data and success everywhere (4 ranks). Each rank must get COLLIE_ERR_MISMATCH naming
   * recvcounts, from the call or, where its own part was already done, from the next one. */
  if (x->n >= 4 && x->n <= 64) {
    size_t gcnt[64], gdis[64], at = 0;
    for (int i = 0; i < x->n; i++) gcnt[i] = 2 + (size_t)i;
    if (x->rank == 1) {
      gcnt[2] = 5;
      gcnt[3] = 4;
    }
    for (int i = 0; i < x->n; i++) gdis[i] = at, at += gcnt[i];
    r = collie_allgatherv(sb, gcnt[x->rank], rb, gcnt, gdis, COLLIE_FLOAT32, vg);
    if (r == COLLIE_SUCCESS) r = collie_barrier(vg);
    msg = collie_get_last_error(vg);
    x->cases++;
    if (r != COLLIE_ERR_MISMATCH || !contains(msg, "allgatherv") || !contains(msg, "recvcounts")) {
      x->failed++;
      say(x, "MISMATCH mismatch: allgatherv whose recvcounts differ on rank 1 (same sum) returned %s, expected "
             "COLLIE_ERR_MISMATCH naming allgatherv and recvcounts (last error: %s)",
          collie_get_error_string(r), msg ? msg : "(none)");
    }
  }
  collie_comm_destroy(vg);

  /* 2e. roots that disagree: rank 1 believes it is the root, the others name rank 0. A small
   * broadcast (its root waits for nobody: both roots once returned success, rank 1 with
   * its own data), a small reduce (whose trees never exchange a message that shows it:
   * it waited until the exec timeout), a broadcast of 4 MiB (each root waits for the
   * other to receive) and a small scatter (sent as messages: every rank once returned
   * success, rank 1 with its own block). Then a small reduce without any root: ranks 0 and
   * 1 name each other, the others rank 0 (in shared memory a reduce's other ranks return
   * before they have compared their call with the root's, and nobody is a root here to
   * compare them all); the same followed by collie_comm_destroy instead of a barrier.
   * Every rank must get COLLIE_ERR_MISMATCH, from the call or from the barrier or destroy
   * after it (a rank that received the right data may finish first), naming both roots,
   * well before the exec timeout (20 s in these tests). */
  for (int c = 0; c < 6 && x->n > 1 && x->n <= 64; c++) {
    collie_comm_t *rc = NULL;
    double t0 = now_s();
    /* Ranks 0 and 1 may fail the new communicator before a slower rank has finished
     * creating it: that rank's split then returns the mismatch (its part of the split on
     * `healthy` did complete, so the ranks stay in step). */
    r = collie_comm_split(healthy, 0, x->rank, &rc);
    if (r && r != COLLIE_ERR_MISMATCH) {
      api_failed(x, NULL, "collie_comm_split", r);
      break;
    }
    const int root = c >= 4 ? (x->rank == 0 ? 1 : 0) : x->rank == 1 ? 1 : 0;
    const size_t big = (size_t)1 << 20;
    float *bb = c == 2 ? calloc(big, sizeof(float)) : NULL;
    if (c == 2 && !bb) exit(2);
    const char *what = c == 0   ? "broadcast of 16 elements"
                       : c == 1 ? "reduce of 16 elements"
                       : c == 2 ? "broadcast of 4 MiB"
                       : c == 3 ? "scatter of 16 elements per rank"
                       : c == 4 ? "reduce of 16 elements without a root"
                                : "reduce of 16 elements without a root, then destroy";
    if (rc)
      r = c == 0   ? collie_broadcast(sb, sb, 16, COLLIE_FLOAT32, root, rc)
        : c == 1 || c >= 4 ? collie_reduce(sb, rb, 16, COLLIE_FLOAT32, COLLIE_SUM, root, rc)
        : c == 2 ? collie_broadcast(bb, bb, big, COLLIE_FLOAT32, root, rc)
                 : collie_scatter(sb, rb, 16, COLLIE_FLOAT32, root, rc);
    if (!r && c == 5) {
      r = collie_comm_destroy(rc);
      rc = NULL;
      msg = collie_get_last_error(NULL); /* this thread's: the communicator is gone */
    } else {
      if (!r) r = collie_barrier(rc);
      msg = collie_get_last_error(rc ? rc : healthy);
    }
    double dt = now_s() - t0;
    x->cases++;
    /* a root that finds another's claim names its own root and the other rank; a peer
     * asked about a message it never sent (having finished its part) names the root as
     * what to check */
    const bool roots_named = (contains(msg, "root=0") && contains(msg, "root=1")) ||
                             (contains(msg, "also called operation") && contains(msg, "as its root")) ||
                             (contains(msg, "without sending it") && contains(msg, "same root"));
    if (r != COLLIE_ERR_MISMATCH || !roots_named || dt > 10) {
      x->failed++;
      say(x, "MISMATCH mismatch: a %s with roots that disagree returned %s after %.1f s, expected "
             "COLLIE_ERR_MISMATCH naming root=0 and root=1 within 10 s (last error: %s)",
          what, collie_get_error_string(r), dt, msg ? msg : "(none)");
    } else if (opt.verbose || x->rank == 0) {
      say(x, "expected mismatch error after %.1f s (%s): %s", dt, what, msg);
    }
    free(bb);
    if (rc) collie_comm_destroy(rc);
  }

  /* 2f. an all-to-allv whose rank 0 sends rank 1 nothing while rank 1 expects 4 elements
   * from it (the calls themselves agree), then a barrier: rank 1 waits for a message rank
   * 0 will never send, rank 0 for rank 1 in the barrier. It waited until the exec timeout;
   * rank 0, asked about the message rank 1 waits for, must say it issued the operation
   * without it (bootstrap/stall.c). Every rank: COLLIE_ERR_MISMATCH naming sendcounts
   * within 10 s. */
  if (x->n > 1 && x->n <= 64) {
    collie_comm_t *ac = NULL;
    double t0 = now_s();
    r = collie_comm_split(healthy, 0, x->rank, &ac);
    if (r && r != COLLIE_ERR_MISMATCH) {
      api_failed(x, NULL, "collie_comm_split", r);
    } else {
      size_t sc[64], rc2[64], dis[64];
      for (int i = 0; i < x->n; i++) {
        sc[i] = rc2[i] = 4;
        dis[i] = (size_t)i * 4;
      }
      if (x->rank == 0) sc[1] = 0;
      if (ac) r = collie_alltoallv(sb, sc, dis, rb, rc2, dis, COLLIE_FLOAT32, ac);
      if (!r) r = collie_barrier(ac);
      double dt = now_s() - t0;
      msg = collie_get_last_error(ac ? ac : healthy);
      x->cases++;
      if (r != COLLIE_ERR_MISMATCH || !contains(msg, "sendcounts") || dt > 10) {
        x->failed++;
        say(x, "MISMATCH mismatch: an all-to-allv where rank 0 sends rank 1 nothing that rank 1 expects returned %s "
               "after %.1f s, expected COLLIE_ERR_MISMATCH naming sendcounts within 10 s (last error: %s)",
            collie_get_error_string(r), dt, msg ? msg : "(none)");
      } else if (opt.verbose || x->rank == 0) {
        say(x, "expected mismatch error after %.1f s (all-to-allv counts): %s", dt, msg);
      }
      if (ac) collie_comm_destroy(ac);
    }
  }

  /* 3. a communicator that took no part is still healthy; at least one rank saw both counts */
  int flags[2] = {has_both, has_both}, res[2] = {0, 0};
  r = collie_allreduce(flags, res, 2, COLLIE_INT32, COLLIE_MAX, healthy);
  x->cases++;
  if (r) {
    x->failed++;
    say(x, "MISMATCH mismatch: an allreduce on an untouched communicator failed: %s: %s", collie_get_error_string(r),
        collie_get_last_error(healthy));
  } else if (x->n > 1 && !res[0]) {
    x->failed++;
    say(x, "MISMATCH mismatch: no rank's error sentence contains both \"count=1000\" and \"count=1024\" (this rank's: %s)",
        first_msg);
  }
  collie_comm_destroy(healthy);
  free(sb);
  free(rb);
}

/* ---- driver -------------------------------------------------------------------------- */

static int run_rank(collie_comm_t *comm) {
  ctx_t x = {0};
  x.comm = comm;
  collie_comm_rank(comm, &x.rank);
  collie_comm_size(comm, &x.n);
  x.vals = calloc((size_t)x.n, sizeof(int64_t));
  region_salt = (uint64_t)x.rank;
  if (!x.vals) return 1;
  double t_all = now_s();
  if (opt.mismatch) {
    run_mismatch(&x);
  } else if (opt.fuzz) {
    int64_t victim_pid = 0;
    if (opt.kill_rank >= 0) fuzz_victim_pid(&x, &victim_pid);
    fuzz_seed = opt.seed;
    if (opt.fuzz_threads > 1) run_fuzz_threads(&x);
    else run_fuzz(&x);
    release_comm(&x);
    fuzz_collect_orphans();
    if (opt.kill_rank >= 0 && x.rank != opt.kill_rank) fuzz_kill_verdict(&x, victim_pid);
    else if (opt.stop && x.rank == opt.kill_rank) fuzz_resumed_verdict(&x);
  } else {
    for (int k = 0; k < K_NUM && !x.fatal; k++) {
      if (!(opt.kinds & (1u << k))) continue;
      double t0 = now_s();
      long before = x.cases;
      if (k <= K_GATHER) run_matrix(&x, k);
      else if (k == K_BARRIER) run_barrier(&x);
      else if (k == K_P2P) run_p2p(&x);
      else if (k == K_NONBLOCKING) run_nonblocking(&x);
      else run_determinism(&x);
      if (opt.verbose && x.rank == 0) say(&x, "%-16s %5ld cases %7.2f s", kind_names[k], x.cases - before, now_s() - t0);
    }
    release_comm(&x);
  }
  free(x.vals);
  if (x.failed) {
    say(&x, "FAILED: %ld of %ld cases failed (%.1f s)", x.failed, x.cases, now_s() - t_all);
    return 1;
  }
  if (opt.verbose) say(&x, "%.2f s", now_s() - t_all);
  if (signal_storm_on())
    printf("coll_check: rank %d: %ld cases OK under a signal storm (%lu signals so far)\n", x.rank, x.cases,
           signal_storm_count());
  else
    printf("coll_check: rank %d: %ld cases OK\n", x.rank, x.cases);
  fflush(stdout);
  return 0;
}

static void *thread_main(void *arg) { return (void *)(intptr_t)run_rank((collie_comm_t *)arg); }

static void usage(void) {
  fprintf(stderr,
          "usage: coll_check [--threads N] [--coll NAME[,NAME..]] [--dtypes quick|all] [--big] [--mismatch]\n"
          "                  [--counts C[,C..]] [--register [mixed]] [--init-in-group] [--seed S] [--signal-storm]\n"
          "                  [-v]\n"
          "                  [--fuzz K [--fuzz-bytes B] [--fuzz-threads T] [--fuzz-split] [--fuzz-repeat]\n"
          "                   [--fuzz-kill R:K | --fuzz-stop R:K]]\n"
          "  NAME: all");
  for (int k = 0; k < K_NUM; k++) fprintf(stderr, " %s", kind_names[k]);
  fprintf(stderr, "\n");
  exit(2);
}

static unsigned parse_kinds(const char *s) {
  unsigned m = 0;
  char *dup = strdup(s), *save = NULL;
  for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int found = 0;
    if (!strcmp(t, "all")) {
      m |= (1u << K_NUM) - 1;
      found = 1;
    }
    for (int k = 0; k < K_NUM; k++)
      if (!strcmp(t, kind_names[k])) {
        m |= 1u << k;
        found = 1;
      }
    if (!found) {
      fprintf(stderr, "coll_check: unknown collective '%s'\n", t);
      usage();
    }
  }
  free(dup);
  return m;
}

/* --counts: element counts, comma-separated, at most 64. */
static void parse_counts(const char *s) {
  opt.ncounts = 0;
  for (const char *p = s; *p;) {
    char *end;
    unsigned long long c = strtoull(p, &end, 0);
    if (end == p || (*end && *end != ',') || opt.ncounts == (int)(sizeof(opt.counts) / sizeof(opt.counts[0]))) {
      fprintf(stderr, "coll_check: --counts wants up to 64 counts separated by commas, not '%s'\n", s);
      usage();
    }
    opt.counts[opt.ncounts++] = (size_t)c;
    p = *end ? end + 1 : end;
  }
}

/* --fuzz-bytes: a size in bytes, with an optional K, M or G (powers of 1024). */
static size_t parse_bytes(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 0);
  const char *units = "KMG", *u = *end ? strchr(units, *end) : NULL;
  if (end == s || (*end && (!u || end[1]))) {
    fprintf(stderr, "coll_check: --fuzz-bytes wants a size such as 65536, 64K or 4M, not '%s'\n", s);
    usage();
  }
  for (const char *k = units; u && k <= u; k++) v *= 1024;
  return (size_t)v;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--threads") && i + 1 < argc) opt.threads = atoi(argv[++i]);
    else if (!strcmp(a, "--coll") && i + 1 < argc) opt.kinds = parse_kinds(argv[++i]);
    else if (!strcmp(a, "--dtypes") && i + 1 < argc) {
      const char *v = argv[++i];
      if (!strcmp(v, "quick")) opt.all_dtypes = 0;
      else if (!strcmp(v, "all")) opt.all_dtypes = 1;
      else usage();
    } else if (!strcmp(a, "--big")) opt.big = 1;
    else if (!strcmp(a, "--register")) {
      opt.reg = 1;
      if (i + 1 < argc && !strcmp(argv[i + 1], "mixed")) opt.reg = 2, i++;
    }
    else if (!strcmp(a, "--mismatch")) opt.mismatch = 1;
    else if (!strcmp(a, "--init-in-group")) opt.init_in_group = 1;
    else if (!strcmp(a, "--seed") && i + 1 < argc) opt.seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(a, "--counts") && i + 1 < argc) parse_counts(argv[++i]);
    else if (!strcmp(a, "--fuzz") && i + 1 < argc) opt.fuzz = atol(argv[++i]);
    else if (!strcmp(a, "--fuzz-bytes") && i + 1 < argc) opt.fuzz_bytes = parse_bytes(argv[++i]);
    else if (!strcmp(a, "--fuzz-threads") && i + 1 < argc) opt.fuzz_threads = atoi(argv[++i]);
    else if (!strcmp(a, "--fuzz-split")) opt.fuzz_split = 1;
    else if (!strcmp(a, "--fuzz-repeat")) opt.fuzz_repeat = 1;
    else if ((!strcmp(a, "--fuzz-kill") || !strcmp(a, "--fuzz-stop")) && i + 1 < argc) {
      opt.stop = !strcmp(a, "--fuzz-stop");
      if (sscanf(argv[++i], "%d:%ld", &opt.kill_rank, &opt.kill_at) != 2 || opt.kill_rank < 0 || opt.kill_at < 0) usage();
    }
    else if (!strcmp(a, "--signal-storm")) signal_storm_start();
    else if (!strcmp(a, "-v")) opt.verbose++;
    else if (!strcmp(a, "-vv")) opt.verbose += 2;
    else usage();
  }
  if (cr_selftest()) {
    fprintf(stderr, "coll_check: the reference encoders failed their self test\n");
    return 2;
  }
  if (opt.kill_rank >= 0 && (opt.threads > 0 || !opt.fuzz)) {
    fprintf(stderr, "coll_check: --fuzz-kill and --fuzz-stop need --fuzz, and ranks as processes\n");
    usage();
  }
  if (opt.fuzz_threads < 1 || opt.fuzz_threads > 16 || (opt.fuzz_threads > 1 && opt.threads > 0)) {
    fprintf(stderr, "coll_check: --fuzz-threads wants 1 to 16, and ranks as processes\n");
    usage();
  }
  if (opt.threads > 0) {
    int n = opt.threads;
    collie_comm_t **comms = calloc((size_t)n, sizeof(*comms));
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    if (!comms || !th) return 2;
    collie_result_t r = collie_comm_init_all(comms, n);
    if (r) {
      fprintf(stderr, "coll_check: collie_comm_init_all(%d): %s: %s\n", n, collie_get_error_string(r),
              collie_get_last_error(NULL));
      return 1;
    }
    for (int i = 0; i < n; i++)
      if (pthread_create(&th[i], NULL, thread_main, comms[i])) return 2;
    int rc = 0;
    for (int i = 0; i < n; i++) {
      void *ret;
      pthread_join(th[i], &ret);
      rc |= (int)(intptr_t)ret;
    }
    free(comms);
    free(th);
    return rc;
  }
  collie_comm_t *comm = NULL;
  if (opt.init_in_group) collie_group_start();
  collie_result_t r = collie_comm_init_env(&comm);
  if (opt.init_in_group) {
    collie_result_t g = collie_group_end();
    if (!r) r = g;
  }
  if (r) {
    fprintf(stderr, "coll_check: collie_comm_init_env: %s: %s\n", collie_get_error_string(r), collie_get_last_error(NULL));
    return 1;
  }
  return run_rank(comm);
}
