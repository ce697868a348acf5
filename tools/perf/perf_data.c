/* Input values and expected results.
 *
 * Every element of every rank's input is a pure function of (seed, rank, index), so each
 * rank can compute what any other rank sent and hence what it must receive, without
 * communicating. For reductions the values are chosen so that the exact result is
 * representable in every datatype whatever order the library combines them in:
 *   sum, avg: small integers in -3..3 (0..6 unsigned); partial sums of at most 64 nonzero
 *             terms stay below 256, exact even in bfloat16's 8-bit significand;
 *   max, min: integers in -100..100 (0..200 unsigned), exact everywhere;
 *   prod:     +-1 on every rank, times 2 or 1/2 (2 or 3 for integers) on one rank per
 *             element, so every partial product is +-1, +-2 or +-1/2.
 * Integer arithmetic wraps in collie (and modular arithmetic is order-free), so the
 * expected integer results wrap the same way. avg divides the exact sum once, as collie
 * does: integers truncate toward zero; float16/bfloat16 divide in float32 and round once
 * to the type. Collectives that only move data get random bit patterns, which catch
 * misplaced bytes better; all comparisons are bitwise. */
#include <string.h>

#include "perf.h"

/* splitmix64's finaliser: a cheap, well-mixed hash. */
static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t perf_mix(uint64_t x) { return mix64(x); }

static inline uint64_t hash3(uint64_t seed, uint64_t rank, uint64_t idx) {
  return mix64(seed ^ mix64((rank << 40) ^ idx ^ 0x9e3779b97f4a7c15ULL));
}

static int is_float(collie_datatype_t dt) {
  return dt == COLLIE_FLOAT16 || dt == COLLIE_BFLOAT16 || dt == COLLIE_FLOAT32 || dt == COLLIE_FLOAT64;
}
static int is_unsigned(collie_datatype_t dt) {
  return dt == COLLIE_UINT8 || dt == COLLIE_UINT32 || dt == COLLIE_UINT64;
}

/* float32 -> float16, round to nearest even (F. Giesen's float_to_half_fast3_rtne). */
static uint16_t f32_to_f16(float f) {
  uint32_t u, sign;
  memcpy(&u, &f, 4);
  sign = u & 0x80000000u;
  u ^= sign;
  uint16_t o;
  if (u >= (uint32_t)(127 + 16) << 23) {
    o = u > 0x7f800000u ? 0x7e00 : 0x7c00; /* NaN, or too large: infinity */
  } else if (u < (uint32_t)113 << 23) {
    /* Subnormal or zero: adding a magic float aligns the 10 mantissa bits at the bottom,
     * and the FPU's own round-to-nearest-even does the rounding. */
    const uint32_t magic_u = (uint32_t)((127 - 15) + (23 - 10) + 1) << 23;
    float magic, g;
    memcpy(&magic, &magic_u, 4);
    memcpy(&g, &u, 4);
    g += magic;
    memcpy(&u, &g, 4);
    o = (uint16_t)(u - magic_u);
  } else {
    uint32_t odd = (u >> 13) & 1;
    u += ((uint32_t)(15 - 127) << 23) + 0xfff + odd;
    o = (uint16_t)(u >> 13);
  }
  return (uint16_t)(o | (sign >> 16));
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* Stores v (exactly representable in dt) as element k of out. */
static void store_float(collie_datatype_t dt, void *out, size_t k, double v) {
  uint16_t h;
  float f = (float)v;
  switch (dt) {
    case COLLIE_FLOAT16: h = f32_to_f16(f); memcpy((char *)out + 2 * k, &h, 2); break;
    case COLLIE_BFLOAT16: h = f32_to_bf16(f); memcpy((char *)out + 2 * k, &h, 2); break;
    case COLLIE_FLOAT32: memcpy((char *)out + 4 * k, &f, 4); break;
    default: memcpy((char *)out + 8 * k, &v, 8); break;
  }
}

/* Little-endian: the low esz bytes of a 64-bit value are its wrapped narrower value. */
static void store_bits(size_t esz, void *out, size_t k, uint64_t v) {
  memcpy((char *)out + esz * k, &v, esz);
}

/* The reduction inputs described above, as a double (exact for every value used). */
static double value(const perf_ctx_t *c, int rank, uint64_t idx) {
  uint64_t h = hash3(c->seed, (uint64_t)rank, idx);
  int uns = is_unsigned(c->dt);
  switch (c->op) {
    case COLLIE_MAX:
    case COLLIE_MIN: return (double)(h % 201) - (uns ? 0 : 100);
    case COLLIE_PROD: {
      double sign = uns || (h & 1) ? 1.0 : -1.0;
      int designated = (int)(hash3(c->seed, 0xffffff, idx) % (uint64_t)c->nranks) == rank;
      if (!designated) return sign;
      if (is_float(c->dt)) return sign * ((h >> 1) & 1 ? 2.0 : 0.5);
      return sign * ((h >> 1) & 1 ? 2.0 : 3.0);
    }
    default: { /* sum, avg: with many ranks only ~64 are nonzero per element */
      int stride = (c->nranks + 63) / 64;
      if (stride > 1 && (uint64_t)(rank + idx) % (uint64_t)stride) return 0;
      return (double)(h % 7) - (uns ? 0 : 3);
    }
  }
}

void perf_gen(const perf_ctx_t *c, int rank, size_t first, size_t n, void *out) {
  if (c->op == PERF_OP_NONE) {
    for (size_t k = 0; k < n; k++) store_bits(c->esz, out, k, hash3(c->seed, (uint64_t)rank, first + k));
    return;
  }
  for (size_t k = 0; k < n; k++) {
    double v = value(c, rank, first + k);
    if (is_float(c->dt)) store_float(c->dt, out, k, v);
    else store_bits(c->esz, out, k, (uint64_t)(int64_t)v);
  }
}

/* avg of integers: the wrapped sum, read back as the type, divided as collie divides. */
static uint64_t int_avg(collie_datatype_t dt, uint64_t sum, int n) {
  switch (dt) {
    case COLLIE_INT8: return (uint64_t)(int64_t)(int8_t)((int8_t)sum / n);
    case COLLIE_UINT8: return (uint8_t)((uint8_t)sum / (unsigned)n);
    case COLLIE_INT32: return (uint64_t)(int64_t)(int32_t)((int32_t)sum / n);
    case COLLIE_UINT32: return (uint32_t)sum / (uint32_t)n;
    case COLLIE_INT64: return (uint64_t)((int64_t)sum / (int64_t)n);
    default: return sum / (uint64_t)n;
  }
}

static void store_float_avg(collie_datatype_t dt, void *out, size_t k, double sum, int n) {
  if (dt == COLLIE_FLOAT64) {
    double q = sum / (double)n;
    memcpy((char *)out + 8 * k, &q, 8);
    return;
  }
  float q = (float)sum / (float)n; /* one float32 division, then one rounding to dt */
  uint16_t h;
  switch (dt) {
    case COLLIE_FLOAT16: h = f32_to_f16(q); memcpy((char *)out + 2 * k, &h, 2); break;
    case COLLIE_BFLOAT16: h = f32_to_bf16(q); memcpy((char *)out + 2 * k, &h, 2); break;
    default: memcpy((char *)out + 4 * k, &q, 4); break;
  }
}

void perf_gen_reduced(const perf_ctx_t *c, size_t first, size_t n, void *out) {
  const int nr = c->nranks, fl = is_float(c->dt);
  for (size_t k = 0; k < n; k++) {
    const uint64_t idx = first + k;
    double d = value(c, 0, idx);
    uint64_t u = (uint64_t)(int64_t)d; /* integers: modular, like the library */
    for (int r = 1; r < nr; r++) {
      double v = value(c, r, idx);
      uint64_t w = (uint64_t)(int64_t)v;
      switch (c->op) {
        case COLLIE_PROD: d *= v; u *= w; break;
        case COLLIE_MAX: if (v > d) d = v; break;
        case COLLIE_MIN: if (v < d) d = v; break;
        default: d += v; u += w; break;
      }
    }
    if (c->op == COLLIE_MAX || c->op == COLLIE_MIN) u = (uint64_t)(int64_t)d;
    if (fl && c->op == COLLIE_AVG) store_float_avg(c->dt, out, k, d, nr);
    else if (fl) store_float(c->dt, out, k, d);
    else store_bits(c->esz, out, k, c->op == COLLIE_AVG ? int_avg(c->dt, u, nr) : u);
  }
}

size_t perf_count_wrong(const void *got, const void *want, size_t n, size_t esz) {
  if (!n || !memcmp(got, want, n * esz)) return 0;
  size_t wrong = 0;
  for (size_t k = 0; k < n; k++)
    wrong += memcmp((const char *)got + k * esz, (const char *)want + k * esz, esz) != 0;
  return wrong;
}

/* Prefix boundaries of weights 1, 2, ..., n (rotated by shift): rank k of the rotation gets
 * about 2*total*(k+1)/(n*(n+1)) elements. Computed in double, but the ends are pinned so
 * that the parts always add up to total exactly. */
void perf_uneven_split(size_t total, int nranks, int shift, size_t *counts, size_t *displs) {
  const double s = (double)nranks * (nranks + 1) / 2;
  size_t off = 0;
  /* Position p (0..n-1) of rank r in the rotation; boundary b(p) = floor(total*P(p)/S). */
  for (int r = 0; r < nranks; r++) {
    int p = ((r - shift) % nranks + nranks) % nranks;
    double lo = (double)p * (p + 1) / 2, hi = (double)(p + 1) * (p + 2) / 2;
    size_t b0 = p == 0 ? 0 : (size_t)((double)total * (lo / s));
    size_t b1 = p == nranks - 1 ? total : (size_t)((double)total * (hi / s));
    if (b1 < b0) b1 = b0;
    counts[r] = b1 - b0;
  }
  for (int r = 0; r < nranks; r++) {
    if (displs) displs[r] = off;
    off += counts[r];
  }
}
