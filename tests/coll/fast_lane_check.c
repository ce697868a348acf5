/* The fast lane of the blocking small all-reduce, reduce, all-gather, reduce-scatter,
 * all-to-all, broadcast and the barrier (src/coll/fast_lane.c) among what can meet it. A
 * repeated call of one inline round, or a repeated barrier, skips the generic path;
 * whatever the lane cannot finish at once (a late peer, a call that differs, something
 * else pending or deferred) must become the generic path's operation without a trace in
 * the results.
 *
 *   fast_lane_check run ITERATIONS SEED
 *       one seeded random sequence on every rank: runs of repeated all-reduces,
 *       all-gathers, reduce-scatters, all-to-alls, broadcasts or reduces (1 to 5, 6 to 60
 *       or 61 to 600 elements a rank of int32, int64, float32 or float64: rounds of one
 *       line, of up to 8, of up to 65 in a wide slot, or staged; sum, max, min or prod; in
 *       place or not), broken by late ranks (one sleeps 1 to 3 ms before its call), a
 *       nonblocking all-reduce pending under a blocking one, small broadcasts and
 *       reduces (after which the lane must wait for what they leave: a root's readers, a
 *       reduce's deferred comparison), runs of barriers, and a size change; every result
 *       is checked
 *   fast_lane_check mismatch op|count|dtype|barrier|barrier-count|gather-count|gather-alltoall|
 *                   broadcast-root|reduce-root|reduce-noroot
 *       100 matching all-reduces, then the last rank changes the op, the count or the
 *       datatype of the 101st, or calls a barrier instead: every rank must fail with
 *       COLLIE_ERR_MISMATCH within 5 s, naming that call; `barrier-count`: 100 barriers,
 *       then the last rank calls an all-reduce instead; `gather-*`: 100 all-gathers of one
 *       element, then the last rank gathers 3, or calls an all-to-all of one;
 *       `broadcast-root`: 100 broadcasts from rank 0 and a barrier, then the last rank
 *       names itself the root (a barrier follows, where a receiver that got rank 0's data
 *       meets the failure); `reduce-root`: the same with reduces, whose other ranks leave
 *       once they have staged; `reduce-noroot`: 100 reduces from rank 0 and a barrier,
 *       then rank 0 names rank 1 the root and the others rank 0, so that nobody is: only
 *       their deferred comparisons with the root they name can find it
 *   fast_lane_check late
 *       (COLLIE_EXEC_TIMEOUT=2) 100 all-reduces, then the last rank sleeps 3 s before the
 *       101st: every other rank must fail with COLLIE_ERR_TIMEOUT within 3 s, naming it
 *   (launched by collie-run) */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collie.h"

/* The most elements a rank's call has (8 bytes: 4800, beyond a wide slot's 4136), and
 * the most ranks the tests run. */
enum { MAX_COUNT = 600, MAX_RANKS = 8 };

static uint64_t next(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Small integers, exact in every datatype used and in their products over 8 ranks. */
static int64_t value(uint64_t it, int rank, int j) { return (int64_t)((it * 7 + (uint64_t)rank * 3 + (uint64_t)j) % 5) + 1; }

static int64_t expect(uint64_t it, int n, int j, collie_redop_t op) {
  int64_t acc = value(it, 0, j);
  for (int r = 1; r < n; r++) {
    const int64_t v = value(it, r, j);
    acc = op == COLLIE_SUM ? acc + v : op == COLLIE_PROD ? acc * v : op == COLLIE_MAX ? (v > acc ? v : acc)
                                                                                      : (v < acc ? v : acc);
  }
  return acc;
}

static const collie_datatype_t types[] = {COLLIE_INT32, COLLIE_INT64, COLLIE_FLOAT32, COLLIE_FLOAT64};
static const collie_redop_t ops[] = {COLLIE_SUM, COLLIE_MAX, COLLIE_MIN, COLLIE_PROD};

static void put(void *buf, collie_datatype_t dt, int j, int64_t v) {
  switch (dt) {
    case COLLIE_INT32: ((int32_t *)buf)[j] = (int32_t)v; break;
    case COLLIE_INT64: ((int64_t *)buf)[j] = v; break;
    case COLLIE_FLOAT32: ((float *)buf)[j] = (float)v; break;
    default: ((double *)buf)[j] = (double)v; break;
  }
}

static int64_t get(const void *buf, collie_datatype_t dt, int j) {
  switch (dt) {
    case COLLIE_INT32: return ((const int32_t *)buf)[j];
    case COLLIE_INT64: return ((const int64_t *)buf)[j];
    case COLLIE_FLOAT32: return (int64_t)((const float *)buf)[j];
    default: return (int64_t)((const double *)buf)[j];
  }
}

typedef struct {
  collie_comm_t *comm;
  int rank, n;
  collie_datatype_t dt;
  collie_redop_t op;
  int count;
  int kind; /* the repeated call: ALLREDUCE, ..., REDUCE below */
  int root; /* the broadcast's or reduce's root, or -1: call `it` has root it % n */
} ctx_t;

enum { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, ALLTOALL, BROADCAST, REDUCE, KINDS };
static const char *const kind_name[KINDS] = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast",
                                             "reduce"};

static int bad(const ctx_t *c, uint64_t it, const char *what, collie_result_t r) {
  fprintf(stderr, "fast_lane_check: rank %d: call %llu, %s: %s\n", c->rank, (unsigned long long)it, what,
          r ? collie_get_last_error(c->comm) : "wrong result");
  return 1;
}

/* One all-reduce of call `it` (blocking, or pending under another when `under`), checked. */
static int allreduce(const ctx_t *c, uint64_t it, bool in_place, bool under) {
  char in[MAX_COUNT * 8], out[MAX_COUNT * 8], in2[MAX_COUNT * 8], out2[MAX_COUNT * 8];
  for (int j = 0; j < c->count; j++) {
    put(in, c->dt, j, value(it, c->rank, j));
    put(out, c->dt, j, -7);
    put(in2, c->dt, j, value(it + 1, c->rank, j));
  }
  collie_request_t *req = NULL;
  collie_result_t r = COLLIE_SUCCESS;
  if (under) r = collie_iallreduce(in2, out2, (size_t)c->count, c->dt, c->op, c->comm, &req);
  if (!r) r = collie_allreduce(in, in_place ? in : out, (size_t)c->count, c->dt, c->op, c->comm);
  if (!r && req) r = collie_wait(req);
  if (r) return bad(c, it, "all-reduce", r);
  for (int j = 0; j < c->count; j++) {
    if (get(in_place ? in : out, c->dt, j) != expect(it, c->n, j, c->op)) return bad(c, it, "all-reduce", 0);
    if (under && get(out2, c->dt, j) != expect(it + 1, c->n, j, c->op)) return bad(c, it, "pending all-reduce", 0);
  }
  return 0;
}

/* Rank `from`'s element j of its block for rank `to` in call `it` (all-to-all,
 * reduce-scatter): small integers, as value(). */
static int64_t block_value(uint64_t it, int from, int to, int j) { return value(it + (uint64_t)to * 11, from, j); }

/* One blocking all-gather, reduce-scatter, all-to-all or broadcast of call `it`, checked.
 * In place: the all-gather's block, the reduce-scatter's result and the all-to-all's
 * blocks in the receive buffer (or the send buffer) as the API describes, the broadcast's
 * root with one buffer. The broadcast's root changes from call to call; its other ranks
 * pass no send buffer every other call. So does a reduce's root, whose other ranks pass no
 * receive buffer every other call (and must find the one they pass untouched). */
static int blocks(const ctx_t *c, uint64_t it, bool in_place) {
  static int64_t sbuf[MAX_RANKS * MAX_COUNT], rbuf[MAX_RANKS * MAX_COUNT];
  char *in = (char *)sbuf, *out = (char *)rbuf;
  const int n = c->n, me = c->rank, k = c->count;
  const size_t esz = c->dt == COLLIE_INT32 || c->dt == COLLIE_FLOAT32 ? 4 : 8;
  for (int j = 0; j < n * k; j++) put(out, c->dt, j, -7);
  collie_result_t r = COLLIE_SUCCESS;
  if (c->kind == BROADCAST) {
    const int root = c->root >= 0 ? c->root : (int)(it % (uint64_t)n);
    if (me == root)
      for (int j = 0; j < k; j++) put(in, c->dt, j, value(it, root, j));
    char *dst = in_place && me == root ? in : out;
    r = collie_broadcast(me == root || it % 2 ? in : NULL, dst, (size_t)k, c->dt, root, c->comm);
    for (int j = 0; !r && j < k; j++)
      if (get(dst, c->dt, j) != value(it, root, j)) return bad(c, it, "broadcast", 0);
  } else if (c->kind == REDUCE) {
    const int root = c->root >= 0 ? c->root : (int)(it % (uint64_t)n);
    for (int j = 0; j < k; j++) put(in, c->dt, j, value(it, me, j));
    char *dst = in_place && me == root ? in : out;
    r = collie_reduce(in, me == root || it % 2 ? dst : NULL, (size_t)k, c->dt, c->op, root, c->comm);
    for (int j = 0; !r && j < k; j++)
      if (get(dst, c->dt, j) != (me == root ? expect(it, n, j, c->op) : -7)) return bad(c, it, "reduce", 0);
  } else if (c->kind == ALLGATHER) {
    char *mine = in_place ? out + (size_t)me * k * esz : in;
    for (int j = 0; j < k; j++) put(mine, c->dt, j, value(it, me, j));
    r = collie_allgather(mine, out, (size_t)k, c->dt, c->comm);
    for (int q = 0; !r && q < n; q++)
      for (int j = 0; j < k; j++)
        if (get(out, c->dt, q * k + j) != value(it, q, j)) return bad(c, it, "all-gather", 0);
  } else {
    for (int q = 0; q < n; q++)
      for (int j = 0; j < k; j++) put(in, c->dt, q * k + j, c->kind == ALLTOALL ? block_value(it, me, q, j)
                                                                                : value(it + (uint64_t)q, me, j));
    if (c->kind == ALLTOALL) {
      char *dst = in_place ? in : out;
      r = collie_alltoall(in, dst, (size_t)k, c->dt, c->comm);
      for (int q = 0; !r && q < n; q++)
        for (int j = 0; j < k; j++)
          if (get(dst, c->dt, q * k + j) != block_value(it, q, me, j)) return bad(c, it, "all-to-all", 0);
    } else {
      char *dst = in_place ? in + (size_t)me * k * esz : out;
      r = collie_reduce_scatter(in, dst, (size_t)k, c->dt, c->op, c->comm);
      for (int j = 0; !r && j < k; j++)
        if (get(dst, c->dt, j) != expect(it + (uint64_t)me, n, j, c->op)) return bad(c, it, "reduce-scatter", 0);
    }
  }
  return r ? bad(c, it, kind_name[c->kind], r) : 0;
}

/* The repeated call of call `it`. */
static int call(const ctx_t *c, uint64_t it, bool in_place) {
  return c->kind == ALLREDUCE ? allreduce(c, it, in_place, false) : blocks(c, it, in_place);
}

static int run(ctx_t *c, uint64_t iterations, uint64_t seed) {
  uint64_t s = seed | 1;
  for (uint64_t it = 0; it < iterations; it++) {
    const uint64_t k = next(&s) % 100;
    if (k < 3) { /* a new call, size, type or op: the generic path first, then the lane again */
      c->kind = (int)(next(&s) % KINDS);
      /* one line (up to 40 bytes staged), up to 8 (488 bytes), up to 65 (a wide slot's 4136
       * bytes: broadcast, and all-gather up to 2088), or staged beyond */
      const uint64_t size = next(&s) % 3;
      c->count = size == 0   ? 1 + (int)(next(&s) % 5)
                 : size == 1 ? 6 + (int)(next(&s) % 55)
                             : 61 + (int)(next(&s) % (MAX_COUNT - 60));
      c->dt = types[next(&s) % 4];
      c->op = ops[next(&s) % 4];
    } else if (k < 8) { /* a late rank: the others' lanes hand over to the generic wait */
      const int who = (int)(next(&s) % (uint64_t)c->n), us = 1000 + (int)(next(&s) % 2000);
      if (who == c->rank) usleep((useconds_t)us);
    } else if (k < 11) {
      if (allreduce(c, it, false, true)) return 1;
      continue;
    } else if (k < 14) { /* a root's readers may still read: the lane waits for them */
      int64_t b = c->rank == 1 % c->n ? (int64_t)it : -1;
      collie_result_t r = collie_broadcast(&b, &b, 1, COLLIE_INT64, 1 % c->n, c->comm);
      if (r || b != (int64_t)it) return bad(c, it, "broadcast", r);
    } else if (k < 17) { /* a reduce's other ranks compare their call with the root's later */
      int64_t x = value(it, c->rank, 0), y = -1;
      const int root = (int)(next(&s) % (uint64_t)c->n);
      collie_result_t r = collie_reduce(&x, &y, 1, COLLIE_INT64, COLLIE_SUM, root, c->comm);
      if (r || (c->rank == root && y != expect(it, c->n, 0, COLLIE_SUM))) return bad(c, it, "reduce", r);
    } else if (k < 22) { /* barriers: the lane's round without data */
      for (int b = 1 + (int)(next(&s) % 20); b > 0; b--) {
        collie_result_t r = collie_barrier(c->comm);
        if (r) return bad(c, it, "barrier", r);
      }
    }
    if (call(c, it, next(&s) % 4 == 0)) return 1;
  }
  return 0;
}

/* After 100 matching calls the last rank makes the 101st differ, or come 3 s late. */
static int misfit(ctx_t *c, const char *what) {
  const bool barriers = !strcmp(what, "barrier-count"), gathers = !strncmp(what, "gather-", 7);
  const bool noroot = !strcmp(what, "reduce-noroot");
  const bool roots = !strcmp(what, "broadcast-root") || !strcmp(what, "reduce-root") || noroot;
  if (gathers) c->kind = ALLGATHER, c->count = 1;
  if (roots) c->kind = !strcmp(what, "broadcast-root") ? BROADCAST : REDUCE, c->count = 1, c->root = 0;
  for (uint64_t it = 0; it < 100; it++) {
    collie_result_t r = barriers ? collie_barrier(c->comm) : COLLIE_SUCCESS;
    if (r) return bad(c, it, "barrier", r);
    if (!barriers && call(c, it, false)) return 1;
  }
  /* A root runs up to the inline slots (128 where ranks outnumber CPUs) ahead of its
   * readers, and its readers need only the root (a reduce's other ranks run ahead of their
   * root alike): two of three ranks could reach the differing call while the third was
   * still at the first, which then meets the failure there. A barrier keeps them
   * together: the differing call is then #102. The others may still leave that barrier,
   * reach #102 and fail the communicator before a slow rank has returned from it (a
   * reduce's other ranks stage and leave at once): that rank's barrier then meets the
   * failure of #102, and is checked as its call (ASan build, clean clone: rank 2 of
   * reduce-noroot). */
  const collie_result_t before = roots ? collie_barrier(c->comm) : COLLIE_SUCCESS;
  const char *which = roots ? "#102" : "#101";
  const bool last = c->rank == c->n - 1, late = !strcmp(what, "late");
  bool barrier = barriers;
  if (last && !strcmp(what, "op")) c->op = COLLIE_MAX;
  else if (last && !strcmp(what, "count")) c->count = 3;
  else if (last && !strcmp(what, "dtype")) c->dt = COLLIE_INT32;
  else if (last && (!strcmp(what, "barrier") || barriers)) barrier = !barrier;
  else if (last && !strcmp(what, "gather-count")) c->count = 3;
  else if (last && !strcmp(what, "gather-alltoall")) c->kind = ALLTOALL;
  else if (noroot && c->rank == 0) c->root = 1; /* no root: rank 0 names 1, the others 0 */
  else if (last && roots && !noroot) c->root = c->n - 1; /* two roots: rank 0 and this one */
  else if (!late && !barriers && !roots && strcmp(what, "op") && strcmp(what, "count") && strcmp(what, "dtype") &&
           strcmp(what, "barrier") && strcmp(what, "gather-count") && strcmp(what, "gather-alltoall"))
    return 2;
  if (last && late) sleep(3);
  const double t0 = now_s();
  int64_t in[8] = {1, 1, 1, 1, 1, 1, 1, 1}, out[64];
  collie_result_t r = before                ? before
                      : barrier             ? collie_barrier(c->comm)
                      : c->kind == ALLGATHER ? collie_allgather(in, out, (size_t)c->count, c->dt, c->comm)
                      : c->kind == ALLTOALL  ? collie_alltoall(in, out, 1, c->dt, c->comm)
                      : c->kind == BROADCAST ? collie_broadcast(in, in, 1, c->dt, c->root, c->comm)
                      : c->kind == REDUCE    ? collie_reduce(in, out, 1, c->dt, c->op, c->root, c->comm)
                                             : collie_allreduce(in, out, (size_t)c->count, c->dt, c->op, c->comm);
  /* a receiver of the true root (a reduce's other rank) may finish first: the barrier after
   * it meets the failure */
  if (roots && !r) r = collie_barrier(c->comm);
  const double dt = now_s() - t0;
  const char *msg = collie_get_last_error(c->comm);
  printf("rank %d: %s after %.1f s: %s\n", c->rank, collie_get_error_string(r), dt, msg);
  char victim[32];
  snprintf(victim, sizeof(victim), "rank %d ", c->n - 1);
  if (late)
    return last || (r == COLLIE_ERR_TIMEOUT && dt < 3 && strstr(msg, victim)) ? 0 : 1;
  return r == COLLIE_ERR_MISMATCH && dt < 5 && strstr(msg, which) ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || (!strcmp(argv[1], "run") && argc != 4) || (!strcmp(argv[1], "mismatch") && argc != 3)) {
    fprintf(stderr, "usage: fast_lane_check run ITERATIONS SEED | mismatch "
                    "op|count|dtype|barrier|barrier-count|gather-count|gather-alltoall|broadcast-root|"
                    "reduce-root|reduce-noroot | late\n");
    return 2;
  }
  ctx_t c = {.dt = COLLIE_FLOAT32, .op = COLLIE_SUM, .count = 2, .root = -1};
  collie_result_t r = collie_comm_init_env(&c.comm);
  if (r) {
    fprintf(stderr, "fast_lane_check: init: %s\n", collie_get_last_error(NULL));
    return 1;
  }
  collie_comm_rank(c.comm, &c.rank);
  collie_comm_size(c.comm, &c.n);
  if (c.n > MAX_RANKS) {
    fprintf(stderr, "fast_lane_check: at most %d ranks, not %d\n", MAX_RANKS, c.n);
    collie_comm_destroy(c.comm);
    return 2;
  }
  int rc;
  if (!strcmp(argv[1], "run")) rc = run(&c, strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
  else if (!strcmp(argv[1], "mismatch")) rc = misfit(&c, argv[2]);
  else if (!strcmp(argv[1], "late")) rc = misfit(&c, "late");
  else rc = 2;
  collie_comm_destroy(c.comm);
  if (!rc && c.rank == 0) printf("fast_lane_check %s: ok\n", argv[1]);
  return rc;
}
