/* Unit tests for src/reduce: conversions (exhaustive), every datatype x op against a plain
 * reference, portable vs AVX2 bit-identity, AVG finalisation, dispatch. Deterministic. */
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce_impl.h"

#if defined(COLLIE_REDUCE_HAVE_AVX2)
#include <immintrin.h>
#endif

static int failures;
#define CHECK(cond, ...)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      if (++failures <= 40) {                                                                \
        fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);                      \
        fprintf(stderr, __VA_ARGS__);                                                        \
        fputc('\n', stderr);                                                                 \
      }                                                                                      \
    }                                                                                        \
  } while (0)

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t fbits(float f) { return collie_f32_bits(f); }
static float bitsf(uint32_t u) { return collie_f32_from_bits(u); }
static uint64_t dbits(double d) { return collie_f64_bits(d); }
static double bitsd(uint64_t u) { return collie_f64_from_bits(u); }

/* ------------------------------------------------------------------ conversions */

static void test_half_exhaustive(void) {
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
    float f = collie_half_to_float((uint16_t)h);
    if (exp == 31 && mant != 0) {
      CHECK(isnan(f), "h2f(%04x) not NaN", h);
      CHECK(fbits(f) == ((sign << 31) | 0x7fc00000u | (mant << 13)), "h2f(%04x) = %08x", h,
            fbits(f));
      CHECK(collie_float_to_half(f) == (h | 0x200), "NaN %04x round trip", h);
      continue;
    }
    double want = exp == 31 ? INFINITY
                  : exp == 0 ? ldexp((double)mant, -24)
                             : ldexp((double)(mant | 1024), (int)exp - 25);
    if (sign) want = -want;
    CHECK((double)f == want && !!signbit(f) == !!sign, "h2f(%04x) = %a, want %a", h, (double)f,
          want);
    CHECK(collie_float_to_half(f) == h, "round trip %04x -> %04x", h,
          collie_float_to_half(f));
  }
}

static void test_bf16_exhaustive(void) {
  for (uint32_t b = 0; b < 65536; b++) {
    float f = collie_bf16_to_float((uint16_t)b);
    if ((b & 0x7fff) > 0x7f80) {
      CHECK(isnan(f) && fbits(f) == ((b << 16) | 0x400000u), "bf2f(%04x) = %08x", b, fbits(f));
      CHECK(collie_float_to_bf16(f) == (b | 0x40), "NaN %04x round trip", b);
      continue;
    }
    CHECK(fbits(f) == b << 16, "bf2f(%04x) = %08x", b, fbits(f));
    CHECK(collie_float_to_bf16(f) == b, "round trip %04x", b);
  }
}

/* Every float exactly halfway between two adjacent halves rounds to the even one. */
static void test_half_ties(void) {
  for (uint32_t h = 0; h < 0x7c00; h++) {
    double lo = collie_half_to_float((uint16_t)h);
    double hi = h + 1 == 0x7c00 ? 65536.0 : collie_half_to_float((uint16_t)(h + 1));
    double midd = lo + (hi - lo) / 2;
    float mid = (float)midd;
    CHECK((double)mid == midd, "midpoint %04x not exact", h);
    uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    CHECK(collie_float_to_half(mid) == even, "tie above %04x -> %04x", h,
          collie_float_to_half(mid));
    CHECK(collie_float_to_half(-mid) == (even | 0x8000), "tie above -%04x", h);
    CHECK(collie_float_to_half(nextafterf(mid, 0)) == h, "below tie %04x", h);
    CHECK(collie_float_to_half(nextafterf(mid, INFINITY)) == h + 1, "above tie %04x", h);
  }
  CHECK(collie_float_to_half(65520.0f) == 0x7c00, "65520 -> inf");
  CHECK(collie_float_to_half(nextafterf(65520.0f, 0)) == 0x7bff, "just below 65520");
  CHECK(collie_float_to_half(0x1p-25f) == 0x0000, "2^-25 ties to 0");
  CHECK(collie_float_to_half(-0x1p-25f) == 0x8000, "-2^-25 ties to -0");
  CHECK(collie_float_to_half(nextafterf(0x1p-25f, 1)) == 0x0001, "above 2^-25");
  CHECK(collie_float_to_half(0x1.8p-24f) == 0x0002, "1.5 subnormal ulps -> 2");
  CHECK(collie_float_to_half(1e-30f) == 0 && collie_float_to_half(-1e-30f) == 0x8000, "tiny");
  CHECK(collie_float_to_half(INFINITY) == 0x7c00 && collie_float_to_half(-INFINITY) == 0xfc00,
        "inf");
  CHECK(collie_float_to_half(bitsf(0x7f800001u)) == 0x7e00, "sNaN quietened");
  CHECK(collie_float_to_half(bitsf(0xffc12345u)) == 0xfe09, "NaN payload kept");
}

static void test_bf16_ties(void) {
  for (uint32_t b = 0; b < 0x7f80; b++) {
    uint16_t even = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b;
    for (uint32_t s = 0; s < 2; s++) {
      uint32_t sb = s << 31, s16 = s << 15;
      CHECK(collie_float_to_bf16(bitsf(sb | (b << 16) | 0x8000u)) == (even | s16), "tie %04x", b);
      CHECK(collie_float_to_bf16(bitsf(sb | (b << 16) | 0x7fffu)) == (b | s16), "below %04x", b);
      CHECK(collie_float_to_bf16(bitsf(sb | (b << 16) | 0x8001u)) == ((b + 1) | s16),
            "above %04x", b);
    }
  }
  CHECK(collie_float_to_bf16(FLT_MAX) == 0x7f80, "FLT_MAX rounds to inf");
  CHECK(collie_float_to_bf16(bitsf(0x7fffffffu)) == 0x7fff, "NaN stays NaN");
  CHECK(collie_float_to_bf16(bitsf(0xff800001u)) == 0xffc0, "-sNaN quietened");
}

#if defined(COLLIE_REDUCE_HAVE_AVX2)
/* The portable conversions against F16C on random and boundary floats. */
__attribute__((target("avx2,f16c"))) static void f16c_convert(const float *in, uint16_t *out) {
  __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT);
  _mm_storeu_si128((__m128i *)out, h);
}
__attribute__((target("avx2,f16c"))) static void f16c_widen(const uint16_t *in, float *out) {
  _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)in)));
}
static void test_half_vs_f16c(void) {
  if (!collie_reduce_avx2_usable()) return;
  for (uint32_t h = 0; h < 65536; h += 8) {
    uint16_t in[8];
    float out[8];
    for (int k = 0; k < 8; k++) in[k] = (uint16_t)(h + (uint32_t)k);
    f16c_widen(in, out);
    for (int k = 0; k < 8; k++)
      CHECK(fbits(out[k]) == fbits(collie_half_to_float(in[k])), "h2f vs F16C %04x", in[k]);
  }
  for (int iter = 0; iter < (1 << 18); iter++) {
    float in[8];
    uint16_t out[8];
    for (int k = 0; k < 8; k++) {
      uint32_t u = (uint32_t)rnd();
      if (k & 1) u = (u & 0x80000000u) | (0x33000000u + (u % 0x14800000u)); /* half range */
      if (k == 2) u &= ~0xfffu; /* more exact ties / near ties */
      in[k] = bitsf(u);
    }
    f16c_convert(in, out);
    for (int k = 0; k < 8; k++)
      CHECK(out[k] == collie_float_to_half(in[k]), "f2h vs F16C %08x", fbits(in[k]));
  }
}
#endif

/* ------------------------------------------------------------------ reference kernels */

static const size_t esize[COLLIE_NUM_DATATYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
static const char *dt_name[COLLIE_NUM_DATATYPES] = {"int8",    "uint8",    "int32",  "uint32",
                                                    "int64",   "uint64",   "float16", "bfloat16",
                                                    "float32", "float64"};
static const char *op_name[COLLIE_NUM_OPS] = {"sum", "prod", "max", "min", "avg"};

static float ref_f32(collie_redop_t op, float x, float y) {
  float r;
  switch (op) {
  case COLLIE_SUM:
  case COLLIE_AVG: r = (float)((double)x + (double)y); break; /* correctly rounded */
  case COLLIE_PROD: r = (float)((double)x * (double)y); break; /* exact, then rounded */
  case COLLIE_MAX:
    if (isnan(x) || isnan(y)) r = NAN;
    else if (x == y) r = signbit(x) ? y : x;
    else r = x > y ? x : y;
    break;
  default:
    if (isnan(x) || isnan(y)) r = NAN;
    else if (x == y) r = signbit(x) ? x : y;
    else r = x < y ? x : y;
    break;
  }
  return isnan(r) ? bitsf(0x7fc00000u) : r;
}

static double ref_f64(collie_redop_t op, double x, double y) {
  double r;
  switch (op) {
  case COLLIE_SUM:
  case COLLIE_AVG: r = x + y; break;
  case COLLIE_PROD: r = x * y; break;
  case COLLIE_MAX:
    if (isnan(x) || isnan(y)) r = NAN;
    else if (x == y) r = signbit(x) ? y : x;
    else r = x > y ? x : y;
    break;
  default:
    if (isnan(x) || isnan(y)) r = NAN;
    else if (x == y) r = signbit(x) ? x : y;
    else r = x < y ? x : y;
    break;
  }
  return isnan(r) ? bitsd(0x7ff8000000000000ull) : r;
}

/* Signed values as int64, unsigned as uint64; wrap by reduction modulo 2^bits. */
static int64_t ref_signed(collie_redop_t op, int64_t x, int64_t y, int bits) {
  uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1, r;
  switch (op) {
  case COLLIE_SUM:
  case COLLIE_AVG: r = ((uint64_t)x + (uint64_t)y) & mask; break;
  case COLLIE_PROD: r = ((uint64_t)x * (uint64_t)y) & mask; break;
  case COLLIE_MAX: return x > y ? x : y;
  default: return x < y ? x : y;
  }
  if (bits < 64 && (r >> (bits - 1)) & 1) return (int64_t)(r | ~mask); /* sign-extend */
  return (int64_t)r;
}
static uint64_t ref_unsigned(collie_redop_t op, uint64_t x, uint64_t y, int bits) {
  uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  switch (op) {
  case COLLIE_SUM:
  case COLLIE_AVG: return (x + y) & mask;
  case COLLIE_PROD: return (x * y) & mask;
  case COLLIE_MAX: return x > y ? x : y;
  default: return x < y ? x : y;
  }
}

static void ref_elem(collie_datatype_t dt, collie_redop_t op, const void *x, const void *y,
                     void *out) {
  switch (dt) {
  case COLLIE_INT8: {
    int8_t a, b, r;
    memcpy(&a, x, 1), memcpy(&b, y, 1);
    r = (int8_t)ref_signed(op, a, b, 8);
    memcpy(out, &r, 1);
    break;
  }
  case COLLIE_UINT8: {
    uint8_t a, b, r;
    memcpy(&a, x, 1), memcpy(&b, y, 1);
    r = (uint8_t)ref_unsigned(op, a, b, 8);
    memcpy(out, &r, 1);
    break;
  }
  case COLLIE_INT32: {
    int32_t a, b, r;
    memcpy(&a, x, 4), memcpy(&b, y, 4);
    r = (int32_t)ref_signed(op, a, b, 32);
    memcpy(out, &r, 4);
    break;
  }
  case COLLIE_UINT32: {
    uint32_t a, b, r;
    memcpy(&a, x, 4), memcpy(&b, y, 4);
    r = (uint32_t)ref_unsigned(op, a, b, 32);
    memcpy(out, &r, 4);
    break;
  }
  case COLLIE_INT64: {
    int64_t a, b, r;
    memcpy(&a, x, 8), memcpy(&b, y, 8);
    r = ref_signed(op, a, b, 64);
    memcpy(out, &r, 8);
    break;
  }
  case COLLIE_UINT64: {
    uint64_t a, b, r;
    memcpy(&a, x, 8), memcpy(&b, y, 8);
    r = ref_unsigned(op, a, b, 64);
    memcpy(out, &r, 8);
    break;
  }
  case COLLIE_FLOAT16:
  case COLLIE_BFLOAT16: {
    uint16_t a, b, r;
    memcpy(&a, x, 2), memcpy(&b, y, 2);
    if (dt == COLLIE_FLOAT16)
      r = collie_float_to_half(ref_f32(op, collie_half_to_float(a), collie_half_to_float(b)));
    else
      r = collie_float_to_bf16(ref_f32(op, collie_bf16_to_float(a), collie_bf16_to_float(b)));
    memcpy(out, &r, 2);
    break;
  }
  case COLLIE_FLOAT32: {
    float a, b, r;
    memcpy(&a, x, 4), memcpy(&b, y, 4);
    r = ref_f32(op, a, b);
    memcpy(out, &r, 4);
    break;
  }
  default: {
    double a, b, r;
    memcpy(&a, x, 8), memcpy(&b, y, 8);
    r = ref_f64(op, a, b);
    memcpy(out, &r, 8);
    break;
  }
  }
}

/* ------------------------------------------------------------------ input generation */

static const uint64_t edge_i8[] = {0, 1, 0xff, 0x7f, 0x80, 0x7e, 0x81, 2, 0xfe};
static const uint64_t edge_i32[] = {0, 1, 0xffffffff, 0x7fffffff, 0x80000000, 0x7ffffffe,
                                    0x80000001, 0x10000, 0xffff0000};
static const uint64_t edge_i64[] = {0, 1, UINT64_MAX, INT64_MAX, 0x8000000000000000ull,
                                    0x7ffffffffffffffeull, 0x8000000000000001ull,
                                    0x100000000ull, 0xffffffff00000000ull};
static const uint64_t edge_f16[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff,
                                    0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7d01, 0xfe01, 0x3c00,
                                    0xbc00, 0x3c01, 0x3800, 0x0003, 0x1400, 0x5bff};
static const uint64_t edge_bf16[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f,
                                     0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x3f80,
                                     0xbf80, 0x3f81, 0x3b80, 0x3f00, 0x4000, 0x3b81};
static const uint64_t edge_f32[] = {0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x00800000,
                                    0x007fffff, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000,
                                    0x7fc00000, 0x7f800001, 0xffc12345, 0x3f800000, 0xbf800000,
                                    0x3f800001, 0x33800000, 0x1f800000, 0x5f800000};
static const uint64_t edge_f64[] = {0, 0x8000000000000000ull, 1, 0x8000000000000001ull,
                                    0x0010000000000000ull, 0x7fefffffffffffffull,
                                    0xffefffffffffffffull, 0x7ff0000000000000ull,
                                    0xfff0000000000000ull, 0x7ff8000000000000ull,
                                    0x7ff0000000000001ull, 0xfff8000000001234ull,
                                    0x3ff0000000000000ull, 0xbff0000000000000ull,
                                    0x3ff0000000000001ull, 0x2000000000000000ull};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* One random element of dt into out: edge values, a small set with many equal/zero pairs,
 * arbitrary bit patterns, and moderate values whose sums and products round. */
static void gen_elem(collie_datatype_t dt, void *out) {
  uint64_t r = rnd(), kind = r & 7, v = r >> 8;
  static const float small[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 0.5f};
  float mf = (float)((int)(v % 2001) - 1000) * ldexpf(1.0f, (int)((v >> 11) % 21) - 10);
  float sf = small[(v >> 40) % 6];
  switch (dt) {
  case COLLIE_INT8:
  case COLLIE_UINT8: {
    uint8_t x = kind == 0 ? (uint8_t)edge_i8[v % N_OF(edge_i8)] : (uint8_t)v;
    memcpy(out, &x, 1);
    break;
  }
  case COLLIE_INT32:
  case COLLIE_UINT32: {
    uint32_t x = kind == 0 ? (uint32_t)edge_i32[v % N_OF(edge_i32)]
                 : kind == 1 ? (uint32_t)(v % 7) - 3
                             : (uint32_t)rnd();
    memcpy(out, &x, 4);
    break;
  }
  case COLLIE_INT64:
  case COLLIE_UINT64: {
    uint64_t x = kind == 0 ? edge_i64[v % N_OF(edge_i64)] : kind == 1 ? (v % 7) - 3 : rnd();
    memcpy(out, &x, 8);
    break;
  }
  case COLLIE_FLOAT16: {
    uint16_t x = kind == 0   ? (uint16_t)edge_f16[v % N_OF(edge_f16)]
                 : kind == 1 ? collie_float_to_half(sf)
                 : kind <= 3 ? (uint16_t)v
                             : collie_float_to_half(mf);
    memcpy(out, &x, 2);
    break;
  }
  case COLLIE_BFLOAT16: {
    uint16_t x = kind == 0   ? (uint16_t)edge_bf16[v % N_OF(edge_bf16)]
                 : kind == 1 ? collie_float_to_bf16(sf)
                 : kind <= 3 ? (uint16_t)v
                             : collie_float_to_bf16(mf);
    memcpy(out, &x, 2);
    break;
  }
  case COLLIE_FLOAT32: {
    float x = kind == 0   ? bitsf((uint32_t)edge_f32[v % N_OF(edge_f32)])
              : kind == 1 ? sf
              : kind == 2 ? bitsf((uint32_t)rnd())
                          : mf * (1.0f + (float)(v >> 44) * 0x1p-20f);
    memcpy(out, &x, 4);
    break;
  }
  default: {
    double x = kind == 0   ? bitsd(edge_f64[v % N_OF(edge_f64)])
               : kind == 1 ? (double)sf
               : kind == 2 ? bitsd(rnd())
                           : (double)mf * (1.0 + (double)(v >> 20) * 0x1p-44);
    memcpy(out, &x, 8);
    break;
  }
  }
}

/* ------------------------------------------------------------------ kernel tests */

#define MAXN 4099
#define PAD 64
static unsigned char buf_a[MAXN * 8 + 2 * PAD], buf_b[MAXN * 8 + 2 * PAD];
static unsigned char buf_d[MAXN * 8 + 2 * PAD], buf_ref[MAXN * 8];

/* Runs fn on (a, b) and on the aliased forms dst == a and dst == b; checks against ref and
 * that nothing outside dst[0, count) changed. a/b/dst are inside buf_a/buf_b/buf_d. */
static void run_and_compare(const char *impl, collie_reduce_fn fn, collie_datatype_t dt,
                            collie_redop_t op, unsigned char *a, unsigned char *b, size_t count,
                            size_t doff) {
  size_t bytes = count * esize[dt];
  unsigned char *d = buf_d + doff;
  unsigned char saved_a[MAXN * 8], saved_b[MAXN * 8];
  memcpy(saved_a, a, bytes), memcpy(saved_b, b, bytes);
  for (int mode = 0; mode < 3; mode++) {
    memset(buf_d, 0xa5, sizeof buf_d);
    if (mode == 0) fn(d, a, b, count);
    if (mode == 1) memcpy(d, a, bytes), fn(d, d, b, count);
    if (mode == 2) memcpy(d, b, bytes), fn(d, a, d, count);
    size_t bad = SIZE_MAX;
    for (size_t i = 0; i < bytes && bad == SIZE_MAX; i++)
      if (d[i] != buf_ref[i]) bad = i / esize[dt];
    if (bad != SIZE_MAX) {
      uint64_t x = 0, y = 0, got = 0, want = 0;
      memcpy(&x, a + bad * esize[dt], esize[dt]), memcpy(&y, b + bad * esize[dt], esize[dt]);
      memcpy(&got, d + bad * esize[dt], esize[dt]);
      memcpy(&want, buf_ref + bad * esize[dt], esize[dt]);
      CHECK(0, "%s %s %s count=%zu alias=%d [%zu]: %" PRIx64 " op %" PRIx64 " = %" PRIx64
               ", want %" PRIx64, impl, dt_name[dt], op_name[op], count, mode, bad, x, y, got, want);
    }
    int guard_ok = 1;
    for (size_t i = 0; i < doff; i++) guard_ok &= buf_d[i] == 0xa5;
    for (size_t i = doff + bytes; i < sizeof buf_d; i++) guard_ok &= buf_d[i] == 0xa5;
    CHECK(guard_ok, "%s %s %s count=%zu: wrote outside dst", impl, dt_name[dt], op_name[op],
          count);
    CHECK(memcmp(a, saved_a, bytes) == 0 && memcmp(b, saved_b, bytes) == 0,
          "%s %s %s: inputs modified", impl, dt_name[dt], op_name[op]);
  }
}

static void test_kernels_random(void) {
  static const size_t counts[] = {0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, MAXN};
  int avx2 = collie_reduce_avx2_usable();
  for (int dt = 0; dt < COLLIE_NUM_DATATYPES; dt++) {
    for (int op = 0; op < COLLIE_NUM_OPS; op++) {
      for (size_t ci = 0; ci < N_OF(counts); ci++) {
        size_t count = counts[ci], es = esize[dt];
        size_t aoff = (ci * 3) % 17, boff = (ci * 5 + 1) % 13, doff = (ci * 7 + 3) % 11;
        unsigned char *a = buf_a + PAD + aoff, *b = buf_b + PAD + boff;
        for (size_t i = 0; i < count; i++) {
          gen_elem((collie_datatype_t)dt, a + i * es);
          gen_elem((collie_datatype_t)dt, b + i * es);
          ref_elem((collie_datatype_t)dt, (collie_redop_t)op, a + i * es, b + i * es,
                   buf_ref + i * es);
        }
        run_and_compare("portable", collie_reduce_portable_table[dt][op], (collie_datatype_t)dt,
                        (collie_redop_t)op, a, b, count, PAD + doff);
#if defined(COLLIE_REDUCE_HAVE_AVX2)
        if (avx2)
          run_and_compare("avx2", collie_reduce_avx2_table[dt][op], (collie_datatype_t)dt,
                          (collie_redop_t)op, a, b, count, PAD + doff);
#else
        (void)avx2;
#endif
        run_and_compare("dispatch", collie_reduce_kernel((collie_datatype_t)dt, (collie_redop_t)op),
                        (collie_datatype_t)dt, (collie_redop_t)op, a, b, count, PAD + doff);
      }
    }
  }
}

/* A few results spelled out, so the rules do not rest on the reference alone. */
struct fixed_case {
  collie_datatype_t dt;
  collie_redop_t op;
  uint64_t a, b, want;
};
static const struct fixed_case fixed[] = {
    {COLLIE_INT8, COLLIE_SUM, 0x7f, 0x01, 0x80},     /* 127 + 1 wraps to -128 */
    {COLLIE_INT8, COLLIE_PROD, 0x80, 0xff, 0x80},    /* -128 * -1 wraps to -128 */
    {COLLIE_INT8, COLLIE_MAX, 0x80, 0x7f, 0x7f},
    {COLLIE_UINT8, COLLIE_MAX, 0x80, 0x7f, 0x80},
    {COLLIE_UINT8, COLLIE_PROD, 200, 2, 144},
    {COLLIE_INT32, COLLIE_SUM, 0x7fffffff, 1, 0x80000000},
    {COLLIE_INT32, COLLIE_MIN, 0x80000000, 0x7fffffff, 0x80000000},
    {COLLIE_UINT32, COLLIE_MIN, 0x80000000, 0x7fffffff, 0x7fffffff},
    {COLLIE_INT64, COLLIE_SUM, 0x8000000000000000ull, UINT64_MAX, INT64_MAX},
    {COLLIE_INT64, COLLIE_PROD, 0x100000001ull, 0x100000001ull, 0x200000001ull},
    {COLLIE_INT64, COLLIE_MAX, UINT64_MAX, 0, 0},
    {COLLIE_UINT64, COLLIE_MAX, UINT64_MAX, 0, UINT64_MAX},
    {COLLIE_FLOAT32, COLLIE_MAX, 0x80000000, 0x00000000, 0x00000000}, /* max(-0,+0) = +0 */
    {COLLIE_FLOAT32, COLLIE_MAX, 0x00000000, 0x80000000, 0x00000000},
    {COLLIE_FLOAT32, COLLIE_MIN, 0x00000000, 0x80000000, 0x80000000}, /* min(+0,-0) = -0 */
    {COLLIE_FLOAT32, COLLIE_MIN, 0x80000000, 0x00000000, 0x80000000},
    {COLLIE_FLOAT32, COLLIE_MAX, 0xffc12345, 0x3f800000, 0x7fc00000}, /* NaN wins, canonical */
    {COLLIE_FLOAT32, COLLIE_MAX, 0x3f800000, 0x7f800001, 0x7fc00000},
    {COLLIE_FLOAT32, COLLIE_MIN, 0xff800000, 0x7fc00001, 0x7fc00000},
    {COLLIE_FLOAT32, COLLIE_SUM, 0x7f800000, 0xff800000, 0x7fc00000}, /* not x86's 0xffc00000 */
    {COLLIE_FLOAT32, COLLIE_SUM, 0x80000000, 0x80000000, 0x80000000},
    {COLLIE_FLOAT32, COLLIE_SUM, 0x80000000, 0x00000000, 0x00000000},
    {COLLIE_FLOAT64, COLLIE_MAX, 0x8000000000000000ull, 0, 0},
    {COLLIE_FLOAT64, COLLIE_MIN, 0, 0x8000000000000000ull, 0x8000000000000000ull},
    {COLLIE_FLOAT64, COLLIE_PROD, 0, 0x7ff0000000000000ull, 0x7ff8000000000000ull},
    {COLLIE_FLOAT16, COLLIE_SUM, 0x7bff, 0x7bff, 0x7c00},   /* overflow to inf */
    {COLLIE_FLOAT16, COLLIE_SUM, 0x0001, 0x0001, 0x0002},   /* subnormals */
    {COLLIE_FLOAT16, COLLIE_SUM, 0x03ff, 0x0001, 0x0400},   /* into the normals */
    {COLLIE_FLOAT16, COLLIE_PROD, 0x0001, 0x3800, 0x0000},  /* 2^-25: tie to even 0 */
    {COLLIE_FLOAT16, COLLIE_PROD, 0x0003, 0x3800, 0x0002},  /* 1.5 ulp: tie to even 2 */
    {COLLIE_FLOAT16, COLLIE_SUM, 0x3c00, 0x1000, 0x3c00},   /* 1 + 2^-11: tie to even 1 */
    {COLLIE_FLOAT16, COLLIE_SUM, 0x3c01, 0x1000, 0x3c02},
    {COLLIE_FLOAT16, COLLIE_MAX, 0x7d01, 0x3c00, 0x7e00},   /* NaN, canonical */
    {COLLIE_FLOAT16, COLLIE_MIN, 0x8000, 0x0000, 0x8000},
    {COLLIE_FLOAT16, COLLIE_MAX, 0x8000, 0x0000, 0x0000},
    {COLLIE_BFLOAT16, COLLIE_SUM, 0x3f80, 0x3b80, 0x3f80},  /* 1 + 2^-8: tie to even 1 */
    {COLLIE_BFLOAT16, COLLIE_SUM, 0x3f81, 0x3b80, 0x3f82},
    {COLLIE_BFLOAT16, COLLIE_SUM, 0x7f7f, 0x7f7f, 0x7f80},
    {COLLIE_BFLOAT16, COLLIE_MIN, 0xffc1, 0x3f80, 0x7fc0},
    {COLLIE_BFLOAT16, COLLIE_PROD, 0x7f80, 0x0000, 0x7fc0},
    {COLLIE_BFLOAT16, COLLIE_MAX, 0x8000, 0x0000, 0x0000},
};

static void test_fixed_cases(void) {
  collie_reduce_table_t *tables[2] = {&collie_reduce_portable_table, NULL};
  const char *names[2] = {"portable", "avx2"};
#if defined(COLLIE_REDUCE_HAVE_AVX2)
  if (collie_reduce_avx2_usable()) tables[1] = &collie_reduce_avx2_table;
#endif
  for (size_t c = 0; c < N_OF(fixed); c++) {
    const struct fixed_case *fc = &fixed[c];
    size_t es = esize[fc->dt];
    for (int t = 0; t < 2; t++) {
      if (tables[t] == NULL) continue;
      for (size_t n = 1; n <= 37; n += 12) { /* 1, 13, 25, 37: tail and vector body */
        unsigned char a[37 * 8], b[37 * 8], d[37 * 8];
        for (size_t i = 0; i < n; i++) memcpy(a + i * es, &fc->a, es), memcpy(b + i * es, &fc->b, es);
        (*tables[t])[fc->dt][fc->op](d, a, b, n);
        for (size_t i = 0; i < n; i++) {
          uint64_t got = 0;
          memcpy(&got, d + i * es, es);
          CHECK(got == fc->want, "%s case %zu (%s %s %" PRIx64 ", %" PRIx64 ") n=%zu [%zu] = %" PRIx64
                ", want %" PRIx64, names[t], c, dt_name[fc->dt], op_name[fc->op], fc->a, fc->b, n,
                i, got, fc->want);
        }
      }
    }
  }
}

/* ------------------------------------------------------------------ AVG finalize */

static void test_avg_finalize(void) {
  { /* buffers deliberately one byte off alignment */
    unsigned char raw[8 * 8 + 1];
    int8_t i8[] = {-7, 7, -128, 127, -1, 0, 5, -5}, w8[] = {-2, 2, -42, 42, 0, 0, 1, -1};
    memcpy(raw + 1, i8, sizeof i8);
    collie_reduce_avg_finalize(raw + 1, 8, COLLIE_INT8, 3);
    CHECK(memcmp(raw + 1, w8, sizeof w8) == 0, "int8 avg truncates toward zero");
    uint8_t u8[] = {255, 7, 1}, wu8[] = {127, 3, 0};
    collie_reduce_avg_finalize(u8, 3, COLLIE_UINT8, 2);
    CHECK(memcmp(u8, wu8, sizeof u8) == 0, "uint8 avg");
    int32_t i32[] = {INT32_MIN, INT32_MAX, -7, 7, -1}, w32[] = {-715827882, 715827882, -2, 2, 0};
    memcpy(raw + 1, i32, sizeof i32);
    collie_reduce_avg_finalize(raw + 1, 5, COLLIE_INT32, 3);
    CHECK(memcmp(raw + 1, w32, sizeof w32) == 0, "int32 avg");
    uint32_t u32[] = {UINT32_MAX, 10}, wu32[] = {1431655765u, 3};
    collie_reduce_avg_finalize(u32, 2, COLLIE_UINT32, 3);
    CHECK(memcmp(u32, wu32, sizeof u32) == 0, "uint32 avg");
    int64_t i64[] = {INT64_MIN, INT64_MAX, -9, 9}, w64[] = {INT64_MIN / 4, INT64_MAX / 4, -2, 2};
    memcpy(raw + 1, i64, sizeof i64);
    collie_reduce_avg_finalize(raw + 1, 4, COLLIE_INT64, 4);
    CHECK(memcmp(raw + 1, w64, sizeof w64) == 0, "int64 avg");
    CHECK(w64[0] == -2305843009213693952ll && w64[2] == -2, "int64 expectations");
    uint64_t u64[] = {UINT64_MAX, 5}, wu64[] = {6148914691236517205ull, 1};
    collie_reduce_avg_finalize(u64, 2, COLLIE_UINT64, 3);
    CHECK(memcmp(u64, wu64, sizeof u64) == 0, "uint64 avg");
    int32_t one[] = {-5};
    collie_reduce_avg_finalize(one, 1, COLLIE_INT32, 1);
    CHECK(one[0] == -5, "nranks 1");
    collie_reduce_avg_finalize(one, 1, COLLIE_INT32, 0); /* invalid: no-op, no crash */
    CHECK(one[0] == -5, "nranks 0 no-op");
  }
  {
    float f[] = {1.0f, -3.0f, 0.0f, -0.0f, INFINITY, bitsf(0xffc12345u), 6.0f};
    collie_reduce_avg_finalize(f, 7, COLLIE_FLOAT32, 3);
    CHECK(fbits(f[0]) == fbits(1.0f / 3.0f) && f[1] == -1.0f, "float32 avg");
    CHECK(fbits(f[2]) == 0 && fbits(f[3]) == 0x80000000u && f[4] == INFINITY, "float32 avg zeros");
    CHECK(fbits(f[5]) == 0x7fc00000u && f[6] == 2.0f, "float32 avg NaN canonical");
    double d[] = {1.0, -7.0, bitsd(0xfff0000000000001ull)};
    collie_reduce_avg_finalize(d, 3, COLLIE_FLOAT64, 3);
    CHECK(dbits(d[0]) == dbits(1.0 / 3.0) && dbits(d[2]) == 0x7ff8000000000000ull, "float64 avg");
    CHECK(d[1] == -7.0 / 3.0, "float64 avg neg");
    uint16_t h[] = {0x3c00, 0xc200, 0x0003, 0x7c00, 0x7d01, 0x0001};
    collie_reduce_avg_finalize(h, 6, COLLIE_FLOAT16, 3); /* 1/3, -1, 1 ulp, inf, NaN, 1/3 ulp */
    CHECK(h[0] == 0x3555 && h[1] == 0xbc00 && h[2] == 0x0001 && h[3] == 0x7c00 &&
              h[4] == 0x7e00 && h[5] == 0x0000,
          "float16 avg %04x %04x %04x %04x %04x %04x", h[0], h[1], h[2], h[3], h[4], h[5]);
    uint16_t bf[] = {0x3f80, 0xc040, 0x7f81};
    collie_reduce_avg_finalize(bf, 3, COLLIE_BFLOAT16, 3);
    CHECK(bf[0] == 0x3eab && bf[1] == 0xbf80 && bf[2] == 0x7fc0, "bfloat16 avg %04x %04x %04x",
          bf[0], bf[1], bf[2]);
  }
}

/* ------------------------------------------------------------------ dispatch */

static void test_dispatch(void) {
  const char *isa = collie_reduce_isa();
  const char *env = getenv("COLLIE_REDUCE_ISA");
  int forced_portable = env != NULL && strcmp(env, "portable") == 0;
  CHECK(strcmp(isa, "avx2") == 0 || strcmp(isa, "portable") == 0, "isa %s", isa);
  int want_avx2 = !forced_portable && collie_reduce_avx2_usable();
  CHECK(strcmp(isa, want_avx2 ? "avx2" : "portable") == 0, "isa %s (env %s)", isa,
        env ? env : "unset");
  for (int dt = 0; dt < COLLIE_NUM_DATATYPES; dt++) {
    for (int op = 0; op < COLLIE_NUM_OPS; op++) {
      collie_reduce_fn fn = collie_reduce_kernel((collie_datatype_t)dt, (collie_redop_t)op);
      CHECK(fn != NULL, "no kernel %d %d", dt, op);
#if defined(COLLIE_REDUCE_HAVE_AVX2)
      if (want_avx2) CHECK(fn == collie_reduce_avx2_table[dt][op], "not avx2 %d %d", dt, op);
#endif
      if (!want_avx2) CHECK(fn == collie_reduce_portable_table[dt][op], "not portable %d %d", dt, op);
    }
    CHECK(collie_reduce_kernel((collie_datatype_t)dt, COLLIE_AVG) ==
              collie_reduce_kernel((collie_datatype_t)dt, COLLIE_SUM),
          "AVG kernel is not SUM");
  }
  CHECK(collie_reduce_kernel(COLLIE_NUM_DATATYPES, COLLIE_SUM) == NULL, "bad dt");
  CHECK(collie_reduce_kernel((collie_datatype_t)-1, COLLIE_SUM) == NULL, "negative dt");
  CHECK(collie_reduce_kernel(COLLIE_FLOAT32, COLLIE_NUM_OPS) == NULL, "bad op");
  float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, d[3] = {0, 0, 0};
  collie_reduce_local(d, a, b, 3, COLLIE_FLOAT32, COLLIE_SUM);
  CHECK(d[0] == 5 && d[1] == 7 && d[2] == 9, "collie_reduce_local");
  collie_reduce_local(d, a, b, 3, COLLIE_NUM_DATATYPES, COLLIE_SUM);
  collie_reduce_local(d, a, b, 3, COLLIE_FLOAT32, COLLIE_NUM_OPS);
  collie_reduce_local(NULL, NULL, NULL, 0, COLLIE_FLOAT32, COLLIE_SUM);
  CHECK(d[0] == 5 && d[1] == 7 && d[2] == 9, "invalid collie_reduce_local wrote");
  printf("reduce isa: %s\n", isa);
}

int main(void) {
  test_half_exhaustive();
  test_bf16_exhaustive();
  test_half_ties();
  test_bf16_ties();
#if defined(COLLIE_REDUCE_HAVE_AVX2)
  test_half_vs_f16c();
#endif
  test_fixed_cases();
  test_kernels_random();
  test_avg_finalize();
  test_dispatch();
  if (failures) {
    fprintf(stderr, "test_reduce: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_reduce: all passed\n");
  return 0;
}
