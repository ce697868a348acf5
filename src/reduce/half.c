/* The exported float16/bfloat16 conversions; the bit-level code is in half.h. */
#include "reduce/half.h"

float collie_half_to_float(uint16_t h) { return collie_h2f(h); }
uint16_t collie_float_to_half(float f) { return collie_f2h(f); }
float collie_bf16_to_float(uint16_t b) { return collie_bf2f(b); }
uint16_t collie_float_to_bf16(float f) { return collie_f2bf(f); }
