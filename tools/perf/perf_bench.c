/* One table row: for out-of-place and then in-place, warm up, time -n iterations, then
 * check the result -c times with fresh inputs. The checks run outside the timed loop so
 * that generating and verifying data never counts as communication time. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

collie_result_t perf_reqs_add(perf_reqs_t *q, collie_request_t *req) {
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 8;
    collie_request_t **r = realloc(q->r, sizeof *r * (size_t)cap);
    if (!r) {
      collie_wait(req); /* never leak a posted request */
      return COLLIE_ERR_SYSTEM;
    }
    q->r = r;
    q->cap = cap;
  }
  q->r[q->n++] = req;
  return COLLIE_SUCCESS;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t max3(size_t a, size_t b, size_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

/* Page-aligned (malloc) or shared (collie_mem_alloc, -R 1), and touched once so that
 * first-touch page faults are not timed. */
static void *alloc_touched(size_t bytes, perf_ctx_t *c, int registered) {
  void *p = NULL;
  if (registered) {
    collie_result_t r = collie_mem_alloc(&p, bytes ? bytes : 64);
    if (r) perf_die(c->comm, c->rank, "collie_mem_alloc", r);
  } else if (posix_memalign(&p, 4096, bytes ? bytes : 64)) {
    perf_die(c->comm, c->rank, "allocating buffers", COLLIE_ERR_SYSTEM);
  }
  memset(p, 0, bytes);
  return p;
}

static void free_buf(void *p, int registered) {
  if (registered) collie_mem_free(p);
  else free(p);
}

static void ensure_bufs(perf_bufs_t *b, size_t bytes, size_t expect_bytes, perf_ctx_t *c, int registered) {
  if (bytes > b->cap || !b->send) {
    free_buf(b->send, b->registered);
    free_buf(b->recv, b->registered);
    b->registered = registered;
    b->send = alloc_touched(bytes, c, registered);
    b->recv = alloc_touched(bytes, c, registered);
    b->cap = bytes;
  }
  if (expect_bytes > b->expect_cap || !b->expect) {
    free(b->expect);
    b->expect = alloc_touched(expect_bytes, c, 0);
    b->expect_cap = expect_bytes;
  }
}

void perf_bufs_free(perf_bufs_t *b) {
  free_buf(b->send, b->registered);
  free_buf(b->recv, b->registered);
  free(b->expect);
  memset(b, 0, sizeof *b);
}

/* Starts agg operations and waits for them all: with blocking calls inside one group
 * (so they are issued together, as nccl-tests does), or as i-variants then collie_wait. */
static void launch(const perf_coll_t *coll, const perf_opts_t *o, perf_ctx_t *c, const void *send, void *recv,
                   int agg, perf_reqs_t *q) {
  collie_result_t res;
  if (!o->nonblocking) {
    if (agg > 1) collie_group_start();
    for (int a = 0; a < agg; a++)
      if ((res = coll->start(c, send, recv, NULL))) perf_die(c->comm, c->rank, coll->name, res);
    if (agg > 1 && (res = collie_group_end())) perf_die(c->comm, c->rank, coll->name, res);
    return;
  }
  q->n = 0;
  for (int a = 0; a < agg; a++)
    if ((res = coll->start(c, send, recv, q))) perf_die(c->comm, c->rank, coll->name, res);
  for (int i = 0; i < q->n; i++)
    if ((res = collie_wait(q->r[i]))) perf_die(c->comm, c->rank, "collie_wait", res);
}

/* Microseconds per operation, combined over ranks as -a asks. */
static double timed(const perf_coll_t *coll, const perf_opts_t *o, perf_ctx_t *c, const void *send, void *recv,
                    perf_reqs_t *q) {
  for (int i = 0; i < o->warmup; i++) launch(coll, o, c, send, recv, o->agg, q);
  /* Everyone starts the clock together. Two barriers: a rank that waited long enough in
   * the first to fall asleep is woken by it, but may still be getting back onto its CPU
   * when the others leave it (hundreds of us in a VM); the second ends only once it is
   * back. With one, 2 ranks, reduce 64 B, a leaf late by one wake-up made 1 run in 3 read
   * 8 to 40 us per operation instead of 0.3. */
  collie_result_t res = collie_barrier(c->comm);
  if (!res) res = collie_barrier(c->comm);
  if (res) perf_die(c->comm, c->rank, "collie_barrier", res);
  double t0 = now_s();
  for (int i = 0; i < o->iters; i++) launch(coll, o, c, send, recv, o->agg, q);
  double t = (now_s() - t0) * 1e6 / ((double)o->iters * o->agg);
  if (o->average == PERF_AVG_RANK0) return t; /* only rank 0 prints */
  collie_redop_t op = o->average == PERF_AVG_MIN ? COLLIE_MIN : o->average == PERF_AVG_MAX ? COLLIE_MAX : COLLIE_SUM;
  if ((res = collie_allreduce(&t, &t, 1, COLLIE_FLOAT64, op, c->comm)))
    perf_die(c->comm, c->rank, "collie_allreduce of the timings", res);
  return o->average == PERF_AVG_MEAN ? t / c->nranks : t;
}

/* Test hook (COLLIE_PERF_PLANT_ERROR=1): rank 0 damages one element of its result, so a
 * test can see that a wrong result is counted and fails the run. */
static int plant_error(void) {
  const char *v = getenv("COLLIE_PERF_PLANT_ERROR");
  return v && !strcmp(v, "1");
}

/* Wrong elements over all ranks and check iterations; -1 when checks are off. */
static long long checked(const perf_coll_t *coll, const perf_opts_t *o, perf_ctx_t *c, perf_bufs_t *b,
                         size_t recv_bytes, const void *send, void *recv, int in_place, uint64_t row_seed,
                         perf_reqs_t *q) {
  if (!o->check_iters) return -1;
  long long total = 0;
  for (int it = 0; it < o->check_iters; it++) {
    c->seed = perf_mix(row_seed ^ perf_mix(((uint64_t)it << 1) | (uint64_t)in_place));
    /* Poison first, so stale results cannot pass; then the input (in place, the input
     * lives inside the receive buffer). */
    memset(b->recv, 0xa5, recv_bytes);
    perf_gen(c, c->rank, 0, c->send_elems, (void *)send);
    launch(coll, o, c, send, recv, 1, q);
    if (c->rank == 0 && c->check_elems && plant_error()) *(unsigned char *)recv ^= 0xff;
    if (c->check_elems) coll->expect(c, b->expect); /* ranks without a result have nothing to check */
    int64_t wrong = (int64_t)perf_count_wrong(recv, b->expect, c->check_elems, c->esz);
    collie_result_t res = collie_allreduce(&wrong, &wrong, 1, COLLIE_INT64, COLLIE_SUM, c->comm);
    if (res) perf_die(c->comm, c->rank, "collie_allreduce of the error counts", res);
    total += wrong;
  }
  return total;
}

void perf_bench_row(const perf_coll_t *coll, const perf_opts_t *o, perf_ctx_t *c, perf_bufs_t *b, perf_row_t *row) {
  /* In place, send and recv both live in recvbuf at their offsets. */
  size_t elems = max3(c->send_elems, c->send_ip_off + c->send_elems, c->recv_ip_off + c->recv_elems);
  ensure_bufs(b, elems * c->esz, c->check_elems * c->esz, c, o->registered);
  uint64_t row_seed = perf_mix(((uint64_t)c->size_bytes << 16) ^ ((uint64_t)c->dt << 8) ^ (uint64_t)(c->op + 1) ^
                               ((uint64_t)(c->root + 1) << 40));
  perf_reqs_t q = {0};
  for (int ip = 0; ip < 2; ip++) {
    void *send = ip ? perf_at(c, b->recv, c->send_ip_off) : b->send;
    void *recv = ip ? perf_at(c, b->recv, c->recv_ip_off) : b->recv;
    /* Timed runs get valid numbers too (no NaN or denormal slow paths from garbage). */
    c->seed = 0x5eed;
    perf_gen(c, c->rank, 0, c->send_elems, send);
    double t = timed(coll, o, c, send, recv, &q);
    perf_meas_t *m = &row->m[ip];
    m->time_us = t;
    m->algbw = t > 0 ? c->bw_bytes / 1e3 / t : 0; /* bytes/us/1e3 = GB/s */
    m->busbw = m->algbw * coll->bus_factor(c->nranks);
    m->wrong = checked(coll, o, c, b, elems * c->esz, send, recv, ip, row_seed, &q);
  }
  free(q.r);
  row->size = c->size_bytes;
  row->count = c->count;
  row->dt = c->dt;
  row->op = c->op;
  row->root = c->root;
}

double perf_factor_one(int nranks) {
  (void)nranks;
  return 1.0;
}
double perf_factor_gather(int nranks) { return (double)(nranks - 1) / nranks; }
double perf_factor_allreduce(int nranks) { return 2.0 * (nranks - 1) / nranks; }
