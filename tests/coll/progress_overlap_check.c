/* The progress thread (COLLIE_PROGRESS_THREAD=1) moves nonblocking operations while the
 * application makes no collie call, and stands aside while a thread of the application
 * waits (that thread then moves the data itself: src/core/wait.c). This program checks
 * both halves on every rank, round after round:
 *   1. a blocking all-reduce (its wait drives; the thread stands aside);
 *   2. a nonblocking all-reduce of 4 MiB, then a sleep with no collie call, then
 *      collie_test, which must report it done: only the progress thread can have moved
 *      it (with the thread, collie_test only looks);
 *   3. a small nonblocking all-reduce and a 16 MiB one: a wait for the small one, then a
 *      sleep, and the large one must be done: the waiter that left with an operation
 *      still pending must have handed it back to the thread;
 *   4. a nonblocking all-reduce, then a blocking broadcast over it (the blocking call's
 *      wait moves both), then the wait.
 * Every result is checked. Without a progress thread, step 2 or 3 fails by design: it
 * refuses to run then, rather than pass or fail for the wrong reason.
 *   progress_overlap_check [rounds] [sleep_ms]      (launched by collie-run) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collie.h"

enum { SMALL = 16, MEDIUM = 1 << 20, LARGE = 1 << 22 }; /* int32: 64 B, 4 MiB, 16 MiB */

static int32_t value(int round, int rank, size_t j) {
  return (int32_t)((round * 31 + rank * 7 + (int)(j % 977)) & 0xfff);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts)) {
  }
}

static int ok(collie_result_t r, int me, int round, const char *what) {
  if (r == COLLIE_SUCCESS) return 1;
  fprintf(stderr, "progress_overlap_check: rank %d, round %d: %s failed: %s\n", me, round, what,
          collie_get_last_error(NULL));
  return 0;
}

static void fill(int32_t *buf, size_t count, int round, int me) {
  for (size_t j = 0; j < count; j++) buf[j] = value(round, me, j);
}

/* The sum over n ranks of value(round, r, j), checked element by element. */
static int check_sum(const int32_t *buf, size_t count, int round, int n, int me, const char *what) {
  for (size_t j = 0; j < count; j++) {
    int32_t want = 0;
    for (int r = 0; r < n; r++) want += value(round, r, j);
    if (buf[j] != want) {
      fprintf(stderr, "progress_overlap_check: rank %d, round %d, %s: element %zu is %d, expected %d\n", me, round,
              what, j, buf[j], want);
      return 0;
    }
  }
  return 1;
}

/* Step 2's and 3's check: looks after the sleep, no progress of the caller's own (with a
 * progress thread, collie_test only looks). Done at the first look, as a rule; the later
 * looks, every 20 ms for up to PATIENCE_MS, are for a machine so loaded (an ASan build
 * beside three other test jobs) that a 16 MiB all-reduce takes the thread longer than the
 * sleep. A thread that does not move it by itself never gets it done. */
enum { PATIENCE_MS = 5000, LOOK_MS = 20 };
static int done_after_sleep(collie_request_t *req, int me, int round, const char *what) {
  for (int waited = 0;; waited += LOOK_MS) {
    int done = 0;
    if (!ok(collie_test(req, &done), me, round, what)) return 0;
    if (done) return 1;
    if (waited >= PATIENCE_MS) break;
    sleep_ms(LOOK_MS);
  }
  fprintf(stderr, "progress_overlap_check: rank %d, round %d: %s was not done %d ms after the sleep: the progress "
          "thread did not move it\n", me, round, what, PATIENCE_MS);
  collie_wait(req);
  return 0;
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 6;
  const int nap = argc > 2 ? atoi(argv[2]) : 400;
  const char *pt = getenv("COLLIE_PROGRESS_THREAD");
  if (!pt || atoi(pt) != 1) {
    fprintf(stderr, "progress_overlap_check: run it with COLLIE_PROGRESS_THREAD=1\n");
    return 2;
  }
  collie_comm_t *comm;
  if (collie_comm_init_env(&comm) != COLLIE_SUCCESS) {
    fprintf(stderr, "progress_overlap_check: %s\n", collie_get_last_error(NULL));
    return 1;
  }
  int me, n;
  collie_comm_rank(comm, &me);
  collie_comm_size(comm, &n);
  int32_t *in = malloc(sizeof(int32_t) * LARGE), *out = malloc(sizeof(int32_t) * LARGE);
  int32_t *small_in = malloc(sizeof(int32_t) * SMALL), *small_out = malloc(sizeof(int32_t) * SMALL);
  if (!in || !out || !small_in || !small_out) return 1;
  int good = 1;
  for (int round = 0; good && round < rounds; round++) {
    collie_request_t *a, *b;
    /* 1 */
    fill(small_in, SMALL, round, me);
    good = ok(collie_allreduce(small_in, small_out, SMALL, COLLIE_INT32, COLLIE_SUM, comm), me, round, "allreduce") &&
           check_sum(small_out, SMALL, round, n, me, "blocking allreduce");
    /* 2 */
    fill(in, MEDIUM, round, me);
    good = good && ok(collie_iallreduce(in, out, MEDIUM, COLLIE_INT32, COLLIE_SUM, comm, &a), me, round, "iallreduce");
    if (good) sleep_ms(nap);
    good = good && done_after_sleep(a, me, round, "a 4 MiB iallreduce") &&
           check_sum(out, MEDIUM, round, n, me, "4 MiB iallreduce");
    /* 3 */
    fill(small_in, SMALL, round + 1, me);
    fill(in, LARGE, round + 1, me);
    good = good &&
           ok(collie_iallreduce(small_in, small_out, SMALL, COLLIE_INT32, COLLIE_SUM, comm, &a), me, round,
              "iallreduce") &&
           ok(collie_iallreduce(in, out, LARGE, COLLIE_INT32, COLLIE_SUM, comm, &b), me, round, "iallreduce");
    good = good && ok(collie_wait(a), me, round, "wait") &&
           check_sum(small_out, SMALL, round + 1, n, me, "small iallreduce");
    if (good) sleep_ms(nap);
    good = good && done_after_sleep(b, me, round, "a 16 MiB iallreduce posted behind the waited one") &&
           check_sum(out, LARGE, round + 1, n, me, "16 MiB iallreduce");
    /* 4 */
    fill(in, MEDIUM, round + 2, me);
    good = good && ok(collie_iallreduce(in, out, MEDIUM, COLLIE_INT32, COLLIE_SUM, comm, &a), me, round, "iallreduce");
    if (good) {
      for (size_t j = 0; j < SMALL; j++) small_out[j] = me == round % n ? value(round, me, j) : -1;
      good = ok(collie_broadcast(small_out, small_out, SMALL, COLLIE_INT32, round % n, comm), me, round, "broadcast");
      for (size_t j = 0; good && j < SMALL; j++)
        if (small_out[j] != value(round, round % n, j)) {
          fprintf(stderr, "progress_overlap_check: rank %d, round %d, broadcast: element %zu is %d, expected %d\n",
                  me, round, j, small_out[j], value(round, round % n, j));
          good = 0;
        }
      good = ok(collie_wait(a), me, round, "wait") && good && check_sum(out, MEDIUM, round + 2, n, me, "iallreduce");
    }
  }
  free(in);
  free(out);
  free(small_in);
  free(small_out);
  if (collie_comm_destroy(comm) != COLLIE_SUCCESS) good = 0;
  if (good && me == 0) printf("progress_overlap_check: %d ranks, %d rounds: OK\n", n, rounds);
  return good ? 0 : 1;
}
