/* Stub: not yet written; every builder here declines, so the caller falls back. */
#include "algo/algo_impl.h"

COLLIE_ALGO_DECL(collie_rd_allreduce) {
  (void)args;
  (void)s;
  return COLLIE_ERR_INVALID_ARGUMENT;
}

COLLIE_ALGO_DECL(collie_hd_allreduce) {
  (void)args;
  (void)s;
  return COLLIE_ERR_INVALID_ARGUMENT;
}

COLLIE_ALGO_DECL(collie_rd_allgather) {
  (void)args;
  (void)s;
  return COLLIE_ERR_INVALID_ARGUMENT;
}

COLLIE_ALGO_DECL(collie_hd_reduce_scatter) {
  (void)args;
  (void)s;
  return COLLIE_ERR_INVALID_ARGUMENT;
}
