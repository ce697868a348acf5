/* Micro-benchmark of the reduction kernels (not a test): dst = a + b on 4 MiB buffers,
 * portable vs AVX2 tables. Build and run from the repository root:
 *   gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Isrc -Iinclude bench/reduce_bench.c \
 *       src/reduce/half.c src/reduce/kernels_[ap]*.c src/reduce/reduce.c -lm \
 *       -o /tmp/reduce_bench && /tmp/reduce_bench
 * GB/s counts the 4 MiB of reduced output per call (memory traffic is 3x: two reads, one
 * write); "in place" is dst == a, as the collectives call it. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "reduce/reduce_impl.h"

#define BYTES (4u << 20)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Best of 5 runs of ~0.1 s each, in GB/s of output. */
static double bench(collie_reduce_fn fn, void *dst, const void *a, const void *b, size_t count) {
  double best = 0;
  for (int run = 0; run < 5; run++) {
    int iters = 0;
    double t0 = now(), t;
    do {
      fn(dst, a, b, count);
      iters++;
    } while ((t = now()) - t0 < 0.1);
    double gbs = (double)BYTES * iters / (t - t0) / 1e9;
    if (gbs > best) best = gbs;
  }
  return best;
}

int main(void) {
  unsigned char *a = malloc(BYTES), *b = malloc(BYTES), *d = malloc(BYTES);
  if (!a || !b || !d) return 1;
  for (size_t i = 0; i < BYTES / 2; i++) { /* moderate values: no inf/NaN on the fast path */
    uint16_t x = (uint16_t)(0x3c00 + (i * 7 % 512)), y = (uint16_t)(0x3800 + (i * 13 % 512));
    memcpy(a + 2 * i, &x, 2), memcpy(b + 2 * i, &y, 2);
  }
  static const struct { collie_datatype_t dt; const char *name; size_t esize; } cases[] = {
      {COLLIE_FLOAT32, "float32 sum", 4}, {COLLIE_BFLOAT16, "bfloat16 sum", 2},
      {COLLIE_FLOAT16, "float16 sum", 2}, {COLLIE_INT32, "int32 sum", 4}};
  int avx2 = collie_reduce_avx2_usable();
  printf("%-14s %22s %22s\n", "4 MiB", "portable GB/s", "avx2 GB/s");
  printf("%-14s %11s %10s %11s %10s\n", "", "dst!=a", "in place", "dst!=a", "in place");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t n = BYTES / cases[c].esize;
    collie_reduce_fn p = collie_reduce_portable_table[cases[c].dt][COLLIE_SUM];
    printf("%-14s %11.2f %10.2f", cases[c].name, bench(p, d, a, b, n), bench(p, a, a, b, n));
#ifdef COLLIE_REDUCE_HAVE_AVX2
    if (avx2) {
      collie_reduce_fn v = collie_reduce_avx2_table[cases[c].dt][COLLIE_SUM];
      printf(" %11.2f %10.2f", bench(v, d, a, b, n), bench(v, a, a, b, n));
    }
#endif
    printf("\n");
  }
  (void)avx2;
  free(a), free(b), free(d);
  return 0;
}
