/* Internal to src/reduce (and its tests/bench): the two kernel tables and the scalar rules
 * both tables share.
 *
 * Floating-point results, identical in both tables and on every platform:
 *  - Any NaN result is the canonical quiet NaN: 0x7fc00000 (float32), 0x7ff8000000000000
 *    (float64), 0x7e00 (float16), 0x7fc0 (bfloat16). Payloads and signs of NaN inputs are
 *    not propagated, so the bits never depend on operand order or on the ISA.
 *  - MAX/MIN (IEEE 754-2019 maximum/minimum): NaN if either input is NaN; otherwise the
 *    larger/smaller value, with -0 < +0. On equal inputs max returns bits(a) & bits(b) and
 *    min bits(a) | bits(b): max(-0,+0) = +0 and min(-0,+0) = -0 in either order.
 *  - float16/bfloat16 are widened exactly to float32, combined, and rounded to nearest even.
 * Integers wrap (two's complement); SUM/PROD of a signed type is the unsigned kernel. */
#ifndef COLLIE_REDUCE_IMPL_H
#define COLLIE_REDUCE_IMPL_H

#include <stdint.h>
#include <string.h>

#include "reduce/reduce.h"

#define COLLIE_F32_QNAN_BITS 0x7fc00000u
#define COLLIE_F64_QNAN_BITS 0x7ff8000000000000ull

typedef const collie_reduce_fn collie_reduce_table_t[COLLIE_NUM_DATATYPES][COLLIE_NUM_OPS];

/* A table row: one datatype's kernels; AVG reduces with the SUM kernel. */
#define COLLIE_REDUCE_ROW(SUM, PROD, MAX, MIN)                                               \
  {[COLLIE_SUM] = SUM, [COLLIE_PROD] = PROD, [COLLIE_MAX] = MAX, [COLLIE_MIN] = MIN,         \
   [COLLIE_AVG] = SUM}

/* Plain C; the AVG column holds the SUM kernel. */
extern collie_reduce_table_t collie_reduce_portable_table;

/* -DCOLLIE_REDUCE_NO_AVX2 builds the portable kernels only, as on other architectures. */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(COLLIE_REDUCE_NO_AVX2)
#define COLLIE_REDUCE_HAVE_AVX2 1
/* AVX2 + F16C intrinsics; only call when collie_reduce_avx2_usable() says so. */
extern collie_reduce_table_t collie_reduce_avx2_table;
#endif

/* 1 if this CPU (and OS) can run collie_reduce_avx2_table: AVX2 and F16C. */
int collie_reduce_avx2_usable(void);

static inline uint32_t collie_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float collie_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint64_t collie_f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
static inline double collie_f64_from_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* NaN -> the canonical quiet NaN, anything else unchanged. */
static inline float collie_f32_canon(float r) {
  return r != r ? collie_f32_from_bits(COLLIE_F32_QNAN_BITS) : r;
}
static inline double collie_f64_canon(double r) {
  return r != r ? collie_f64_from_bits(COLLIE_F64_QNAN_BITS) : r;
}

#endif /* COLLIE_REDUCE_IMPL_H */
