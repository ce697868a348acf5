/* Cross-memory-attach probe: how fast one process reads another's memory with
 * process_vm_readv, against memcpy in the same process. This decides whether single-copy
 * reads of a peer's buffer could beat staging through shared memory (docs/algorithms.md,
 * "Not single-copy"). Prints one line per method, best of 5, GB/s copied.
 *   cma_probe [MiB]   (default 64) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_clock.h"

int main(int argc, char **argv) {
  size_t n = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
  char *src = malloc(n), *dst = malloc(n);
  if (!src || !dst) return 1;
  memset(src, 7, n);
  memset(dst, 0, n);
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = probe_now();
    memcpy(dst, src, n);
    double r = (double)n / (probe_now() - t0) / 1e9;
    if (r > best) best = r;
  }
  printf("memcpy %zu bytes: %.2f GB/s\n", n, best);
  fflush(stdout);
  /* Some kernels (Yama ptrace_scope 1) let only a declared tracer read us. */
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    double cbest = 0;
    for (int rep = 0; rep < 5; rep++) {
      struct iovec local = {dst, n}, remote = {src, n};
      double t0 = probe_now();
      ssize_t got = process_vm_readv(parent, &local, 1, &remote, 1, 0);
      double dt = probe_now() - t0;
      if (got != (ssize_t)n) {
        printf("process_vm_readv %zu bytes: not available here (%s)\n", n, got < 0 ? strerror(errno) : "short read");
        _exit(0);
      }
      double r = (double)n / dt / 1e9;
      if (r > cbest) cbest = r;
    }
    printf("process_vm_readv %zu bytes: %.2f GB/s\n", n, cbest);
    fflush(stdout);
    _exit(0);
  }
  int st;
  waitpid(child, &st, 0);
  return 0;
}
