/* memcpy probe: the single-thread copy rate of this machine, the floor every shared-memory
 * transfer is measured against (BASELINES.md). Prints GB/s copied for each size.
 *   memcpy_probe [bytes...]   (default 4 MiB and 256 MiB) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_clock.h"

static void probe(size_t n) {
  char *a = malloc(n), *b = malloc(n);
  if (!a || !b) {
    fprintf(stderr, "memcpy_probe: cannot allocate 2 x %zu bytes\n", n);
    exit(1);
  }
  memset(a, 1, n);
  memset(b, 2, n);
  int iters = (int)(4096.0 * 1024 * 1024 / (double)n);
  if (iters < 3) iters = 3;
  if (iters > 2000) iters = 2000;
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = probe_now();
    for (int i = 0; i < iters; i++) memcpy((i & 1) ? a : b, (i & 1) ? b : a, n);
    double dt = (probe_now() - t0) / iters;
    if (dt < best) best = dt;
  }
  printf("memcpy %12zu bytes: %6.2f GB/s\n", n, (double)n / best / 1e9);
  free(a);
  free(b);
}

int main(int argc, char **argv) {
  if (argc == 1) {
    probe(4u << 20);
    probe(256u << 20);
  }
  for (int i = 1; i < argc; i++) probe(strtoull(argv[i], NULL, 0));
  return 0;
}
