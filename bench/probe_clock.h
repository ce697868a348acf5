/* The probes' clock: seconds on the monotonic clock, as a double. */
#ifndef COLLIE_BENCH_PROBE_CLOCK_H
#define COLLIE_BENCH_PROBE_CLOCK_H

#include <time.h>

static inline double probe_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif
