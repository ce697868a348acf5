/* shared_buffers: allreduce with buffers from collie_mem_alloc, which the other ranks of a
 * host read and write directly, so the data is copied once instead of twice.
 *
 * Every rank fills a 4 MiB vector with its rank number plus the index, sums it with
 * collie_allreduce twice (ordinary malloc buffers, then collie_mem_alloc buffers), checks
 * both results and prints how long each took. It uses nothing but collie.h.
 *
 *   cc shared_buffers.c $(pkg-config --cflags --libs collie) -o shared_buffers
 *   collie-run -n 3 ./shared_buffers
 *
 * Exits non-zero if any call fails or any result is wrong. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <collie.h>

#define COUNT (1u << 20) /* floats: 4 MiB */
#define ITERS 20

static collie_comm_t *comm;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    collie_result_t r_ = (call);                                                                   \
    if (r_ != COLLIE_SUCCESS) {                                                                    \
      fprintf(stderr, "shared_buffers: %s failed: %s: %s\n", #call, collie_get_error_string(r_),   \
              collie_get_last_error(comm));                                                        \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Sums the vectors ITERS times; returns microseconds per allreduce, checks the result. */
static double run(float *send, float *recv, int rank, int size, const char *what) {
  for (size_t i = 0; i < COUNT; i++) send[i] = (float)(rank + (int)(i % 1000));
  CHECK(collie_allreduce(send, recv, COUNT, COLLIE_FLOAT32, COLLIE_SUM, comm)); /* warm-up */
  CHECK(collie_barrier(comm));
  double t0 = now_us();
  for (int k = 0; k < ITERS; k++) CHECK(collie_allreduce(send, recv, COUNT, COLLIE_FLOAT32, COLLIE_SUM, comm));
  double us = (now_us() - t0) / ITERS;
  for (size_t i = 0; i < COUNT; i++) {
    float want = (float)(size * (size - 1) / 2 + size * (int)(i % 1000));
    if (recv[i] != want) {
      fprintf(stderr, "shared_buffers: rank %d, %s buffers: element %zu is %g, expected %g\n", rank, what, i,
              (double)recv[i], (double)want);
      exit(1);
    }
  }
  return us;
}

int main(void) {
  int rank, size;
  CHECK(collie_comm_init_env(&comm));
  CHECK(collie_comm_rank(comm, &rank));
  CHECK(collie_comm_size(comm, &size));

  float *send = malloc(COUNT * sizeof(float)), *recv = malloc(COUNT * sizeof(float));
  if (!send || !recv) return 1;
  double plain = run(send, recv, rank, size, "malloc");
  free(send);
  free(recv);

  CHECK(collie_mem_alloc((void **)&send, COUNT * sizeof(float)));
  CHECK(collie_mem_alloc((void **)&recv, COUNT * sizeof(float)));
  double shared = run(send, recv, rank, size, "collie_mem_alloc");
  CHECK(collie_mem_free(send));
  CHECK(collie_mem_free(recv));

  printf("rank %d of %d: 4 MiB allreduce correct: malloc %.0f us, collie_mem_alloc %.0f us\n", rank, size, plain,
         shared);
  CHECK(collie_comm_destroy(comm));
  return 0;
}
