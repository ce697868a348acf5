/* A small per-communicator cache of built schedules: training loops call the same
 * collective with the same shape over and over, and a schedule depends only on the shape
 * (not on the buffer addresses), so it is built once and reused. */
#ifndef COLLIE_SCHED_CACHE_H
#define COLLIE_SCHED_CACHE_H

#include "algo/algo.h"
#include "core/comm.h"

#define COLLIE_SCHED_CACHE_SIZE 16

typedef struct collie_sched_cache collie_sched_cache_t;

/* Under comm->lock. Returns the cached schedule of this shape and algorithm (and counts
 * one more user of it), or NULL. */
collie_sched_t *collie_sched_cache_get(collie_comm_t *comm, const collie_coll_args_t *args, const collie_algo_t *algo,
                                       int **users);
/* Under comm->lock. Takes ownership of s; returns a users counter, or NULL when the cache
 * is full of schedules in use (the caller then keeps ownership). */
int *collie_sched_cache_put(collie_comm_t *comm, const collie_coll_args_t *args, const collie_algo_t *algo,
                            collie_sched_t *s);
void collie_sched_cache_free(collie_comm_t *comm);

#endif
