/* float16 (IEEE binary16) and bfloat16 <-> float32, bit by bit, inline for the portable
 * kernels (half.c exports them as collie_half_to_float etc.). Round to nearest even; NaNs
 * stay NaN, are quietened and keep the payload bits that fit, exactly as F16C does. */
#ifndef COLLIE_REDUCE_HALF_H
#define COLLIE_REDUCE_HALF_H

#include "reduce/reduce_impl.h"

static inline float collie_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) { /* inf, or NaN made quiet */
    uint32_t quiet = mant ? 0x00400000u : 0;
    return collie_f32_from_bits(sign | 0x7f800000u | quiet | (mant << 13));
  }
  if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact and normal in float32 */
    float mag = (float)mant * 0x1p-24f;
    return collie_f32_from_bits(sign | collie_f32_bits(mag));
  }
  return collie_f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline uint16_t collie_f2h(float f) {
  uint32_t u = collie_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) /* NaN: quiet, top payload bits */
    return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
  if (u >= 0x477ff000u) /* >= 65520, halfway past the largest half (65504): to inf */
    return (uint16_t)(sign | 0x7c00u);
  if (u >= 0x38800000u) { /* normal half: rebias, drop 13 bits, round to nearest even */
    uint32_t h = (u - 0x38000000u) >> 13;
    uint32_t rest = u & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
      h++; /* a carry into the exponent is the right answer */
    return (uint16_t)(sign | h);
  }
  if (u <= 0x33000000u) /* <= 2^-25: half of the smallest subnormal, ties to even (0) */
    return sign;
  /* subnormal half: value / 2^-24 = mant * 2^(e - 126), e in [102, 112], shift 14..24 */
  uint32_t e = u >> 23;
  uint32_t mant = (u & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e;
  uint32_t h = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (h & 1u)))
    h++; /* 0x3ff + 1 = 0x400 is the smallest normal: also right */
  return (uint16_t)(sign | h);
}

static inline float collie_bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  if ((u & 0x7fffffffu) > 0x7f800000u)
    u |= 0x00400000u; /* quiet a signalling NaN */
  return collie_f32_from_bits(u);
}

static inline uint16_t collie_f2bf(float f) {
  uint32_t u = collie_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x0040u);
  /* Round to nearest even on the 16 dropped bits; overflow carries to inf correctly. */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#endif /* COLLIE_REDUCE_HALF_H */
