/* Symbolic verifier for step programs (src/sched/sched.h): builds every rank's schedule
 * with an algorithm's builder and runs them together without processes or real data.
 *
 * Each element of every rank's send, receive and scratch buffer holds a symbolic value:
 * for reductions, the expression tree of the contributions it sums (hash-consed, equal up
 * to operand order; its leaves' rank set kept as intervals) plus the element index they
 * came from; for data movement, the (origin rank, origin index) it is a copy of; otherwise
 * "garbage". Messages are matched in FIFO order per (sender, receiver) pair, a SEND completes
 * only when its receive has started (rendezvous, stricter than any buffering), and ready
 * steps are picked pseudo-randomly from a seed. A run reports:
 *   - malformed steps: bad peer, buffer, alignment, bounds, writes to the send buffer,
 *     dependencies on later steps, self overlapping copies or reductions;
 *   - unmatched messages and length mismatches;
 *   - hazards: two steps of a rank that are not ordered by dependencies and touch
 *     overlapping bytes, one of them writing (in place, send and receive alias exactly);
 *   - double counted or mismatched contributions in reductions, reductions of garbage;
 *   - deadlocks, with every rank's blocked step;
 *   - results that differ from the collective's definition (algo.h), allreduce results
 *     not reduced in the same order on every rank (they would not be bitwise identical),
 *     gaps of v-variants overwritten, and for barriers a rank that can finish before
 *     every rank has started (happens-before over messages). */
#ifndef COLLIE_SCHED_VERIFY_H
#define COLLIE_SCHED_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"

/* One case: a collective, an algorithm and the arguments every rank passes. */
typedef struct {
  collie_coll_t coll;
  const char *algo_name;      /* for messages only                            */
  collie_algo_fn build;
  int nranks, root;
  size_t count;               /* non-v collectives                             */
  bool in_place;
  /* allgatherv / reduce_scatterv: counts[nranks] (and displs[nranks] for allgatherv),
   * the same on every rank. */
  const size_t *counts, *displs;
  /* alltoallv: a2a_counts[src*n + dst] elements go from src to dst; rank r's send block
   * for dst is at a2a_sdispls[r*n + dst], its receive block from src at
   * a2a_rdispls[r*n + src]. In place, the send layout is the receive layout. */
  const size_t *a2a_counts, *a2a_sdispls, *a2a_rdispls;
  size_t elem_size;           /* bytes per element (1 models bytes)              */
  size_t chunk_bytes;         /* passed to the builder                           */
  uint64_t seed;              /* interleaving of ready steps                     */
  /* Hosts for the hierarchical algorithms: group_of[r] is rank r's group, ngroups of them
   * (NULL: unknown, as the flat algorithms ignore it anyway). */
  const int *group_of;
  int ngroups;
} sv_case_t;

typedef enum { SV_OK = 0, SV_DECLINED = 1, SV_FAIL = 2 } sv_status_t;

#define SV_MAX_FAIL 4
#define SV_MSG_LEN 2048

typedef struct {
  int rank;      /* -1 when not about one rank */
  long step;     /* -1 when not about one step */
  char what[SV_MSG_LEN];
} sv_failure_t;

typedef struct {
  int nfail;            /* failures found (only the first SV_MAX_FAIL are kept) */
  sv_failure_t fail[SV_MAX_FAIL];
  uint64_t total_steps; /* over all ranks                                      */
  uint64_t max_steps;   /* of one rank                                         */
} sv_report_t;

/* Runs one case; fills *rep (which it clears first). */
sv_status_t sv_run(const sv_case_t *c, sv_report_t *rep);

/* Elements of send and receive buffers over all ranks (to keep a sweep within memory). */
uint64_t sv_case_elems(const sv_case_t *c);

/* "allreduce ring nranks=5 count=7 root=0 in_place=1 elem=4 chunk=8 seed=2" */
void sv_describe(const sv_case_t *c, char *buf, size_t len);

/* Feeds the verifier deliberately broken schedules (sched_verify_selftest.c); prints one
 * line per miss and returns non-zero if any was not caught as expected. */
int sv_selftest(void);

#endif /* COLLIE_SCHED_VERIFY_H */
