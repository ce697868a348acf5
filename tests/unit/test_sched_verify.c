/* Sweeps every registered (collective, algorithm) through the symbolic verifier
 * (sched_verify.h): rank counts 1-64, 127, 128, 1000; counts 0, 1, n+1, n-1 (up to 128
 * ranks) and 1000 (up to 64 ranks); irregular counts with zeros, gaps and reversed block
 * order for v-variants; roots 0 and n-1; in place and out of place (at 1000 ranks only
 * out of place, root n-1: a check of scale, within the time budget). Seeds vary the
 * interleaving, the element size (1, 4, 8 bytes) and the chunk size, so pipelining and
 * alignment are exercised: all three per case up to 16 ranks, one (rotating) beyond.
 * Cases whose buffers would exceed ELEM_BUDGET elements over all ranks are skipped.
 *
 *   test_sched_verify [--coll NAME] [--algo NAME] [--max-ranks N]
 *                     [--ranks N] [--seeds N] [--threads N] [--verbose]
 *
 * Builders may decline a case (COLLIE_ERR_INVALID_ARGUMENT); declined cases are counted
 * (and listed with --verbose), and an algorithm in `expected` below that declines every
 * case fails the sweep. The verifier's self-test runs first. */
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sched_verify.h"

/* Algorithms that must build schedules: declining every case is a failure for them
 * (the others may still be stubs): every registered algorithm. */
static const char *const expected[] = {
    "allreduce ring", "allreduce tree", "allreduce mesh", "allreduce rd", "allreduce hd", "allreduce hier",
    "allgather ring", "allgather rd", "allgather bruck", "allgather mesh", "allgatherv ring", "allgatherv rd",
    "allgatherv bruck", "allgatherv mesh", "reduce_scatter ring", "reduce_scatter hd", "reduce_scatter mesh",
    "reduce_scatterv ring", "reduce_scatterv hd", "reduce_scatterv mesh", "broadcast binomial", "broadcast chain",
    "broadcast scatter_allgather", "broadcast hier", "reduce binomial", "reduce chain", "reduce rs_gather",
    "alltoall pairwise", "alltoall bruck", "alltoall mesh", "alltoallv pairwise", "alltoallv mesh", "alltoallv bruck",
    "scatter binomial", "scatter linear", "gather binomial", "gather linear", "barrier dissemination", NULL};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#if SANITIZED
/* AddressSanitizer keeps 256 MB of freed blocks out of reuse by default, so each case's
 * buffers came from fresh pages and a third of the run went to page faults. Blocks freed
 * within the last 16 MB are still caught if touched again; the verifier's own checks do
 * not depend on it (--max-ranks 16: 12.7 s, 325,000 faults; with it 5.7 s, 72,000). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=16"; }
#endif

#define ELEM_BUDGET (24u << 20) /* send+recv elements over all ranks in one case */
#define MAX_SHOWN_FAILURES 5
#define NUM_PATTERNS 4

typedef struct {
  const char *coll, *algo;
  int max_ranks, only_ranks, seeds, verbose, threads;
} opts_t;

typedef struct {
  long cases, declined, failed, skipped;
  long dec_inplace, dec_npow2, dec_small, dec_root;
  char dec_examples[4][160];
  int ndec_examples;
} stats_t;

static bool is_rooted(collie_coll_t c) {
  return c == COLLIE_COLL_BROADCAST || c == COLLIE_COLL_REDUCE || c == COLLIE_COLL_SCATTER ||
         c == COLLIE_COLL_GATHER;
}

static bool is_v(collie_coll_t c) {
  return c == COLLIE_COLL_ALLGATHERV || c == COLLIE_COLL_REDUCE_SCATTERV || c == COLLIE_COLL_ALLTOALLV;
}

static bool is_expected(const collie_algo_t *a) {
  char name[96];
  snprintf(name, sizeof name, "%s %s", collie_coll_name(a->coll), a->name);
  for (int i = 0; expected[i]; i++)
    if (strcmp(expected[i], name) == 0) return true;
  return false;
}

/* v-variant layouts: counts with zeros; displacements with gaps, sometimes in reverse. */
typedef struct {
  size_t *counts, *displs;        /* allgatherv, reduce_scatterv */
  size_t *a2a, *sdispls, *rdispls; /* alltoallv (n*n each)        */
  size_t maxcount;
} vlayout_t;

static size_t vcount(int p, int r, int n) {
  switch (p) {
    case 0: return 0;
    case 1: return (size_t)(r * 7 + 3) % 5;
    case 2: return (size_t)(r * 13 + 5) % 41;
    default: return r == n / 2 ? 17 : 0;
  }
}

static size_t a2a_count(int p, int s, int d, bool sym) {
  int u = sym ? s + d : s * 3 + d, v = sym ? (s > d ? s - d : d - s) : d;
  switch (p) {
    case 0: return 0;
    case 1: return (size_t)(u * 7 + 3) % 5;
    case 2: return (size_t)(u * 13 + v * 5 + 5) % 23;
    default: return v == 1 ? 9 : 0;
  }
}

/* Places n blocks: forward or reverse order, contiguous or with gaps of 1-3 elements. */
static void place(const size_t *counts, size_t stride, size_t *displs, int n, bool reverse, bool gaps) {
  size_t at = gaps ? 2 : 0;
  for (int k = 0; k < n; k++) {
    int q = reverse ? n - 1 - k : k;
    displs[(size_t)q * stride] = at;
    at += counts[(size_t)q * stride] + (gaps ? (size_t)(q % 3) + 1 : 0);
  }
}

static bool make_vlayout(vlayout_t *v, collie_coll_t coll, int p, int n, bool in_place) {
  memset(v, 0, sizeof *v);
  if (coll == COLLIE_COLL_ALLTOALLV) {
    size_t nn = (size_t)n * n;
    v->a2a = malloc(nn * sizeof(size_t));
    v->sdispls = malloc(nn * sizeof(size_t));
    v->rdispls = malloc(nn * sizeof(size_t));
    if (!v->a2a || !v->sdispls || !v->rdispls) return false;
    for (int s = 0; s < n; s++)
      for (int d = 0; d < n; d++) {
        size_t c = a2a_count(p, s, d, in_place);
        v->a2a[(size_t)s * n + d] = c;
        if (c > v->maxcount) v->maxcount = c;
      }
    for (int r = 0; r < n; r++) /* send layout of r: its row, blocks in reverse with gaps */
      place(&v->a2a[(size_t)r * n], 1, &v->sdispls[(size_t)r * n], n, true, true);
    /* receive layout of rank r: block from q has a2a[q][r] elements */
    size_t *col = malloc((size_t)n * sizeof(size_t));
    if (!col) return false;
    for (int r = 0; r < n; r++) {
      for (int q = 0; q < n; q++) col[q] = v->a2a[(size_t)q * n + r];
      place(col, 1, &v->rdispls[(size_t)r * n], n, false, p != 2);
    }
    free(col);
    return true;
  }
  v->counts = malloc((size_t)n * sizeof(size_t));
  v->displs = malloc((size_t)n * sizeof(size_t));
  if (!v->counts || !v->displs) return false;
  for (int r = 0; r < n; r++) {
    v->counts[r] = vcount(p, r, n);
    if (v->counts[r] > v->maxcount) v->maxcount = v->counts[r];
  }
  place(v->counts, 1, v->displs, n, p == 3, p != 2);
  return true;
}

static void free_vlayout(vlayout_t *v) {
  free(v->counts);
  free(v->displs);
  free(v->a2a);
  free(v->sdispls);
  free(v->rdispls);
}

/* Seed s also picks the element size and a chunk size: the default (64 KiB); about a
 * third of a block with a hint that is not a multiple of the element; or a seventh of a
 * block, less than one element when blocks are that small. "Block" is the unit the
 * algorithms pipeline: a 1/n share of the vector for allreduce, count elsewhere. */
static void seed_params(int s, collie_coll_t coll, int n, size_t count, size_t *elem, size_t *chunk) {
  static const size_t elems[3] = {1, 4, 8};
  size_t block = coll == COLLIE_COLL_ALLREDUCE ? count / (size_t)n : count;
  *elem = elems[s % 3];
  if (s % 3 == 0)
    *chunk = 0;
  else if (s % 3 == 1)
    *chunk = (block / 3 ? block / 3 : 1) * *elem + 1;
  else
    *chunk = block / 7 ? block / 7 * *elem : *elem - 1;
}

static void note_decline(stats_t *st, const sv_case_t *c, const char *pattern) {
  int n = c->nranks;
  st->declined++;
  st->dec_inplace += c->in_place;
  st->dec_npow2 += (n & (n - 1)) != 0;
  st->dec_small += c->count < (size_t)n;
  st->dec_root += c->root != 0;
  if (st->ndec_examples < 4)
    snprintf(st->dec_examples[st->ndec_examples++], sizeof st->dec_examples[0],
             "nranks=%d count=%zu%s root=%d in_place=%d", n, c->count, pattern, c->root, (int)c->in_place);
}

/* One registered algorithm's sweep: its output is kept until it is printed in registry
 * order, so worker threads can sweep algorithms concurrently. */
typedef struct {
  const collie_algo_t *algo;
  stats_t st;
  char *text; /* failures and declined cases, as printed */
  size_t text_len;
  FILE *out;
  int shown;
  double cpu_s;
} job_t;

static void show_failure(job_t *j, const sv_case_t *c, const sv_report_t *rep) {
  if (j->shown++ >= MAX_SHOWN_FAILURES) return;
  char d[256];
  sv_describe(c, d, sizeof d);
  fprintf(j->out, "FAIL %s\n", d);
  for (int k = 0; k < rep->nfail && k < SV_MAX_FAIL; k++)
    fprintf(j->out, "  rank %d step %ld: %s\n", rep->fail[k].rank, rep->fail[k].step, rep->fail[k].what);
  if (rep->nfail > SV_MAX_FAIL) fprintf(j->out, "  ... %d failures in this case\n", rep->nfail);
}

/* Hosts for the hierarchical algorithms, varied by seed: h >= 2 groups of L >= 2 ranks (L
 * the smallest divisor of n, or the largest, h = n / L), in blocks of consecutive ranks or
 * round robin, numbered by their lowest rank as comm_init.c does. 0 when n has no such
 * divisor (the hierarchical algorithms then decline). */
static int seed_groups(int s, int n, int *g) {
  int L = 0;
  for (int d = 2; d <= n / 2; d++)
    if (n % d == 0) {
      L = d;
      if (s % 4 < 2) break;
    }
  if (!L) return 0;
  const int h = n / L;
  for (int r = 0; r < n; r++) g[r] = s % 2 ? r % h : r / L;
  return h;
}

/* Runs one case with seeds first .. first+nseeds-1; stops at the first decline or failure. */
static void run_case(job_t *j, sv_case_t *c, int first, int nseeds, const opts_t *o, const char *pattern) {
  stats_t *st = &j->st;
  int groups[1024]; /* c->group_of while the case runs */
  if (sv_case_elems(c) > ELEM_BUDGET) {
    st->skipped++;
    return;
  }
  st->cases++;
  size_t count = c->count;
  for (int s = first; s < first + nseeds; s++) {
    sv_report_t rep;
    c->seed = (uint64_t)s;
    seed_params(s, c->coll, c->nranks, count, &c->elem_size, &c->chunk_bytes);
    c->ngroups = c->nranks <= 1024 ? seed_groups(s, c->nranks, groups) : 0;
    c->group_of = c->ngroups ? groups : NULL;
    sv_status_t r = sv_run(c, &rep);
    if (r == SV_DECLINED) {
      note_decline(st, c, pattern);
      if (o->verbose) {
        char d[256];
        sv_describe(c, d, sizeof d);
        fprintf(j->out, "  declined: %s%s\n", d, pattern);
      }
      return;
    }
    if (r == SV_FAIL) {
      st->failed++;
      show_failure(j, c, &rep);
      return;
    }
  }
}

/* Up to 16 ranks every case runs all three seeds; beyond, one seed per case, rotating so
 * every element size and chunk variant still meets every rank count. */
static void run_algo(job_t *j, const int *ranks, int nranks_list, const opts_t *o) {
  const collie_algo_t *a = j->algo;
  for (int ri = 0; ri < nranks_list; ri++) {
    int n = ranks[ri];
    /* Beyond 128 ranks (1000) the sweep checks scale only: out of place, root n-1, no
     * v-pattern 2 (its buffers are the largest); smaller counts cover the rest. */
    bool huge = n > 128;
    int roots[2] = {huge ? n - 1 : 0, n - 1}, nroots = is_rooted(a->coll) && n > 1 && !huge ? 2 : 1;
    /* 1000 elements only up to 64 ranks; n - 1 too only up to 128 */
    size_t counts[5] = {0, 1, (size_t)n + 1, (size_t)n - 1, 1000};
    int ncounts = n <= 64 ? 5 : n <= 128 ? 4 : 3, nvariants = is_v(a->coll) ? NUM_PATTERNS : ncounts;
    if (a->coll == COLLIE_COLL_BARRIER) nvariants = 1;
    for (int v = 0; v < nvariants; v++) {
      size_t count = is_v(a->coll) || a->coll == COLLIE_COLL_BARRIER ? 0 : counts[v];
      bool dup = false;
      for (int w = 0; w < v && !is_v(a->coll); w++) dup |= counts[w] == count;
      if (dup || (huge && is_v(a->coll) && v == 2)) continue;
      for (int ip = 0; ip < (huge ? 1 : 2); ip++) {
        vlayout_t vl;
        char pattern[32] = "";
        if (is_v(a->coll)) {
          if (!make_vlayout(&vl, a->coll, v, n, ip)) {
            fprintf(stderr, "out of memory\n");
            exit(2);
          }
          snprintf(pattern, sizeof pattern, " (v-pattern %d)", v);
        }
        for (int k = 0; k < nroots; k++) {
          sv_case_t c;
          memset(&c, 0, sizeof c);
          c.coll = a->coll;
          c.algo_name = a->name;
          c.build = a->build;
          c.nranks = n;
          c.root = roots[k];
          c.count = is_v(a->coll) ? vl.maxcount : count;
          c.in_place = ip;
          if (is_v(a->coll)) {
            c.counts = vl.counts;
            c.displs = vl.displs;
            c.a2a_counts = vl.a2a;
            c.a2a_sdispls = vl.sdispls;
            c.a2a_rdispls = vl.rdispls;
          }
          if (o->seeds)
            run_case(j, &c, 0, o->seeds, o, pattern);
          else if (n <= 16)
            run_case(j, &c, 0, 3, o, pattern);
          else
            run_case(j, &c, (n + v + ip + k) % 3, 1, o, pattern);
        }
        if (is_v(a->coll)) free_vlayout(&vl);
      }
    }
  }
}

typedef struct {
  job_t *jobs;
  int njobs;
  atomic_int next;
  const int *ranks;
  int nranks;
  const opts_t *o;
} pool_t;

static void *worker(void *arg) {
  pool_t *p = arg;
  for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->njobs;) {
    job_t *j = &p->jobs[i];
    struct timespec a0, a1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a0);
    run_algo(j, p->ranks, p->nranks, p->o);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a1);
    j->cpu_s = (double)(a1.tv_sec - a0.tv_sec) + (double)(a1.tv_nsec - a0.tv_nsec) / 1e9;
    fflush(j->out);
  }
  return NULL;
}

static void ranks_text(const int *ranks, int n, char *out, size_t len) {
  size_t p = 0;
  for (int i = 0; i < n && p + 16 < len;) {
    int j = i;
    while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) j++;
    if (j - i >= 2)
      p += (size_t)snprintf(out + p, len - p, "%s%d-%d", i ? "," : "", ranks[i], ranks[j]);
    else
      for (int k = i; k <= j; k++) p += (size_t)snprintf(out + p, len - p, "%s%d", k ? "," : "", ranks[k]);
    i = j + 1;
  }
}

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--coll NAME] [--algo NAME] [--max-ranks N] [--ranks N] [--seeds N] [--threads N] "
          "[--verbose]\n",
          argv0);
  exit(2);
}

int main(int argc, char **argv) {
  /* Each case allocates and frees its buffers (up to ELEM_BUDGET elements). By default
   * glibc hands freed memory back to the kernel (brk down, munmap), so the next case
   * faults every page in again: --max-ranks 32 took 13.4 s (8.0 user, 5.4 system, 722,000
   * page faults). Keeping the memory, which costs no more than the largest case: 2.6 s,
   * 6,600 faults. (A sanitizer's allocator ignores these.) */
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  opts_t o;
  memset(&o, 0, sizeof o);
  o.max_ranks = 1000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (!strcmp(a, "--coll") && more)
      o.coll = argv[++i];
    else if (!strcmp(a, "--algo") && more)
      o.algo = argv[++i];
    else if (!strcmp(a, "--max-ranks") && more)
      o.max_ranks = atoi(argv[++i]);
    else if (!strcmp(a, "--ranks") && more)
      o.only_ranks = atoi(argv[++i]);
    else if (!strcmp(a, "--seeds") && more)
      o.seeds = atoi(argv[++i]);
    else if (!strcmp(a, "--threads") && more)
      o.threads = atoi(argv[++i]);
    else if (!strcmp(a, "--verbose") || !strcmp(a, "-v"))
      o.verbose = 1;
    else
      usage(argv[0]);
  }
  int ranks[80], nr = 0;
#if SANITIZED /* about 8x slower: a sparser sweep that fits the test's timeout */
  static const int big[] = {48, 63, 64, 127, 128};
  for (int n = 1; n <= 32; n++) ranks[nr++] = n;
  printf("sanitizer build: rank counts 1-32,48,63,64,127,128 only\n");
#else
  static const int big[] = {127, 128, 1000};
  for (int n = 1; n <= 64; n++) ranks[nr++] = n;
#endif
  for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) ranks[nr++] = big[k];
  int kept = 0;
  for (int k = 0; k < nr; k++)
    if (ranks[k] <= o.max_ranks && (!o.only_ranks || ranks[k] == o.only_ranks)) ranks[kept++] = ranks[k];
  nr = kept;
  if (!nr) {
    fprintf(stderr, "no rank counts selected\n");
    return 2;
  }
  char rtext[128];
  ranks_text(ranks, nr, rtext, sizeof rtext);

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int failed = sv_selftest();
  pool_t pool = {NULL, 0, 0, ranks, nr, &o};
  pool.jobs = calloc(200, sizeof *pool.jobs);
  if (!pool.jobs) return 2;
  for (const collie_algo_t *a = collie_algos; a->name && pool.njobs < 200; a++) {
    if (!a->build) continue; /* shared-memory collectives: tests/coll runs them */
    if (o.coll && strcmp(o.coll, collie_coll_name(a->coll))) continue;
    if (o.algo && strcmp(o.algo, a->name)) continue;
    job_t *j = &pool.jobs[pool.njobs++];
    j->algo = a;
    j->out = open_memstream(&j->text, &j->text_len);
    if (!j->out) return 2;
  }
  if (!pool.njobs) {
    fprintf(stderr, "no registered algorithm matches\n");
    return 2;
  }
  /* Sweeps are independent: one worker per core (at most 4). */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = o.threads ? o.threads : cores < 1 ? 1 : cores > 4 ? 4 : (int)cores;
  if (nthreads > pool.njobs) nthreads = pool.njobs;
  pthread_t th[8];
  int started = 0;
  for (int t = 1; t < nthreads && t < 8; t++)
    if (pthread_create(&th[started], NULL, worker, &pool) == 0) started++;
  worker(&pool);
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);

  int shown = 0;
  for (int i = 0; i < pool.njobs; i++) {
    job_t *j = &pool.jobs[i];
    const collie_algo_t *a = j->algo;
    const stats_t *st = &j->st;
    fclose(j->out);
    const char *cn = collie_coll_name(a->coll);
    bool all_declined = st->cases > 0 && st->declined == st->cases;
    if (st->failed) {
      failed = 1;
      printf("%s %s: ranks %s FAILED (%ld of %ld cases, %ld declined)\n", cn, a->name, rtext, st->failed,
             st->cases, st->declined);
    } else if (all_declined && is_expected(a)) {
      failed = 1;
      printf("%s %s: ranks %s FAILED: declined every case (%ld) but is expected to be implemented\n", cn, a->name,
             rtext, st->cases);
    } else if (all_declined) {
      printf("%s %s: ranks %s not implemented (declined all %ld cases)\n", cn, a->name, rtext, st->cases);
    } else {
      printf("%s %s: ranks %s OK (%ld cases, %ld declined)\n", cn, a->name, rtext, st->cases, st->declined);
    }
    if (o.verbose) printf("  %.2f s cpu, %ld cases skipped (too large to model)\n", j->cpu_s, st->skipped);
    if (st->declined && !all_declined) {
      printf("  declined: %ld in place, %ld non-power-of-two ranks, %ld count < nranks, %ld root != 0; e.g.",
             st->dec_inplace, st->dec_npow2, st->dec_small, st->dec_root);
      for (int k = 0; k < st->ndec_examples; k++) printf("%s %s", k ? ";" : "", st->dec_examples[k]);
      printf("\n");
    }
    /* Details: every declined case with --verbose; the first few failures overall. */
    if (j->text_len && (o.verbose || (st->failed && shown < MAX_SHOWN_FAILURES))) {
      fputs(j->text, stdout);
      shown += st->failed;
    }
    free(j->text);
  }
  free(pool.jobs);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("sched_verify: %s in %.1f s (%d threads)\n", failed ? "FAILED" : "all OK",
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, nthreads);
  return failed;
}
