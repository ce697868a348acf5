/* Portable reduction kernels: plain C, element by element (the compiler may vectorise).
 * Elements are accessed with memcpy, so any alignment works; dst may be a or b exactly.
 * The rules (wrapping integers, canonical NaN, -0 < +0) are described in reduce_impl.h. */
#include "reduce/half.h"

/* dst[i] = EXPR(x, y) where x = a[i], y = b[i], all of type T. Blocks of BLOCK elements are
 * copied into local arrays, which cannot alias, so that the fixed-length inner loop can be
 * vectorised even at -O2; the last partial block is zero-padded. */
#define BLOCK 64
#define KERNEL(NAME, T, EXPR)                                                                \
  static void NAME(void *dst, const void *a, const void *b, size_t n) {                      \
    unsigned char *d = dst;                                                                  \
    const unsigned char *pa = a, *pb = b;                                                    \
    T x[BLOCK], y[BLOCK], r[BLOCK];                                                          \
    for (size_t i = 0; i < n; i += BLOCK) {                                                  \
      size_t off = i * sizeof(T), rest = n - i;                                              \
      if (rest >= BLOCK) {                                                                   \
        memcpy(x, pa + off, sizeof x);                                                       \
        memcpy(y, pb + off, sizeof y);                                                       \
      } else {                                                                               \
        memset(x, 0, sizeof x), memset(y, 0, sizeof y);                                      \
        memcpy(x, pa + off, rest * sizeof(T));                                               \
        memcpy(y, pb + off, rest * sizeof(T));                                               \
      }                                                                                      \
      for (size_t j = 0; j < BLOCK; j++)                                                     \
        r[j] = EXPR(x[j], y[j]);                                                             \
      memcpy(d + off, r, (rest >= BLOCK ? BLOCK : rest) * sizeof(T));                        \
    }                                                                                        \
  }

/* Integers: sum and product in the unsigned type (wraps; the signed kernels are these). */
#define U8_SUM(x, y) ((uint8_t)((unsigned)(x) + (unsigned)(y)))
#define U8_PROD(x, y) ((uint8_t)((unsigned)(x) * (unsigned)(y)))
#define U32_SUM(x, y) ((uint32_t)((uint32_t)(x) + (uint32_t)(y)))
#define U32_PROD(x, y) ((uint32_t)((uint32_t)(x) * (uint32_t)(y)))
#define U64_SUM(x, y) ((uint64_t)((uint64_t)(x) + (uint64_t)(y)))
#define U64_PROD(x, y) ((uint64_t)((uint64_t)(x) * (uint64_t)(y)))
#define INT_MAX_OF(x, y) ((x) > (y) ? (x) : (y))
#define INT_MIN_OF(x, y) ((x) < (y) ? (x) : (y))

KERNEL(u8_sum, uint8_t, U8_SUM)
KERNEL(u8_prod, uint8_t, U8_PROD)
KERNEL(u8_max, uint8_t, INT_MAX_OF)
KERNEL(u8_min, uint8_t, INT_MIN_OF)
KERNEL(i8_max, int8_t, INT_MAX_OF)
KERNEL(i8_min, int8_t, INT_MIN_OF)
KERNEL(u32_sum, uint32_t, U32_SUM)
KERNEL(u32_prod, uint32_t, U32_PROD)
KERNEL(u32_max, uint32_t, INT_MAX_OF)
KERNEL(u32_min, uint32_t, INT_MIN_OF)
KERNEL(i32_max, int32_t, INT_MAX_OF)
KERNEL(i32_min, int32_t, INT_MIN_OF)
KERNEL(u64_sum, uint64_t, U64_SUM)
KERNEL(u64_prod, uint64_t, U64_PROD)
KERNEL(u64_max, uint64_t, INT_MAX_OF)
KERNEL(u64_min, uint64_t, INT_MIN_OF)
KERNEL(i64_max, int64_t, INT_MAX_OF)
KERNEL(i64_min, int64_t, INT_MIN_OF)

/* float32 and float64: canonical NaN; max/min as IEEE 754-2019 maximum/minimum. */
static inline float f32_sum(float x, float y) { return collie_f32_canon(x + y); }
static inline float f32_prod(float x, float y) { return collie_f32_canon(x * y); }
static inline float f32_max(float x, float y) {
  if (x != x || y != y) return collie_f32_from_bits(COLLIE_F32_QNAN_BITS);
  if (x > y) return x;
  if (y > x) return y;
  return collie_f32_from_bits(collie_f32_bits(x) & collie_f32_bits(y)); /* +0 wins */
}
static inline float f32_min(float x, float y) {
  if (x != x || y != y) return collie_f32_from_bits(COLLIE_F32_QNAN_BITS);
  if (x < y) return x;
  if (y < x) return y;
  return collie_f32_from_bits(collie_f32_bits(x) | collie_f32_bits(y)); /* -0 wins */
}
static inline double f64_sum(double x, double y) { return collie_f64_canon(x + y); }
static inline double f64_prod(double x, double y) { return collie_f64_canon(x * y); }
static inline double f64_max(double x, double y) {
  if (x != x || y != y) return collie_f64_from_bits(COLLIE_F64_QNAN_BITS);
  if (x > y) return x;
  if (y > x) return y;
  return collie_f64_from_bits(collie_f64_bits(x) & collie_f64_bits(y));
}
static inline double f64_min(double x, double y) {
  if (x != x || y != y) return collie_f64_from_bits(COLLIE_F64_QNAN_BITS);
  if (x < y) return x;
  if (y < x) return y;
  return collie_f64_from_bits(collie_f64_bits(x) | collie_f64_bits(y));
}

KERNEL(f32_sum_k, float, f32_sum)
KERNEL(f32_prod_k, float, f32_prod)
KERNEL(f32_max_k, float, f32_max)
KERNEL(f32_min_k, float, f32_min)
KERNEL(f64_sum_k, double, f64_sum)
KERNEL(f64_prod_k, double, f64_prod)
KERNEL(f64_max_k, double, f64_max)
KERNEL(f64_min_k, double, f64_min)

/* float16/bfloat16: widen exactly, apply the float32 rule, round to nearest even. */
#define HALF_OP(PREFIX, TO_F, FROM_F, OP)                                                    \
  static inline uint16_t PREFIX##_##OP(uint16_t x, uint16_t y) {                             \
    return FROM_F(f32_##OP(TO_F(x), TO_F(y)));                                               \
  }                                                                                          \
  KERNEL(PREFIX##_##OP##_k, uint16_t, PREFIX##_##OP)
HALF_OP(f16, collie_h2f, collie_f2h, sum)
HALF_OP(f16, collie_h2f, collie_f2h, prod)
HALF_OP(f16, collie_h2f, collie_f2h, max)
HALF_OP(f16, collie_h2f, collie_f2h, min)
/* bfloat16 without branches, so the compiler can vectorise: widening needs no NaN quieting
 * (a NaN input always gives the canonical NaN), and round-to-nearest-even by integer add is
 * right for every non-NaN float and for the canonical NaN, the only NaN an op returns. */
static inline float bf16_widen(uint16_t x) { return collie_f32_from_bits((uint32_t)x << 16); }
static inline uint16_t bf16_narrow(float f) {
  uint32_t u = collie_f32_bits(f);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
HALF_OP(bf16, bf16_widen, bf16_narrow, sum)
HALF_OP(bf16, bf16_widen, bf16_narrow, prod)
HALF_OP(bf16, bf16_widen, bf16_narrow, max)
HALF_OP(bf16, bf16_widen, bf16_narrow, min)

collie_reduce_table_t collie_reduce_portable_table = {
    [COLLIE_INT8] = COLLIE_REDUCE_ROW(u8_sum, u8_prod, i8_max, i8_min),
    [COLLIE_UINT8] = COLLIE_REDUCE_ROW(u8_sum, u8_prod, u8_max, u8_min),
    [COLLIE_INT32] = COLLIE_REDUCE_ROW(u32_sum, u32_prod, i32_max, i32_min),
    [COLLIE_UINT32] = COLLIE_REDUCE_ROW(u32_sum, u32_prod, u32_max, u32_min),
    [COLLIE_INT64] = COLLIE_REDUCE_ROW(u64_sum, u64_prod, i64_max, i64_min),
    [COLLIE_UINT64] = COLLIE_REDUCE_ROW(u64_sum, u64_prod, u64_max, u64_min),
    [COLLIE_FLOAT16] = COLLIE_REDUCE_ROW(f16_sum_k, f16_prod_k, f16_max_k, f16_min_k),
    [COLLIE_BFLOAT16] = COLLIE_REDUCE_ROW(bf16_sum_k, bf16_prod_k, bf16_max_k, bf16_min_k),
    [COLLIE_FLOAT32] = COLLIE_REDUCE_ROW(f32_sum_k, f32_prod_k, f32_max_k, f32_min_k),
    [COLLIE_FLOAT64] = COLLIE_REDUCE_ROW(f64_sum_k, f64_prod_k, f64_max_k, f64_min_k),
};
