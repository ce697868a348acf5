/* Datatype and reduction-op names and sizes. */
#include "collie.h"

size_t collie_datatype_size(collie_datatype_t dt) {
  static const size_t sizes[COLLIE_NUM_DATATYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return (unsigned)dt < COLLIE_NUM_DATATYPES ? sizes[dt] : 0;
}

const char *collie_datatype_name(collie_datatype_t dt) {
  static const char *names[COLLIE_NUM_DATATYPES] = {"int8",    "uint8",   "int32",    "uint32",  "int64",
                                                    "uint64",  "float16", "bfloat16", "float32", "float64"};
  return (unsigned)dt < COLLIE_NUM_DATATYPES ? names[dt] : "invalid";
}

const char *collie_redop_name(collie_redop_t op) {
  static const char *names[COLLIE_NUM_OPS] = {"sum", "prod", "max", "min", "avg"};
  return (unsigned)op < COLLIE_NUM_OPS ? names[op] : "invalid";
}
