/* Ranks drifting apart in a sequence of shared-memory collectives. In a small broadcast
 * the root waits for nobody: it runs ahead of the slowest reader by up to the inline slots
 * in use (32, or 128 where the host's ranks outnumber its CPUs: transport/shm.h), while
 * staged rounds in between reuse their staging buffers every second round. A small
 * reduce's other ranks run ahead of its root the same way, comparing their calls with the
 * root's later (algo/native/shm_native.c: defers_check). This program
 * runs one seeded random sequence on every rank: bursts of up to 80 broadcasts or reduces
 * from one root, of 1 to 108 int32 each (one to eight inline lines, and beyond into the
 * staging buffer),
 * small allreduces, 64 KiB allgathers, and large broadcasts and allreduces (up to 2 MiB:
 * a staged broadcast cuts the staging area into slots of its own, while the allreduce
 * fills each of its two halves, so a root running ahead switches between the layouts
 * with readers still in the other); bursts of up to 80 one-round broadcasts of 436 B to
 * 8 KiB (a root that waits for nobody: inline up to 4 KiB, in the wide slots' further
 * lines; staged beyond, in the slot layout), half of them of one size per burst, which
 * the fast lane repeats; and broadcasts of 64 to
 * 256 KiB, from a buffer of collie_mem_alloc, which the others may read in place, or of
 * malloc, which they may not, with a small broadcast between: a root that publishes where
 * its buffer is must not overwrite what a slower rank still reads for an earlier call.
 * Ranks sleep at random moments so that some fall behind, and every 500 iterations all
 * but one sleep 3 ms while that one broadcasts 300 times (every other time 2800 bytes
 * each, in the lane). Every result is checked.
 *   runahead_check [iterations] [seed]      (launched by collie-run) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collie.h"

enum { MAX_SMALL = 108, BIG = 16384, MAX_LARGE = 1 << 19 }; /* int32: 432 bytes; 64 KiB; 2 MiB */
enum { MEDIUM_MIN = 16384, MEDIUM_MAX = 65536 };                 /* int32: 64 KiB to 256 KiB */

static uint64_t next(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

static int32_t value(int it, int rank, size_t j) { return (int32_t)((it * 131 + rank * 7919 + (int)j * 17) & 0xffff); }

static int fail(int rank, int it, const char *what, size_t j, int32_t got, int32_t want) {
  fprintf(stderr, "runahead_check: rank %d: iteration %d, %s: element %zu is %d, expected %d\n", rank, it, what, j,
          got, want);
  return 1;
}

static int check(collie_result_t r, int rank, int it, const char *what) {
  if (r == COLLIE_SUCCESS) return 0;
  fprintf(stderr, "runahead_check: rank %d: iteration %d, %s failed: %s\n", rank, it, what,
          collie_get_last_error(NULL));
  return 1;
}

/* A broadcast of count int32 from root in buf, checked; `salt` varies the values between
 * the calls of one iteration. */
static int bcast(collie_comm_t *comm, int32_t *buf, size_t count, int root, int me, int it, int salt) {
  const int v = it * 4 + salt;
  for (size_t j = 0; j < count; j++) buf[j] = me == root ? value(v, me, j) : -1;
  if (check(collie_broadcast(buf, buf, count, COLLIE_INT32, root, comm), me, it, "broadcast")) return 1;
  for (size_t j = 0; j < count; j++)
    if (buf[j] != value(v, root, j)) return fail(me, it, "broadcast", j, buf[j], value(v, root, j));
  return 0;
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 3000;
  const uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 12345;
  collie_comm_t *comm;
  if (collie_comm_init_env(&comm) != COLLIE_SUCCESS) {
    fprintf(stderr, "runahead_check: %s\n", collie_get_last_error(NULL));
    return 1;
  }
  int me, n;
  collie_comm_rank(comm, &me);
  collie_comm_size(comm, &n);
  const size_t len = (size_t)BIG * (size_t)n > MAX_LARGE ? (size_t)BIG * (size_t)n : MAX_LARGE;
  int32_t *in = malloc(sizeof(int32_t) * len), *out = malloc(sizeof(int32_t) * len), *reg = NULL;
  if (!in || !out || collie_mem_alloc((void **)&reg, sizeof(int32_t) * MEDIUM_MAX) != COLLIE_SUCCESS) return 1;
  uint64_t shared = seed | 1, own = (seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(me + 1))) | 1;
  int bad = 0, kind = 0, root = 0, burst = 0;
  size_t wide = 0; /* a burst's one-round broadcasts repeat this size half the time */
  for (int it = 0; it < iters && !bad; it++) {
    /* A rank falls behind now and then; the others run on as far as the protocol lets them. */
    if (next(&own) % 8 == 0) usleep((useconds_t)(next(&own) % 300));
    /* Now and then the readers fall far behind a root that broadcasts 300 times: it
     * reaches the end of its run-ahead, however many inline slots it has. */
    if (it % 500 == 250) {
      const int far_root = it / 500 % n;
      if (me != far_root) usleep(3000);
      /* every other time one wide size, which the fast lane repeats (src/coll/fast_lane.c):
       * 2800 B, 45 lines in a wide slot; each call's data differ from the call 32 before */
      const size_t far_wide = it / 500 % 2 ? 700 : 0;
      for (int b = 0; b < 300 && !bad; b++)
        bad = bcast(comm, out, far_wide ? far_wide : 1 + (size_t)b % MAX_SMALL, far_root, me, it, b);
    }
    /* Bursts of one kind and root: a root broadcasting many times in a row is what runs
     * ahead; a burst may outlast 32 inline slots. */
    if (burst-- <= 0) {
      kind = (int)(next(&shared) % 12);
      root = (int)(next(&shared) % (uint64_t)n);
      const uint64_t longest = kind < 6 || kind == 11 ? 80 : kind == 10 ? 20 : kind >= 8 ? 6 : 1;
      burst = (int)(next(&shared) % longest);
      wide = MAX_SMALL + 1 + next(&shared) % (2048 - MAX_SMALL);
    }
    size_t count = 1 + next(&shared) % MAX_SMALL;
    if (kind == 8 || kind == 9) /* staged, several rounds */
      count = MAX_LARGE / 8 + next(&shared) % (MAX_LARGE - MAX_LARGE / 8);
    if (kind == 10) count = 2 * MEDIUM_MIN + next(&shared) % (MEDIUM_MAX - 2 * MEDIUM_MIN + 1);
    if (kind == 11) /* one round, inline or staged: a size of its own, or the burst's, which the lane repeats */
      count = next(&shared) % 2 ? wide : MAX_SMALL + 1 + next(&shared) % (2048 - MAX_SMALL);
    if (kind < 4 || kind == 8 || kind == 11) { /* broadcast */
      bad = bcast(comm, out, count, root, me, it, 0);
    } else if (kind == 10) { /* medium broadcasts: from malloc, then a smaller one from collie_mem_alloc */
      bad = bcast(comm, out, count, root, me, it, 1) || bcast(comm, out, 1 + count % MAX_SMALL, root, me, it, 2) ||
            bcast(comm, reg, MEDIUM_MIN + count % (count / 2 - MEDIUM_MIN + 1), root, me, it, 3);
    } else if (kind < 6) { /* reduce */
      for (size_t j = 0; j < count; j++) in[j] = value(it, me, j), out[j] = -1;
      bad = check(collie_reduce(in, out, count, COLLIE_INT32, COLLIE_SUM, root, comm), me, it, "reduce");
      for (size_t j = 0; j < count && !bad && me == root; j++) {
        int32_t want = 0;
        for (int r = 0; r < n; r++) want += value(it, r, j);
        if (out[j] != want) bad = fail(me, it, "reduce", j, out[j], want);
      }
    } else if (kind == 6 || kind == 9) { /* allreduce */
      for (size_t j = 0; j < count; j++) in[j] = value(it, me, j);
      bad = check(collie_allreduce(in, out, count, COLLIE_INT32, COLLIE_SUM, comm), me, it, "allreduce");
      for (size_t j = 0; j < count && !bad; j++) {
        int32_t want = 0;
        for (int r = 0; r < n; r++) want += value(it, r, j);
        if (out[j] != want) bad = fail(me, it, "allreduce", j, out[j], want);
      }
    } else { /* allgather, staged */
      for (size_t j = 0; j < BIG; j++) in[j] = value(it, me, j);
      bad = check(collie_allgather(in, out, BIG, COLLIE_INT32, comm), me, it, "allgather");
      for (int r = 0; r < n && !bad; r++)
        for (size_t j = 0; j < BIG && !bad; j++)
          if (out[(size_t)r * BIG + j] != value(it, r, j))
            bad = fail(me, it, "allgather", (size_t)r * BIG + j, out[(size_t)r * BIG + j], value(it, r, j));
    }
  }
  if (bad) {
    collie_comm_abort(comm);
    return 1;
  }
  collie_mem_free(reg);
  collie_result_t r = collie_comm_destroy(comm);
  free(in);
  free(out);
  if (r != COLLIE_SUCCESS) return 1;
  printf("runahead_check: rank %d: %d iterations OK\n", me, iters);
  return 0;
}
