/* Reference arithmetic for coll_check (see coll_ref.h).
 *
 * Exactness, whatever order the library combines the ranks in:
 * - SUM: int8/uint8 take any value and wrap (addition modulo 2^8 is associative, so the
 *   reference computed in 64-bit unsigned arithmetic and truncated is exact); wider integers
 *   stay within max/n so nothing overflows; floats are integers with |v| <= B/n where every
 *   integer up to B is exact in the type (float16: 2047, bfloat16: 255, float32: 2^24-1,
 *   float64: 2^53-1), so every partial sum is exact too.
 * - PROD: mostly 1, a few 2 (only ranks below 10 contribute them, so at most 2^10) and, for
 *   signed types, a few -1: every partial product is a small power of two.
 * - MAX/MIN: any value of the type for integers, integers up to the exact range for floats.
 * - AVG: like SUM but integers also stay within max/n, so the sum never wraps; the
 *   reference is the exact sum divided once (integers truncate toward zero; floats are
 *   divided in double and rounded to nearest even into the type). */
#include "coll_ref.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t fmix(uint64_t z) { /* splitmix64's finalizer */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t cr_hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t x = fmix(a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ 0x2545F4914F6CDD1Dull);
  return fmix(x ^ c * 0x165667B19E3779F9ull ^ (d + 0x27D4EB2F165667C5ull) * 0xD6E8FEB86659FD93ull);
}

int cr_is_float(collie_datatype_t dt) {
  return dt == COLLIE_FLOAT16 || dt == COLLIE_BFLOAT16 || dt == COLLIE_FLOAT32 || dt == COLLIE_FLOAT64;
}

int cr_is_signed(collie_datatype_t dt) {
  return dt == COLLIE_INT8 || dt == COLLIE_INT32 || dt == COLLIE_INT64 || cr_is_float(dt);
}

size_t cr_size(collie_datatype_t dt) {
  switch (dt) {
    case COLLIE_INT8: case COLLIE_UINT8: return 1;
    case COLLIE_FLOAT16: case COLLIE_BFLOAT16: return 2;
    case COLLIE_INT32: case COLLIE_UINT32: case COLLIE_FLOAT32: return 4;
    case COLLIE_INT64: case COLLIE_UINT64: case COLLIE_FLOAT64: return 8;
    default: return 0;
  }
}

static uint64_t mask_of(size_t esz) { return esz >= 8 ? ~0ull : (1ull << (8 * esz)) - 1; }

static int64_t as_signed(uint64_t u) {
  int64_t s;
  memcpy(&s, &u, sizeof(s));
  return s;
}

/* Sign-extends the low esz bytes. */
static int64_t sext(uint64_t bits, size_t esz) {
  if (esz >= 8) return as_signed(bits);
  uint64_t m = 1ull << (8 * esz - 1);
  bits &= mask_of(esz);
  return as_signed((bits ^ m) - m);
}

/* ---- binary floating point formats ------------------------------------------------------ */

typedef struct {
  int p;     /* significand bits including the hidden one */
  int ebits; /* exponent field width */
  int emin;  /* exponent of the smallest normal */
} fmt_t;

static const fmt_t F16 = {11, 5, -14}, BF16 = {8, 8, -126}, F32 = {24, 8, -126};

static uint64_t enc_fmt(double x, fmt_t f) {
  uint64_t sbit = (uint64_t)(signbit(x) ? 1 : 0) << (f.ebits + f.p - 1);
  uint64_t emax_field = (1ull << f.ebits) - 1, hidden = 1ull << (f.p - 1);
  if (isnan(x)) return sbit | (emax_field << (f.p - 1)) | (hidden >> 1);
  double a = fabs(x);
  if (isinf(a)) return sbit | (emax_field << (f.p - 1));
  if (a == 0) return sbit;
  int e;
  frexp(a, &e);
  e -= 1; /* a in [2^e, 2^(e+1)) */
  if (e < f.emin) e = f.emin;
  double scaled = ldexp(a, (f.p - 1) - e); /* exact: a power-of-two scaling */
  double r = nearbyint(scaled);            /* default rounding mode: nearest, ties to even */
  uint64_t m = (uint64_t)r;
  if (m >= (hidden << 1)) { /* rounded up into the next binade */
    m >>= 1;
    e += 1;
  }
  if (m < hidden) return sbit | m; /* subnormal (e == emin) */
  int64_t ef = (int64_t)e - f.emin + 1;
  if (ef >= (int64_t)emax_field) return sbit | (emax_field << (f.p - 1)); /* overflow: infinity */
  return sbit | ((uint64_t)ef << (f.p - 1)) | (m - hidden);
}

static double dec_fmt(uint64_t bits, fmt_t f) {
  uint64_t emax_field = (1ull << f.ebits) - 1, hidden = 1ull << (f.p - 1);
  uint64_t mant = bits & (hidden - 1), ef = (bits >> (f.p - 1)) & emax_field;
  int neg = (int)((bits >> (f.ebits + f.p - 1)) & 1);
  double v;
  if (ef == emax_field) v = mant ? NAN : INFINITY;
  else if (ef == 0) v = ldexp((double)mant, f.emin - (f.p - 1));
  else v = ldexp((double)(mant | hidden), (int)ef - 1 + f.emin - (f.p - 1));
  return neg ? -v : v;
}

uint64_t cr_encode_double(collie_datatype_t dt, double x) {
  switch (dt) {
    case COLLIE_FLOAT16: return enc_fmt(x, F16);
    case COLLIE_BFLOAT16: return enc_fmt(x, BF16);
    case COLLIE_FLOAT32: return enc_fmt(x, F32);
    case COLLIE_FLOAT64: {
      uint64_t b;
      memcpy(&b, &x, 8);
      return b;
    }
    default: return 0;
  }
}

double cr_decode_float(collie_datatype_t dt, uint64_t bits) {
  switch (dt) {
    case COLLIE_FLOAT16: return dec_fmt(bits & 0xffff, F16);
    case COLLIE_BFLOAT16: return dec_fmt(bits & 0xffff, BF16);
    case COLLIE_FLOAT32: return dec_fmt(bits & 0xffffffffull, F32);
    case COLLIE_FLOAT64: {
      double d;
      memcpy(&d, &bits, 8);
      return d;
    }
    default: return 0;
  }
}

uint64_t cr_encode_int(collie_datatype_t dt, int64_t v) {
  if (cr_is_float(dt)) return cr_encode_double(dt, (double)v);
  return (uint64_t)v & mask_of(cr_size(dt));
}

void cr_store(void *p, size_t esz, uint64_t bits) { memcpy(p, &bits, esz); /* little endian */ }

uint64_t cr_load(const void *p, size_t esz) {
  uint64_t b = 0;
  memcpy(&b, p, esz);
  return b;
}

/* ---- inputs -------------------------------------------------------------------------- */

static int64_t srange(uint64_t h, uint64_t R) { /* uniform in [-R, R] */
  uint64_t span = 2 * R + 1;
  return as_signed((span ? h % span : h) - R);
}

static uint64_t urange(uint64_t h, uint64_t R) { return R == ~0ull ? h : h % (R + 1); }

static uint64_t int_max(collie_datatype_t dt) {
  switch (dt) {
    case COLLIE_INT8: return 127;
    case COLLIE_UINT8: return 255;
    case COLLIE_INT32: return 0x7fffffffull;
    case COLLIE_UINT32: return 0xffffffffull;
    case COLLIE_INT64: return 0x7fffffffffffffffull;
    default: return ~0ull;
  }
}

static uint64_t float_sum_bound(collie_datatype_t dt) {
  switch (dt) {
    case COLLIE_FLOAT16: return 2047;
    case COLLIE_BFLOAT16: return 255;
    case COLLIE_FLOAT32: return (1ull << 24) - 1;
    default: return (1ull << 53) - 1;
  }
}

int64_t cr_input(collie_datatype_t dt, collie_redop_t op, int n, int rank, uint64_t h) {
  if (n < 1) n = 1;
  size_t esz = cr_size(dt);
  switch (op) {
    case COLLIE_PROD: {
      unsigned k = (unsigned)(h % 16);
      if (k == 0 && rank < 10) return 2;
      if (k == 1 && cr_is_signed(dt)) return -1;
      return 1;
    }
    case COLLIE_MAX:
    case COLLIE_MIN:
      if (cr_is_float(dt)) return srange(h, float_sum_bound(dt) + 1);
      if (cr_is_signed(dt)) return sext(h, esz);
      return as_signed(h & mask_of(esz));
    case COLLIE_SUM:
      if (dt == COLLIE_INT8) return sext(h, 1);
      if (dt == COLLIE_UINT8) return (int64_t)(h & 0xff);
      /* fall through */
    default: /* AVG and the wider SUMs */
      if (cr_is_float(dt)) return srange(h, float_sum_bound(dt) / (uint64_t)n);
      if (cr_is_signed(dt)) return srange(h, int_max(dt) / (uint64_t)n);
      return as_signed(urange(h, int_max(dt) / (uint64_t)n));
  }
}

uint64_t cr_reduce(collie_datatype_t dt, collie_redop_t op, int n, const int64_t *v) {
  if (cr_is_float(dt)) {
    double acc = (double)v[0];
    for (int r = 1; r < n; r++) {
      double x = (double)v[r];
      switch (op) {
        case COLLIE_PROD: acc *= x; break;
        case COLLIE_MAX: acc = x > acc ? x : acc; break;
        case COLLIE_MIN: acc = x < acc ? x : acc; break;
        default: acc += x; break;
      }
    }
    if (op == COLLIE_AVG) acc /= n;
    return cr_encode_double(dt, acc);
  }
  size_t esz = cr_size(dt);
  if (cr_is_signed(dt)) {
    uint64_t wrap = (uint64_t)v[0];
    int64_t best = v[0];
    for (int r = 1; r < n; r++) {
      switch (op) {
        case COLLIE_PROD: wrap *= (uint64_t)v[r]; break;
        case COLLIE_MAX: best = v[r] > best ? v[r] : best; break;
        case COLLIE_MIN: best = v[r] < best ? v[r] : best; break;
        default: wrap += (uint64_t)v[r]; break;
      }
    }
    if (op == COLLIE_MAX || op == COLLIE_MIN) return (uint64_t)best & mask_of(esz);
    if (op == COLLIE_AVG) return (uint64_t)(as_signed(wrap) / n) & mask_of(esz); /* C truncates toward zero */
    return wrap & mask_of(esz);
  }
  uint64_t acc = (uint64_t)v[0];
  for (int r = 1; r < n; r++) {
    uint64_t x = (uint64_t)v[r];
    switch (op) {
      case COLLIE_PROD: acc *= x; break;
      case COLLIE_MAX: acc = x > acc ? x : acc; break;
      case COLLIE_MIN: acc = x < acc ? x : acc; break;
      default: acc += x; break;
    }
  }
  if (op == COLLIE_AVG) acc /= (uint64_t)n;
  return acc & mask_of(esz);
}

uint64_t cr_raw(collie_datatype_t dt, uint64_t h) { return h & mask_of(cr_size(dt)); }

uint64_t cr_random_float(collie_datatype_t dt, collie_redop_t op, uint64_t h) {
  double x = (double)(h >> 11) * 0x1p-53 * 2.0 - 1.0; /* [-1, 1) */
  if (op == COLLIE_PROD) x = 1.0 + x / 4;
  return cr_encode_double(dt, x);
}

void cr_format(collie_datatype_t dt, uint64_t bits, char *buf, size_t len) {
  size_t esz = cr_size(dt);
  if (cr_is_float(dt))
    snprintf(buf, len, "0x%0*llx (%.9g)", (int)(2 * esz), (unsigned long long)bits, cr_decode_float(dt, bits));
  else if (cr_is_signed(dt))
    snprintf(buf, len, "0x%0*llx (%lld)", (int)(2 * esz), (unsigned long long)bits, (long long)sext(bits, esz));
  else
    snprintf(buf, len, "0x%0*llx (%llu)", (int)(2 * esz), (unsigned long long)bits, (unsigned long long)bits);
}

/* ---- self test ----------------------------------------------------------------------- */

int cr_selftest(void) {
  struct {
    collie_datatype_t dt;
    double x;
    uint64_t bits;
  } known[] = {
      {COLLIE_FLOAT16, 1.0, 0x3c00},          {COLLIE_FLOAT16, -2.0, 0xc000},
      {COLLIE_FLOAT16, 65504.0, 0x7bff},      {COLLIE_FLOAT16, 65520.0, 0x7c00},
      {COLLIE_FLOAT16, 2049.0, 0x6800},       {COLLIE_FLOAT16, 2051.0, 0x6802},
      {COLLIE_FLOAT16, 1.0 / 3, 0x3555},      {COLLIE_FLOAT16, 0x1p-24, 0x0001},
      {COLLIE_FLOAT16, 0x1p-25, 0x0000},      {COLLIE_FLOAT16, 3 * 0x1p-25, 0x0002},
      {COLLIE_FLOAT16, 0x1.ff8p-15, 0x03ff},  {COLLIE_FLOAT16, 0x1.ffcp-15, 0x0400},
      {COLLIE_FLOAT16, -0.0, 0x8000},         {COLLIE_FLOAT16, 0.375, 0x3600},
      {COLLIE_BFLOAT16, 1.0, 0x3f80},         {COLLIE_BFLOAT16, 1.0 / 3, 0x3eab},
      {COLLIE_BFLOAT16, 257.0, 0x4380},       {COLLIE_BFLOAT16, 259.0, 0x4382},
      {COLLIE_BFLOAT16, -255.0, 0xc37f},      {COLLIE_BFLOAT16, 0x1p-133, 0x0001},
      {COLLIE_FLOAT32, 1.0 / 3, 0x3eaaaaab},  {COLLIE_FLOAT32, 16777217.0, 0x4b800000},
      {COLLIE_FLOAT32, 0x1p-149, 0x00000001}, {COLLIE_FLOAT32, 1e39, 0x7f800000},
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
    uint64_t b = cr_encode_double(known[i].dt, known[i].x);
    if (b != known[i].bits) {
      fprintf(stderr, "coll_ref selftest: %s encode(%a) = 0x%llx, expected 0x%llx\n",
              collie_datatype_name(known[i].dt), known[i].x, (unsigned long long)b,
              (unsigned long long)known[i].bits);
      fails++;
    }
  }
  /* float32 against the C conversion (round to nearest even), over many magnitudes. */
  for (uint64_t i = 0; i < 20000; i++) {
    uint64_t h = cr_hash4(i, 1, 2, 3);
    double x = ldexp((double)(h >> 11) * 0x1p-53, (int)(h % 300) - 160) * ((h >> 10) & 1 ? -1 : 1);
    float f = (float)x;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    if (cr_encode_double(COLLIE_FLOAT32, x) != fb) {
      if (fails++ < 5)
        fprintf(stderr, "coll_ref selftest: float32 encode(%a) = 0x%llx, C says 0x%x\n", x,
                (unsigned long long)cr_encode_double(COLLIE_FLOAT32, x), fb);
    }
    /* decode . encode is the identity on every encoding */
    collie_datatype_t fdt[3] = {COLLIE_FLOAT16, COLLIE_BFLOAT16, COLLIE_FLOAT32};
    for (int k = 0; k < 3; k++) {
      uint64_t bits = cr_raw(fdt[k], h);
      double d = cr_decode_float(fdt[k], bits);
      if (isnan(d)) continue;
      if (cr_encode_double(fdt[k], d) != bits && fails++ < 5)
        fprintf(stderr, "coll_ref selftest: %s round trip of 0x%llx failed\n", collie_datatype_name(fdt[k]),
                (unsigned long long)bits);
    }
  }
  return fails;
}
