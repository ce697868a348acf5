/* Reduction kernels: 5 ops x 10 datatypes, vectorised where the compiler can.
 *
 * fp16 and bf16 are combined in float32 and rounded to nearest even on every store.
 * Integer arithmetic wraps (computed on the unsigned type, so it is defined behaviour).
 * MAX/MIN propagate NaN: if either input is NaN the result is NaN, on every rank alike.
 * Every NaN result is the canonical quiet NaN, and max(-0,+0) = +0, min(-0,+0) = -0 in either
 * order, so results never depend on operand order or on the ISA (details: reduce_impl.h). */
#ifndef COLLIE_REDUCE_H
#define COLLIE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "collie.h"

/* dst[i] = a[i] (op) b[i] for i < count. dst may alias a or b exactly (not partially).
 * AVG reduces as SUM: the division happens once, in collie_reduce_avg_finalize. */
typedef void (*collie_reduce_fn)(void *dst, const void *a, const void *b, size_t count);

collie_reduce_fn collie_reduce_kernel(collie_datatype_t dt, collie_redop_t op);
/* Named collie_reduce_local, not collie_reduce: include/collie.h already declares the public
 * collective collie_reduce(sendbuf, recvbuf, count, dt, op, root, comm). Invalid dt/op: no-op. */
void collie_reduce_local(void *dst, const void *a, const void *b, size_t count, collie_datatype_t dt,
                         collie_redop_t op);

/* AVG: buf[i] /= nranks, once, on the final sum (integers truncate toward zero). */
void collie_reduce_avg_finalize(void *buf, size_t count, collie_datatype_t dt, int nranks);

/* Conversions used by the kernels and by tests (round to nearest even, NaN kept NaN). */
float collie_half_to_float(uint16_t h);
uint16_t collie_float_to_half(float f);
float collie_bf16_to_float(uint16_t b);
uint16_t collie_float_to_bf16(float f);

/* "avx2" or "portable": which implementation collie_reduce_kernel dispatches to. */
const char *collie_reduce_isa(void);

#endif /* COLLIE_REDUCE_H */
