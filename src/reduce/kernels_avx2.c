/* AVX2 (+F16C for float16) reduction kernels, written with intrinsics so that every result
 * is bit-identical to kernels_portable.c (rules in reduce_impl.h). Loads and stores are
 * unaligned; the tail (fewer than one vector) goes through masked loads (4- and 8-byte
 * elements) or a zeroed stack buffer, so every element is computed by the same vector code.
 * Only a*b or a+b are ever formed: no FMA. */
#include "reduce/reduce_impl.h"

#ifdef COLLIE_REDUCE_HAVE_AVX2

#include <cpuid.h>
#include <immintrin.h>

#define AVX2_FN static inline __attribute__((target("avx2,f16c")))
#define AVX2_KERNEL static __attribute__((target("avx2,f16c")))

int collie_reduce_avx2_usable(void) {
  unsigned eax, ebx, ecx, edx;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) /* also checks that the OS saves ymm state */
    return 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return 0;
  return (ecx & bit_F16C) != 0;
}

/* ---- integer vector ops (sum/prod wrap: the signed kernels are the unsigned ones) ---- */
AVX2_FN __m256i v_u8_sum(__m256i x, __m256i y) { return _mm256_add_epi8(x, y); }
AVX2_FN __m256i v_u8_prod(__m256i x, __m256i y) {
  /* No 8-bit multiply: the low byte of a 16-bit product depends only on the low bytes. */
  __m256i even = _mm256_mullo_epi16(x, y);
  __m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(x, 8), _mm256_srli_epi16(y, 8));
  return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00ff)),
                         _mm256_slli_epi16(odd, 8));
}
AVX2_FN __m256i v_u8_max(__m256i x, __m256i y) { return _mm256_max_epu8(x, y); }
AVX2_FN __m256i v_u8_min(__m256i x, __m256i y) { return _mm256_min_epu8(x, y); }
AVX2_FN __m256i v_i8_max(__m256i x, __m256i y) { return _mm256_max_epi8(x, y); }
AVX2_FN __m256i v_i8_min(__m256i x, __m256i y) { return _mm256_min_epi8(x, y); }
AVX2_FN __m256i v_u32_sum(__m256i x, __m256i y) { return _mm256_add_epi32(x, y); }
AVX2_FN __m256i v_u32_prod(__m256i x, __m256i y) { return _mm256_mullo_epi32(x, y); }
AVX2_FN __m256i v_u32_max(__m256i x, __m256i y) { return _mm256_max_epu32(x, y); }
AVX2_FN __m256i v_u32_min(__m256i x, __m256i y) { return _mm256_min_epu32(x, y); }
AVX2_FN __m256i v_i32_max(__m256i x, __m256i y) { return _mm256_max_epi32(x, y); }
AVX2_FN __m256i v_i32_min(__m256i x, __m256i y) { return _mm256_min_epi32(x, y); }
AVX2_FN __m256i v_u64_sum(__m256i x, __m256i y) { return _mm256_add_epi64(x, y); }
AVX2_FN __m256i v_u64_prod(__m256i x, __m256i y) {
  /* (xh*2^32 + xl)(yh*2^32 + yl) mod 2^64 = xl*yl + ((xl*yh + xh*yl) << 32) */
  __m256i xh = _mm256_srli_epi64(x, 32), yh = _mm256_srli_epi64(y, 32);
  __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(x, yh), _mm256_mul_epu32(xh, y));
  return _mm256_add_epi64(_mm256_mul_epu32(x, y), _mm256_slli_epi64(cross, 32));
}
AVX2_FN __m256i v_i64_max(__m256i x, __m256i y) {
  return _mm256_blendv_epi8(y, x, _mm256_cmpgt_epi64(x, y));
}
AVX2_FN __m256i v_i64_min(__m256i x, __m256i y) {
  return _mm256_blendv_epi8(x, y, _mm256_cmpgt_epi64(x, y));
}
AVX2_FN __m256i v_u64_gt(__m256i x, __m256i y) { /* unsigned compare via the sign flip */
  __m256i flip = _mm256_set1_epi64x((long long)0x8000000000000000ull);
  return _mm256_cmpgt_epi64(_mm256_xor_si256(x, flip), _mm256_xor_si256(y, flip));
}
AVX2_FN __m256i v_u64_max(__m256i x, __m256i y) {
  return _mm256_blendv_epi8(y, x, v_u64_gt(x, y));
}
AVX2_FN __m256i v_u64_min(__m256i x, __m256i y) {
  return _mm256_blendv_epi8(x, y, v_u64_gt(x, y));
}

/* A mask of the first k 32-bit lanes (0 <= k < 8). */
AVX2_FN __m256i tail_mask32(int k) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* dst = OP(a, b) over n elements of ESIZE bytes, 32 bytes per step. The tail (under 32
 * bytes) goes through masked loads and stores for 4- and 8-byte elements, and a buffer for
 * smaller ones, whose tails need not end on a 32-bit lane. The buffer's three memcpy calls
 * and two loads that cannot be forwarded from the smaller stores before them cost 6% of a
 * 2-rank 8 B float all-reduce (medians of 24 alternating runs: 0.154 -> 0.145 us). */
#define KERNEL_SI256(NAME, ESIZE, OP)                                                        \
  AVX2_KERNEL void NAME(void *dst, const void *a, const void *b, size_t n) {                 \
    unsigned char *d = dst;                                                                  \
    const unsigned char *pa = a, *pb = b;                                                    \
    size_t bytes = n * (ESIZE), i = 0;                                                       \
    for (; i + 64 <= bytes; i += 64) {                                                       \
      __m256i x0 = _mm256_loadu_si256((const __m256i *)(pa + i));                            \
      __m256i x1 = _mm256_loadu_si256((const __m256i *)(pa + i + 32));                       \
      __m256i y0 = _mm256_loadu_si256((const __m256i *)(pb + i));                            \
      __m256i y1 = _mm256_loadu_si256((const __m256i *)(pb + i + 32));                       \
      _mm256_storeu_si256((__m256i *)(d + i), OP(x0, y0));                                   \
      _mm256_storeu_si256((__m256i *)(d + i + 32), OP(x1, y1));                              \
    }                                                                                        \
    for (; i + 32 <= bytes; i += 32) {                                                       \
      __m256i x = _mm256_loadu_si256((const __m256i *)(pa + i));                             \
      __m256i y = _mm256_loadu_si256((const __m256i *)(pb + i));                             \
      _mm256_storeu_si256((__m256i *)(d + i), OP(x, y));                                     \
    }                                                                                        \
    if (i < bytes && (ESIZE) >= 4) {                                                         \
      /* masked: the lanes past the end read as 0 and are not written */                     \
      __m256i m = tail_mask32((int)((bytes - i) / 4));                                       \
      __m256i x = _mm256_maskload_epi32((const int *)(pa + i), m);                           \
      __m256i y = _mm256_maskload_epi32((const int *)(pb + i), m);                           \
      _mm256_maskstore_epi32((int *)(d + i), m, OP(x, y));                                   \
    } else if (i < bytes) {                                                                  \
      unsigned char ta[32] = {0}, tb[32] = {0}, td[32];                                      \
      memcpy(ta, pa + i, bytes - i);                                                         \
      memcpy(tb, pb + i, bytes - i);                                                         \
      __m256i r = OP(_mm256_loadu_si256((const __m256i *)ta),                                \
                     _mm256_loadu_si256((const __m256i *)tb));                               \
      _mm256_storeu_si256((__m256i *)td, r);                                                 \
      memcpy(d + i, td, bytes - i);                                                          \
    }                                                                                        \
  }

KERNEL_SI256(u8_sum, 1, v_u8_sum)
KERNEL_SI256(u8_prod, 1, v_u8_prod)
KERNEL_SI256(u8_max, 1, v_u8_max)
KERNEL_SI256(u8_min, 1, v_u8_min)
KERNEL_SI256(i8_max, 1, v_i8_max)
KERNEL_SI256(i8_min, 1, v_i8_min)
KERNEL_SI256(u32_sum, 4, v_u32_sum)
KERNEL_SI256(u32_prod, 4, v_u32_prod)
KERNEL_SI256(u32_max, 4, v_u32_max)
KERNEL_SI256(u32_min, 4, v_u32_min)
KERNEL_SI256(i32_max, 4, v_i32_max)
KERNEL_SI256(i32_min, 4, v_i32_min)
KERNEL_SI256(u64_sum, 8, v_u64_sum)
KERNEL_SI256(u64_prod, 8, v_u64_prod)
KERNEL_SI256(u64_max, 8, v_u64_max)
KERNEL_SI256(u64_min, 8, v_u64_min)
KERNEL_SI256(i64_max, 8, v_i64_max)
KERNEL_SI256(i64_min, 8, v_i64_min)

/* ---- float32 / float64: canonical NaN, IEEE 754-2019 maximum/minimum ----
 * maxps(x, y) returns y on equality or NaN, so max(x,y) & max(y,x) is the larger value, or
 * bits(x) & bits(y) on equality (+0 wins); min likewise with | (-0 wins). NaN is then
 * replaced by the canonical quiet NaN wherever x or y is unordered. */
AVX2_FN __m256 ps_canon(__m256 r) {
  __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32((int)COLLIE_F32_QNAN_BITS));
  return _mm256_blendv_ps(r, qnan, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
}
AVX2_FN __m256 ps_nan_if(__m256 r, __m256 x, __m256 y) {
  __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32((int)COLLIE_F32_QNAN_BITS));
  return _mm256_blendv_ps(r, qnan, _mm256_cmp_ps(x, y, _CMP_UNORD_Q));
}
AVX2_FN __m256 v_f32_sum(__m256 x, __m256 y) { return ps_canon(_mm256_add_ps(x, y)); }
AVX2_FN __m256 v_f32_prod(__m256 x, __m256 y) { return ps_canon(_mm256_mul_ps(x, y)); }
AVX2_FN __m256 v_f32_max(__m256 x, __m256 y) {
  return ps_nan_if(_mm256_and_ps(_mm256_max_ps(x, y), _mm256_max_ps(y, x)), x, y);
}
AVX2_FN __m256 v_f32_min(__m256 x, __m256 y) {
  return ps_nan_if(_mm256_or_ps(_mm256_min_ps(x, y), _mm256_min_ps(y, x)), x, y);
}

AVX2_FN __m256d pd_canon(__m256d r) {
  __m256d qnan = _mm256_castsi256_pd(_mm256_set1_epi64x((long long)COLLIE_F64_QNAN_BITS));
  return _mm256_blendv_pd(r, qnan, _mm256_cmp_pd(r, r, _CMP_UNORD_Q));
}
AVX2_FN __m256d pd_nan_if(__m256d r, __m256d x, __m256d y) {
  __m256d qnan = _mm256_castsi256_pd(_mm256_set1_epi64x((long long)COLLIE_F64_QNAN_BITS));
  return _mm256_blendv_pd(r, qnan, _mm256_cmp_pd(x, y, _CMP_UNORD_Q));
}
AVX2_FN __m256d v_f64_sum(__m256d x, __m256d y) { return pd_canon(_mm256_add_pd(x, y)); }
AVX2_FN __m256d v_f64_prod(__m256d x, __m256d y) { return pd_canon(_mm256_mul_pd(x, y)); }
AVX2_FN __m256d v_f64_max(__m256d x, __m256d y) {
  return pd_nan_if(_mm256_and_pd(_mm256_max_pd(x, y), _mm256_max_pd(y, x)), x, y);
}
AVX2_FN __m256d v_f64_min(__m256d x, __m256d y) {
  return pd_nan_if(_mm256_or_pd(_mm256_min_pd(x, y), _mm256_min_pd(y, x)), x, y);
}

/* Wrap the float ops as __m256i ops, so KERNEL_SI256 drives them too. */
#define AS_SI256(V, CAST_IN, CAST_OUT)                                                    \
  AVX2_FN __m256i V##_si(__m256i x, __m256i y) { return CAST_OUT(V(CAST_IN(x), CAST_IN(y))); }
AS_SI256(v_f32_sum, _mm256_castsi256_ps, _mm256_castps_si256)
AS_SI256(v_f32_prod, _mm256_castsi256_ps, _mm256_castps_si256)
AS_SI256(v_f32_max, _mm256_castsi256_ps, _mm256_castps_si256)
AS_SI256(v_f32_min, _mm256_castsi256_ps, _mm256_castps_si256)
AS_SI256(v_f64_sum, _mm256_castsi256_pd, _mm256_castpd_si256)
AS_SI256(v_f64_prod, _mm256_castsi256_pd, _mm256_castpd_si256)
AS_SI256(v_f64_max, _mm256_castsi256_pd, _mm256_castpd_si256)
AS_SI256(v_f64_min, _mm256_castsi256_pd, _mm256_castpd_si256)

KERNEL_SI256(f32_sum, 4, v_f32_sum_si)
KERNEL_SI256(f32_prod, 4, v_f32_prod_si)
KERNEL_SI256(f32_max, 4, v_f32_max_si)
KERNEL_SI256(f32_min, 4, v_f32_min_si)
KERNEL_SI256(f64_sum, 8, v_f64_sum_si)
KERNEL_SI256(f64_prod, 8, v_f64_prod_si)
KERNEL_SI256(f64_max, 8, v_f64_max_si)
KERNEL_SI256(f64_min, 8, v_f64_min_si)

/* ---- float16 (F16C): 8 elements widened to float32, rounded back to nearest even ---- */
AVX2_FN __m256 f16_load(const unsigned char *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
AVX2_FN void f16_store(unsigned char *p, __m256 v) {
  _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
#define KERNEL_HALF(NAME, LOAD, STORE, OP)                                                   \
  AVX2_KERNEL void NAME(void *dst, const void *a, const void *b, size_t n) {                 \
    unsigned char *d = dst;                                                                  \
    const unsigned char *pa = a, *pb = b;                                                    \
    size_t bytes = n * 2, i = 0;                                                             \
    for (; i + 32 <= bytes; i += 32) {                                                       \
      __m256 r0 = OP(LOAD(pa + i), LOAD(pb + i));                                            \
      __m256 r1 = OP(LOAD(pa + i + 16), LOAD(pb + i + 16));                                  \
      STORE(d + i, r0);                                                                      \
      STORE(d + i + 16, r1);                                                                 \
    }                                                                                        \
    for (; i + 16 <= bytes; i += 16)                                                         \
      STORE(d + i, OP(LOAD(pa + i), LOAD(pb + i)));                                          \
    if (i < bytes) {                                                                         \
      unsigned char ta[16] = {0}, tb[16] = {0}, td[16];                                      \
      memcpy(ta, pa + i, bytes - i);                                                         \
      memcpy(tb, pb + i, bytes - i);                                                         \
      STORE(td, OP(LOAD(ta), LOAD(tb)));                                                     \
      memcpy(d + i, td, bytes - i);                                                          \
    }                                                                                        \
  }

KERNEL_HALF(f16_sum, f16_load, f16_store, v_f32_sum)
KERNEL_HALF(f16_prod, f16_load, f16_store, v_f32_prod)
KERNEL_HALF(f16_max, f16_load, f16_store, v_f32_max)
KERNEL_HALF(f16_min, f16_load, f16_store, v_f32_min)
/* bfloat16, 16 per vector without crossing 128-bit lanes: interleaving zeros below each
 * element widens it to float32 (elements 0-3/8-11 in lo, 4-7/12-15 in hi), and packus of
 * the rounded high halves puts them back in order. */
AVX2_FN __m256i bf16_round(__m256 v) {
  /* v holds no NaN but the canonical one (0x7fc00000), which this rounding keeps intact. */
  __m256i u = _mm256_castps_si256(v);
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  u = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
  return _mm256_srli_epi32(u, 16);
}
#define BF16_OP(V)                                                                           \
  AVX2_FN __m256i V##_bf16(__m256i x, __m256i y) {                                           \
    __m256i zero = _mm256_setzero_si256();                                                   \
    __m256 lo = V(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, x)),                       \
                  _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, y)));                      \
    __m256 hi = V(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, x)),                       \
                  _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, y)));                      \
    return _mm256_packus_epi32(bf16_round(lo), bf16_round(hi));                              \
  }
BF16_OP(v_f32_sum)
BF16_OP(v_f32_prod)
BF16_OP(v_f32_max)
BF16_OP(v_f32_min)
KERNEL_SI256(bf16_sum, 2, v_f32_sum_bf16)
KERNEL_SI256(bf16_prod, 2, v_f32_prod_bf16)
KERNEL_SI256(bf16_max, 2, v_f32_max_bf16)
KERNEL_SI256(bf16_min, 2, v_f32_min_bf16)

collie_reduce_table_t collie_reduce_avx2_table = {
    [COLLIE_INT8] = COLLIE_REDUCE_ROW(u8_sum, u8_prod, i8_max, i8_min),
    [COLLIE_UINT8] = COLLIE_REDUCE_ROW(u8_sum, u8_prod, u8_max, u8_min),
    [COLLIE_INT32] = COLLIE_REDUCE_ROW(u32_sum, u32_prod, i32_max, i32_min),
    [COLLIE_UINT32] = COLLIE_REDUCE_ROW(u32_sum, u32_prod, u32_max, u32_min),
    [COLLIE_INT64] = COLLIE_REDUCE_ROW(u64_sum, u64_prod, i64_max, i64_min),
    [COLLIE_UINT64] = COLLIE_REDUCE_ROW(u64_sum, u64_prod, u64_max, u64_min),
    [COLLIE_FLOAT16] = COLLIE_REDUCE_ROW(f16_sum, f16_prod, f16_max, f16_min),
    [COLLIE_BFLOAT16] = COLLIE_REDUCE_ROW(bf16_sum, bf16_prod, bf16_max, bf16_min),
    [COLLIE_FLOAT32] = COLLIE_REDUCE_ROW(f32_sum, f32_prod, f32_max, f32_min),
    [COLLIE_FLOAT64] = COLLIE_REDUCE_ROW(f64_sum, f64_prod, f64_max, f64_min),
};

#else /* not x86: no AVX2 table */

int collie_reduce_avx2_usable(void) { return 0; }

#endif
