/* The floor of a 2-rank all-to-all (or all-gather) through staging, with buffers the peer
 * cannot read (malloc): two threads on two CPUs, each with a send and a receive buffer of
 * two blocks, copy their own block send -> receive, stage the block for the peer into a
 * shared buffer in chunks, and copy the peer's staged chunks into their receive buffer.
 * That is the least any copy-in / copy-out scheme does (three copies of a block per
 * core); no protocol, no checks. Prints the best time per exchange for a few chunk sizes,
 * then the same three copies by one thread on one CPU: the ratio of the two tells how much
 * copying between the CPUs costs on this machine at this moment (bench/compare/run.py
 * waits on it before each round).
 *   exchange_probe [KiB per block]   (default 512: a 1 MiB all-to-all on 2 ranks) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_clock.h"

enum { ITERS = 3000, WARMUP = 100 };

static size_t block, chunk;
static int nchunks_in_flight;
static char *staging[2];
static _Atomic long written[2], read_[2]; /* chunks staged by / drained by each thread */
static double best[2];

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  sched_setaffinity(0, sizeof s, &s);
}

static void *rank_main(void *arg) {
  const int me = (int)(long)arg, peer = 1 - me;
  pin(me);
  char *send = aligned_alloc(4096, 2 * block), *recv = aligned_alloc(4096, 2 * block);
  if (!send || !recv) exit(1);
  memset(send, me + 1, 2 * block);
  memset(recv, 0, 2 * block);
  const long per_op = (long)(block / chunk);
  long staged = 0, drained = 0;
  double bt = 1e9;
  for (int it = 0; it < ITERS; it++) {
    double t0 = probe_now();
    memcpy(recv + (size_t)me * block, send + (size_t)me * block, block);
    long s = 0, r = 0;
    while (s < per_op || r < per_op) {
      if (s < per_op && staged - atomic_load_explicit(&read_[peer], memory_order_acquire) < nchunks_in_flight) {
        memcpy(staging[me] + (size_t)(staged % nchunks_in_flight) * chunk, send + (size_t)peer * block + (size_t)s * chunk,
               chunk);
        atomic_store_explicit(&written[me], ++staged, memory_order_release);
        s++;
      } else if (r < per_op && atomic_load_explicit(&written[peer], memory_order_acquire) > drained) {
        memcpy(recv + (size_t)peer * block + (size_t)r * chunk,
               staging[peer] + (size_t)(drained % nchunks_in_flight) * chunk, chunk);
        atomic_store_explicit(&read_[me], ++drained, memory_order_release);
        r++;
      } else {
        relax();
      }
    }
    double t = probe_now() - t0;
    if (it >= WARMUP && t < bt) bt = t;
  }
  best[me] = bt;
  free(send);
  free(recv);
  return NULL;
}

/* The three copies of an exchange, on one CPU: nothing crosses between caches. */
static double local_copies(void) {
  char *send = aligned_alloc(4096, 2 * block), *recv = aligned_alloc(4096, 2 * block);
  char *stage = aligned_alloc(4096, block);
  if (!send || !recv || !stage) return 0;
  memset(send, 1, 2 * block);
  memset(recv, 0, 2 * block);
  memset(stage, 0, block);
  pin(0);
  double b = 1e9;
  for (int it = 0; it < WARMUP + ITERS; it++) {
    double t0 = probe_now();
    memcpy(recv, send, block);
    memcpy(stage, send + block, block);
    memcpy(recv + block, stage, block);
    double t = probe_now() - t0;
    if (it >= WARMUP && t < b) b = t;
  }
  free(send);
  free(recv);
  free(stage);
  return b;
}

int main(int argc, char **argv) {
  block = (size_t)(argc > 1 ? atoi(argv[1]) : 512) << 10;
  static const size_t chunks_kib[] = {64, 128, 256, 512};
  static const int in_flight[] = {4, 8, 4, 2};
  for (size_t c = 0; c < sizeof(chunks_kib) / sizeof(chunks_kib[0]); c++) {
    chunk = chunks_kib[c] << 10;
    if (chunk > block) continue;
    nchunks_in_flight = in_flight[c];
    written[0] = written[1] = read_[0] = read_[1] = 0;
    for (int i = 0; i < 2; i++) {
      staging[i] = aligned_alloc(4096, chunk * (size_t)nchunks_in_flight);
      if (!staging[i]) return 1;
      memset(staging[i], 0, chunk * (size_t)nchunks_in_flight);
    }
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, rank_main, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("block %zu KiB, chunks of %zu KiB x %d in flight: best %.1f us per exchange\n", block >> 10, chunk >> 10,
           nchunks_in_flight, (best[0] > best[1] ? best[0] : best[1]) * 1e6);
    for (int i = 0; i < 2; i++) free(staging[i]);
  }
  printf("the same three copies on one CPU: best %.1f us\n", local_copies() * 1e6);
  return 0;
}
