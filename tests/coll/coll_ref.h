/* Reference arithmetic for coll_check: exact inputs, locally computed expected results and
 * round-to-nearest-even encoders for float16 / bfloat16 / float32 written independently of
 * the library (src/ is deliberately not used).
 *
 * Every element is handled as a 64-bit "bits" word holding the element's encoding in its low
 * esz bytes (little endian, as the machine stores it). */
#ifndef COLL_REF_H
#define COLL_REF_H

#include <stddef.h>
#include <stdint.h>

#include "collie.h"

/* splitmix64 over a few words: the source of every input value. */
uint64_t cr_hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d);

int cr_is_float(collie_datatype_t dt);
int cr_is_signed(collie_datatype_t dt); /* floats count as signed */
size_t cr_size(collie_datatype_t dt);

/* Encodings. cr_encode_double rounds to nearest, ties to even (floats); integers are not
 * handled there. cr_encode_int stores an integer exactly (floats: the value must be exactly
 * representable, which the generators guarantee) or truncated modulo 2^bits (integers). */
uint64_t cr_encode_double(collie_datatype_t dt, double x);
uint64_t cr_encode_int(collie_datatype_t dt, int64_t v);
double cr_decode_float(collie_datatype_t dt, uint64_t bits);

void cr_store(void *p, size_t esz, uint64_t bits);
uint64_t cr_load(const void *p, size_t esz);

/* Reduction inputs: the value rank `rank` contributes for a hash h, chosen so that the
 * reduction of n ranks is exact in dt for op in any order (see coll_ref.c). Signed and float
 * types: the integer value; unsigned types: the value as uint64 stored in an int64. */
int64_t cr_input(collie_datatype_t dt, collie_redop_t op, int n, int rank, uint64_t h);

/* Reference reduction of n inputs (as from cr_input) into dt's encoding. */
uint64_t cr_reduce(collie_datatype_t dt, collie_redop_t op, int n, const int64_t *vals);

/* Data-movement inputs: any bit pattern of the type (NaNs, infinities, subnormals included). */
uint64_t cr_raw(collie_datatype_t dt, uint64_t h);

/* Inputs for the order-sensitive determinism checks: random non-integer floats. */
uint64_t cr_random_float(collie_datatype_t dt, collie_redop_t op, uint64_t h);

/* "0x3c00 (1)" style rendering of one element. */
void cr_format(collie_datatype_t dt, uint64_t bits, char *buf, size_t len);

/* Checks the encoders against known values and the C float conversion; returns the number of
 * failures (printed to stderr). */
int cr_selftest(void);

#endif /* COLL_REF_H */
