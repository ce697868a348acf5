/* Stub: not yet written; every builder here declines, so the caller falls back. */
#include "algo/algo_impl.h"

COLLIE_ALGO_DECL(collie_ring_allreduce) {
  (void)args;
  (void)s;
  return COLLIE_ERR_INVALID_ARGUMENT;
}

COLLIE_ALGO_DECL(collie_ring_allgather) {
  (void)args;
  (void)s;
  return COLLIE_ERR_INVALID_ARGUMENT;
}

COLLIE_ALGO_DECL(collie_ring_reduce_scatter) {
  (void)args;
  (void)s;
  return COLLIE_ERR_INVALID_ARGUMENT;
}
