/* What it costs to hand a CPU from one process to another with sched_yield: two processes
 * pinned to one CPU pass a token through shared memory, each yielding until it is its
 * turn. When ranks outnumber cores, every shared-memory collective needs each rank to run
 * once per operation, so this is its floor: 2 ranks per core, 2 handoffs per operation.
 *   yield_probe [handoffs]   (default 100000) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  _Atomic long *token = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (token == MAP_FAILED) return 1;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(0, &s);
  if (sched_setaffinity(0, sizeof s, &s)) return 1; /* inherited by the child */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t child = fork();
  if (child < 0) return 1;
  const long me = child == 0;
  for (long i = 0; i < n; i++) {
    long want = 2 * i + me;
    while (atomic_load(token) != want) sched_yield();
    atomic_store(token, want + 1);
  }
  if (me) _exit(0);
  waitpid(child, NULL, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / (2.0 * (double)n);
  printf("sched_yield handoff between two processes on one CPU: %.2f us\n", us);
  return 0;
}
