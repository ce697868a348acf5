/* Algorithms: pure functions from a collective's arguments to one rank's schedule.
 *
 * They know nothing of transports, communicators or pointers: only rank counts, element
 * counts and byte offsets into the abstract send / receive / scratch buffers (sched.h).
 * That is what lets the unit tests verify every one of them symbolically. */
#ifndef COLLIE_ALGO_H
#define COLLIE_ALGO_H

#include <stdbool.h>
#include <stddef.h>

#include "sched/sched.h"

typedef enum {
  COLLIE_COLL_SEND = 0, /* point to point (p2p steps are built by coll/p2p.c) */
  COLLIE_COLL_RECV,
  COLLIE_COLL_ALLREDUCE,
  COLLIE_COLL_BROADCAST,
  COLLIE_COLL_REDUCE,
  COLLIE_COLL_ALLGATHER,
  COLLIE_COLL_ALLGATHERV,
  COLLIE_COLL_REDUCE_SCATTER,
  COLLIE_COLL_REDUCE_SCATTERV,
  COLLIE_COLL_ALLTOALL,
  COLLIE_COLL_ALLTOALLV,
  COLLIE_COLL_SCATTER,
  COLLIE_COLL_GATHER,
  COLLIE_COLL_BARRIER,
  COLLIE_NUM_COLLS
} collie_coll_t;

const char *collie_coll_name(collie_coll_t c); /* "allreduce", ... */

/* Buffer layout conventions, in elements (the schedule works in bytes = elements*elem_size):
 * ALLREDUCE       send[count] -> recv[count]
 * BROADCAST       root: send[count]; every rank: recv[count] (root copies send -> recv)
 * REDUCE          send[count] -> recv[count] at root only
 * ALLGATHER       send[count] -> recv[nranks*count], block r at r*count
 * ALLGATHERV      send[counts[rank]] -> recv, block r of counts[r] at displs[r]
 * REDUCE_SCATTER  send[nranks*count] -> recv[count] (block `rank` of the reduction)
 * REDUCE_SCATTERV send[sum counts] (block r at prefix sum of counts) -> recv[counts[rank]]
 * ALLTOALL        send[nranks*count], block r goes to rank r -> recv[nranks*count], block r came from r
 * ALLTOALLV       send block r: counts[r] at displs[r]; recv block r: counts2[r] at displs2[r]
 * SCATTER         root send[nranks*count], block r -> rank r's recv[count]
 * GATHER          send[count] -> root recv[nranks*count], block r from rank r
 * BARRIER         no data: zero-byte messages only
 *
 * In place (args->in_place): the send buffer aliases the receive buffer as API.md says
 * (allgather: send = recv + rank*count; reduce_scatter: recv = send + rank*count; gather at
 * root: send = recv + root*count; scatter at root: recv = send + root*count; otherwise
 * send = recv). Algorithms must give correct results in both cases; the verifier checks
 * both. A COPY whose source and destination are the same bytes is skipped by the executor. */
typedef struct {
  collie_coll_t coll;
  int nranks, rank, root;
  size_t count;            /* see above; ignored by v-variants where counts is given */
  size_t elem_size;
  const size_t *counts;    /* v-variants: recvcounts (alltoallv: sendcounts)   */
  const size_t *displs;    /* v-variants: displs (alltoallv: sdispls)          */
  const size_t *counts2;   /* alltoallv: recvcounts                            */
  const size_t *displs2;   /* alltoallv: rdispls                               */
  const size_t *matrix;    /* alltoallv, when known: every rank's sendcounts, nranks x nranks,
                              row = sender (only bruck needs it; NULL otherwise) */
  bool in_place;
  /* Reductions: algorithms treat every op alike (the executor knows which op, and
   * divides the final result once for AVG), so no op field is needed here. */
  size_t chunk_bytes;      /* pipelining granularity hint (element aligned)     */
  /* The ranks' hosts, for hierarchical algorithms: group_of[r] is rank r's group (the
   * ranks that reach each other through shared memory, numbered 0.. in order of their
   * lowest rank); ngroups of them. NULL when unknown. */
  const int *group_of;
  int ngroups;
} collie_coll_args_t;

/* Builds the schedule of args->rank into s (initialised by the caller).
 * Returns COLLIE_ERR_INVALID_ARGUMENT when this algorithm cannot serve these arguments
 * (the caller then falls back), COLLIE_ERR_INTERNAL on allocation failure. */
typedef collie_result_t (*collie_algo_fn)(const collie_coll_args_t *args, collie_sched_t *s);

typedef struct {
  collie_coll_t coll;
  const char *name; /* as in COLLIE_ALGO: "ring", "tree", ... */
  collie_algo_fn build; /* NULL: not a schedule but a shared-memory collective (shm_native.h) */
} collie_algo_t;

/* The registry of every (collective, algorithm) pair, terminated by {.name = NULL}. */
extern const collie_algo_t collie_algos[];

const collie_algo_t *collie_algo_find(collie_coll_t coll, const char *name);

#endif /* COLLIE_ALGO_H */
