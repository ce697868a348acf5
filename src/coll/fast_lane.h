/* The fast lane of the blocking small all-reduce, reduce, all-gather, reduce-scatter,
 * all-to-all, broadcast and the barrier on one host (fast_lane.c). */
#ifndef COLLIE_FAST_LANE_H
#define COLLIE_FAST_LANE_H

#include <stdbool.h>
#include <stddef.h>

#include "collie.h"

struct collie_op;

/* Whether the repeats of op, a shared-memory collective just prepared, may take the fast
 * lane (the memo keeps the answer, coll/coll.c): an all-reduce or reduce small enough to
 * fold every vector, an all-gather, reduce-scatter, all-to-all or broadcast, or a barrier,
 * in one inline round, not read in place by the peers. */
bool collie_fast_lane_serves(const struct collie_op *op);

/* Runs collie_allreduce's call through the fast lane where it can: true, with its result in
 * *res; false, having changed nothing, where the generic path must run it. */
bool collie_fast_allreduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                           collie_redop_t redop, collie_comm_t *comm, collie_result_t *res);
/* The same for collie_reduce, collie_allgather, collie_reduce_scatter, collie_alltoall,
 * collie_broadcast and collie_barrier. */
bool collie_fast_reduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt, collie_redop_t redop,
                        int root, collie_comm_t *comm, collie_result_t *res);
bool collie_fast_allgather(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                           collie_comm_t *comm, collie_result_t *res);
bool collie_fast_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                                collie_redop_t redop, collie_comm_t *comm, collie_result_t *res);
bool collie_fast_alltoall(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                          collie_comm_t *comm, collie_result_t *res);
bool collie_fast_broadcast(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt, int root,
                           collie_comm_t *comm, collie_result_t *res);
bool collie_fast_barrier(collie_comm_t *comm, collie_result_t *res);

#endif
