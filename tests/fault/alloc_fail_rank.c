/* One rank of alloc_fail_test.sh: creates a communicator, runs a little of everything
 * (collectives small and of 1 MiB, an in-place all-to-all-v, point to point in a group,
 * collie_mem_alloc buffers) twice, then a split, and destroys it. Under alloc_fail_shim one
 * allocation of one rank fails; the script judges what every rank printed.
 *
 * Prints "alloc_fail_rank: rank R: OK", or at the first error
 * "alloc_fail_rank: rank R: WHAT failed: CODE: SENTENCE" and goes straight to destroy
 * (as a program that gives up would); exit status 0 or 1. Linked with the shared
 * library, so that the shim can tell the library's allocations from the program's. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collie.h"

/* From alloc_fail_shim when it is preloaded (ALLOC_FAIL_AFTER_INIT). */
void alloc_fail_arm(void) __attribute__((weak));

#define BYTES (1u << 20)
#define N (BYTES / sizeof(float))

static int rank = -1, size;
static int reported; /* an error was printed: the exit status */

static int report(const char *what, collie_result_t r, const collie_comm_t *comm) {
  if (r == COLLIE_SUCCESS) return 0;
  reported = 1;
  fprintf(stderr, "alloc_fail_rank: rank %d: %s failed: %s: %s\n", rank, what, collie_get_error_string(r),
          collie_get_last_error(comm));
  return 1;
}

#define TRY(what, call)                             \
  do {                                              \
    if (report(what, (call), comm)) return 1;       \
  } while (0)

static int point_to_point(collie_comm_t *comm, float *a, float *b) {
  TRY("group_start", collie_group_start());
  TRY("send", collie_send(a, N, COLLIE_FLOAT32, (rank + 1) % size, comm));
  TRY("recv", collie_recv(b, N, COLLIE_FLOAT32, (rank + size - 1) % size, comm));
  TRY("group_end", collie_group_end());
  return 0;
}

/* A program whose collie_mem_alloc fails goes on with the buffers it has (the others are
 * already in the all-reduce): that failure is reported, and the run continues. */
static int registered(collie_comm_t *comm, float *a, float *b) {
  void *m1 = NULL, *m2 = NULL;
  report("mem_alloc", collie_mem_alloc(&m1, BYTES), NULL);
  report("mem_alloc", collie_mem_alloc(&m2, BYTES), NULL);
  int bad = report("allreduce of collie_mem_alloc buffers",
                collie_allreduce(m1 ? m1 : a, m2 ? m2 : b, N, COLLIE_FLOAT32, COLLIE_SUM, comm), comm);
  if (m1) collie_mem_free(m1);
  if (m2) collie_mem_free(m2);
  return bad;
}

/* Ranks 0 and 1 in one new communicator, the last rank alone in another. A failure there
 * leaves the parent as it was (unless it failed the parent too): the program goes on with
 * it, so that the last rank is not left waiting in the parent for ranks that gave up. */
static int split(collie_comm_t *comm, float *a, float *b) {
  collie_comm_t *sub = NULL;
  int bad = report("split", collie_comm_split(comm, rank == size - 1, rank, &sub), comm);
  if (sub) {
    bad |= report("allreduce on the split communicator", collie_allreduce(a, b, N, COLLIE_FLOAT32, COLLIE_SUM, sub), sub);
    bad |= report("destroy of the split communicator", collie_comm_destroy(sub), NULL);
  }
  return bad | report("barrier after the split", collie_barrier(comm), comm);
}

static int everything(collie_comm_t *comm, float *a, float *b, float *c, size_t *counts, size_t *displs) {
  TRY("allreduce of 8 elements", collie_allreduce(a, b, 8, COLLIE_FLOAT32, COLLIE_SUM, comm));
  TRY("allreduce", collie_allreduce(a, b, N, COLLIE_FLOAT32, COLLIE_SUM, comm));
  TRY("allgather", collie_allgather(a, b, N / size, COLLIE_FLOAT32, comm));
  TRY("broadcast", collie_broadcast(a, b, N, COLLIE_FLOAT32, 0, comm));
  TRY("reduce", collie_reduce(a, b, N, COLLIE_FLOAT32, COLLIE_SUM, 0, comm));
  TRY("reduce_scatter", collie_reduce_scatter(b, c, N / size, COLLIE_FLOAT32, COLLIE_MAX, comm));
  TRY("alltoall", collie_alltoall(b, c, N / size, COLLIE_FLOAT32, comm));
  TRY("alltoallv in place", collie_alltoallv(c, counts, displs, c, counts, displs, COLLIE_FLOAT32, comm));
  TRY("barrier", collie_barrier(comm));
  return point_to_point(comm, a, b) || registered(comm, a, b);
}

/* `alloc_fail_rank threads`: 3 ranks as threads of this process (collie_comm_init_all),
 * each an all-reduce of 1 MiB and a barrier. */
static collie_comm_t *thread_comms[3];

static void *thread_rank(void *p) {
  collie_comm_t *comm = thread_comms[(intptr_t)p];
  float *a = calloc(N, sizeof(float)), *b = calloc(N, sizeof(float));
  int r = (int)(intptr_t)p;
  if (a && b) {
    collie_result_t res = collie_allreduce(a, b, N, COLLIE_FLOAT32, COLLIE_SUM, comm);
    if (!res) res = collie_barrier(comm);
    if (res)
      fprintf(stderr, "alloc_fail_rank: rank %d: allreduce or barrier failed: %s: %s\n", r,
              collie_get_error_string(res), collie_get_last_error(comm));
    else
      fprintf(stderr, "alloc_fail_rank: rank %d: OK\n", r);
  }
  collie_comm_destroy(comm);
  free(a);
  free(b);
  return NULL;
}

static int threads(void) {
  collie_result_t res = collie_comm_init_all(thread_comms, 3);
  if (res) {
    fprintf(stderr, "alloc_fail_rank: threads: init failed: %s: %s\n", collie_get_error_string(res),
            collie_get_last_error(NULL));
    return 1;
  }
  pthread_t th[3];
  for (intptr_t r = 0; r < 3; r++)
    if (pthread_create(&th[r], NULL, thread_rank, (void *)r) != 0) return 1; /* not the library's */
  for (int r = 0; r < 3; r++) pthread_join(th[r], NULL);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "threads")) return threads();
  float *a = calloc(N, sizeof(float)), *b = calloc(N, sizeof(float)), *c = calloc(N, sizeof(float));
  size_t *counts = calloc(64, sizeof(size_t)), *displs = calloc(64, sizeof(size_t));
  if (!a || !b || !c || !counts || !displs) return 1;
  collie_comm_t *comm = NULL;
  collie_result_t r = collie_comm_init_env(&comm);
  if (r != COLLIE_SUCCESS) {
    const char *r_env = getenv("COLLIE_RANK");
    fprintf(stderr, "alloc_fail_rank: rank %s: init failed: %s: %s\n", r_env ? r_env : "?",
            collie_get_error_string(r), collie_get_last_error(NULL));
    return 1;
  }
  collie_comm_rank(comm, &rank);
  collie_comm_size(comm, &size);
  if (size > 64) return 1;
  for (int i = 0; i < size; i++) {
    counts[i] = N / size / 2;
    displs[i] = (size_t)i * (N / size);
  }
  if (alloc_fail_arm) alloc_fail_arm();
  int bad = everything(comm, a, b, c, counts, displs) || everything(comm, a, b, c, counts, displs) ||
            split(comm, a, b);
  r = collie_comm_destroy(comm);
  if (!bad) report("destroy", r, NULL); /* after an error, destroy's own sentence is expected */
  if (!reported) fprintf(stderr, "alloc_fail_rank: rank %d: OK\n", rank);
  free(a);
  free(b);
  free(c);
  free(counts);
  free(displs);
  return reported;
}
