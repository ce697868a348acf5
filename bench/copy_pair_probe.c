/* The single-copy floor of a 2-rank all-gather or all-to-all: two threads on two CPUs
 * each copy N bytes from a buffer of their own into another at the same time, as two
 * ranks do when every byte of an N-byte receive buffer is copied once (a rank's own block
 * and the block read straight from the peer's buffer). No scheme moves less, so
 * N / 2 / t (the busbw of the collective, bus factor 1/2) is the most any implementation
 * can show on this machine. Prints the best of 10 for memcpy and for collie's streaming
 * copy (src/core/copy.c), and that ceiling.
 *   copy_pair_probe [MiB]   (default 64) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/copy.h"
#include "probe_clock.h"

enum { ITERS = 10 };

static size_t bytes;
static int method; /* 0: memcpy, 1: streaming stores */
static pthread_barrier_t start, stop;
static double t_start[ITERS], t_end[2][ITERS];

static void *copier(void *arg) {
  const int me = (int)(long)arg;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(me, &s);
  sched_setaffinity(0, sizeof s, &s); /* best effort: with one CPU the figure says so */
  char *src = aligned_alloc(4096, bytes), *dst = aligned_alloc(4096, bytes);
  if (!src || !dst) exit(1);
  memset(src, me + 1, bytes);
  memset(dst, 0, bytes);
  for (int it = 0; it < ITERS; it++) {
    pthread_barrier_wait(&start);
    if (me == 0) t_start[it] = probe_now();
    if (method) collie_copy_stream(dst, src, bytes);
    else memcpy(dst, src, bytes);
    t_end[me][it] = probe_now();
    pthread_barrier_wait(&stop);
  }
  free(src);
  free(dst);
  return NULL;
}

int main(int argc, char **argv) {
  bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
  static const char *names[] = {"memcpy", "streaming stores"};
  for (method = 0; method < 2; method++) {
    pthread_barrier_init(&start, NULL, 2);
    pthread_barrier_init(&stop, NULL, 2);
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, copier, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    double best = 1e9;
    for (int it = 0; it < ITERS; it++) {
      double end = t_end[0][it] > t_end[1][it] ? t_end[0][it] : t_end[1][it];
      if (end - t_start[it] < best) best = end - t_start[it];
    }
    printf("two CPUs copying %zu MiB each at once, %s: best %.2f ms; 2-rank all-gather / all-to-all of that size "
           "copying each byte once: at most %.2f GB/s busbw\n",
           bytes >> 20, names[method], best * 1e3, (double)bytes / 2 / best / 1e9);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&stop);
  }
  return 0;
}
