/* Page-offset probe: how fast memcpy, collie's copy (core/copy.h) and process_vm_readv move
 * 256 KiB when the destination lies d bytes past the source modulo 4 KiB. On the AMD EPYC
 * VM this was written on (glibc 2.36), memcpy and the kernel's copy ran 4 to 17 times
 * slower for d from 1 to 15 and up to 2 times for d to 63; collie copies such pairs with a
 * vector loop, and reads them by CMA through a buffer at the source's offset.
 *   page_offset_probe [KiB]   (default 256) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/copy.h"
#include "probe_clock.h"

enum { WAY_MEMCPY, WAY_COLLIE, WAY_CMA };

/* Best of 5 rounds, GB/s. */
static double rate(int way, char *dst, const char *src, size_t n, pid_t child) {
  const int iters = (int)(512.0 * 1024 * 1024 / (double)n) + 1;
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = probe_now();
    for (int i = 0; i < iters; i++) {
      if (way == WAY_MEMCPY) {
        memcpy(dst, src, n);
      } else if (way == WAY_COLLIE) {
        collie_copy(dst, src, n, false);
      } else {
        struct iovec l = {dst, n}, r = {(void *)src, n};
        if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)n) return -1;
      }
    }
    double dt = (probe_now() - t0) / iters;
    if (dt < best) best = dt;
  }
  return (double)n / best / 1e9;
}

int main(int argc, char **argv) {
  const size_t n = (argc > 1 ? strtoull(argv[1], NULL, 0) : 256) << 10;
  void *s = NULL, *d = NULL;
  if (!n || posix_memalign(&s, 4096, n) || posix_memalign(&d, 4096, n + 4096)) {
    fprintf(stderr, "page_offset_probe: cannot allocate 2 x %zu bytes\n", n);
    return 1;
  }
  memset(s, 1, n);
  memset(d, 2, n + 4096);
  /* The child holds the same source (a copy made by fork) for process_vm_readv to read. */
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  static const size_t dists[] = {0, 8, 15, 16, 40, 64};
  printf("%zu KiB copies, destination d bytes past the source modulo 4 KiB (GB/s, best of 5):\n", n >> 10);
  printf("%6s %10s %12s %18s\n", "d", "memcpy", "collie_copy", "process_vm_readv");
  for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++) {
    char *dst = (char *)d + dists[i];
    const double m = rate(WAY_MEMCPY, dst, s, n, child), c = rate(WAY_COLLIE, dst, s, n, child);
    const double k = child > 0 ? rate(WAY_CMA, dst, s, n, child) : -1;
    if (k < 0)
      printf("%6zu %10.2f %12.2f %18s\n", dists[i], m, c, "not available");
    else
      printf("%6zu %10.2f %12.2f %18.2f\n", dists[i], m, c, k);
  }
  if (child > 0) kill(child, SIGKILL);
  free(s);
  free(d);
  return 0;
}
