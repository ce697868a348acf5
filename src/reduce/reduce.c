/* Reduction entry points: choose the kernel table once (AVX2 when the CPU has AVX2 and F16C,
 * unless COLLIE_REDUCE_ISA=portable), and the AVG finalisation. */
#include <stdatomic.h>
#include <stdlib.h>
#include <strings.h>

#include "reduce/half.h"

enum { ISA_UNKNOWN = 0, ISA_PORTABLE = 1, ISA_AVX2 = 2 };
static atomic_int isa_state = ISA_UNKNOWN;

static int select_isa(void) {
  const char *env = getenv("COLLIE_REDUCE_ISA");
  if (env != NULL && strcasecmp(env, "portable") == 0)
    return ISA_PORTABLE;
#ifdef COLLIE_REDUCE_HAVE_AVX2
  if (collie_reduce_avx2_usable())
    return ISA_AVX2;
#endif
  return ISA_PORTABLE;
}

/* Decided on first use; two threads racing here compute the same answer. */
static int current_isa(void) {
  int isa = atomic_load_explicit(&isa_state, memory_order_relaxed);
  if (isa == ISA_UNKNOWN) {
    isa = select_isa();
    atomic_store_explicit(&isa_state, isa, memory_order_relaxed);
  }
  return isa;
}

const char *collie_reduce_isa(void) { return current_isa() == ISA_AVX2 ? "avx2" : "portable"; }

collie_reduce_fn collie_reduce_kernel(collie_datatype_t dt, collie_redop_t op) {
  if ((unsigned)dt >= COLLIE_NUM_DATATYPES || (unsigned)op >= COLLIE_NUM_OPS)
    return NULL;
#ifdef COLLIE_REDUCE_HAVE_AVX2
  if (current_isa() == ISA_AVX2)
    return collie_reduce_avx2_table[dt][op];
#endif
  return collie_reduce_portable_table[dt][op];
}

void collie_reduce_local(void *dst, const void *a, const void *b, size_t count, collie_datatype_t dt,
                         collie_redop_t op) {
  collie_reduce_fn fn = collie_reduce_kernel(dt, op);
  if (fn != NULL && count > 0)
    fn(dst, a, b, count);
}

/* buf[i] = EXPR(v) with v = buf[i] of type T; element access by memcpy (any alignment). */
#define FINALIZE(T, EXPR)                                                                    \
  do {                                                                                       \
    unsigned char *p = buf;                                                                  \
    for (size_t i = 0; i < count; i++, p += sizeof(T)) {                                     \
      T v;                                                                                   \
      memcpy(&v, p, sizeof v);                                                               \
      v = (T)(EXPR);                                                                         \
      memcpy(p, &v, sizeof v);                                                               \
    }                                                                                        \
  } while (0)

void collie_reduce_avg_finalize(void *buf, size_t count, collie_datatype_t dt, int nranks) {
  if (nranks <= 0 || buf == NULL)
    return;
  /* Integers: C division truncates toward zero; nranks > 0 so INT_MIN / -1 cannot occur.
   * Floats: one correctly rounded division; NaN becomes the canonical NaN as in the kernels. */
  const float nf = (float)nranks;
  switch (dt) {
  case COLLIE_INT8: FINALIZE(int8_t, v / nranks); break;
  case COLLIE_UINT8: FINALIZE(uint8_t, v / (unsigned)nranks); break;
  case COLLIE_INT32: FINALIZE(int32_t, v / nranks); break;
  case COLLIE_UINT32: FINALIZE(uint32_t, v / (uint32_t)nranks); break;
  case COLLIE_INT64: FINALIZE(int64_t, v / (int64_t)nranks); break;
  case COLLIE_UINT64: FINALIZE(uint64_t, v / (uint64_t)nranks); break;
  case COLLIE_FLOAT16: FINALIZE(uint16_t, collie_f2h(collie_f32_canon(collie_h2f(v) / nf))); break;
  case COLLIE_BFLOAT16: FINALIZE(uint16_t, collie_f2bf(collie_f32_canon(collie_bf2f(v) / nf))); break;
  case COLLIE_FLOAT32: FINALIZE(float, collie_f32_canon(v / nf)); break;
  case COLLIE_FLOAT64: FINALIZE(double, collie_f64_canon(v / (double)nranks)); break;
  default: break;
  }
}
