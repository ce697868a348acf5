/* The step program: what one rank does for one operation, as data.
 *
 * An algorithm (src/algo/) turns a collective's arguments into a schedule for one rank;
 * the executor (sched/executor.c) runs it over the transports, and the unit tests run it
 * symbolically for every rank count without starting a process. Because it is plain data
 * it can be cached and re-run with other buffer pointers.
 *
 * Rules every schedule obeys (the executor and the verifier rely on them):
 * - Offsets and lengths are in bytes, relative to one of three buffers: the user's send
 *   buffer, the user's receive buffer, or a scratch buffer of sched->scratch_bytes that the
 *   executor provides. Reductions and every chunk boundary are element aligned.
 * - Messages between two ranks are matched in order: the k-th SEND step to peer p (in step
 *   index order) meets the k-th RECV/RECV_REDUCE step from this rank on p. Lengths agree.
 * - A step starts only when every step listed in its dependencies has completed. The
 *   executor may run any two started steps concurrently, so two steps that touch
 *   overlapping bytes (one of them writing) must be ordered by dependencies.
 * - SEND completes when its bytes have left the source (the source may then be reused),
 *   RECV and RECV_REDUCE when the bytes are in the destination.
 */
#ifndef COLLIE_SCHED_H
#define COLLIE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "collie.h"

typedef enum {
  COLLIE_BUF_SEND = 0,    /* the user's send buffer (read only)     */
  COLLIE_BUF_RECV = 1,    /* the user's receive buffer             */
  COLLIE_BUF_SCRATCH = 2, /* sched->scratch_bytes, owned by the op */
  COLLIE_BUF_NONE = 3,
  COLLIE_NUM_BUFS = 3
} collie_buf_t;

typedef enum {
  COLLIE_STEP_SEND,        /* send nbytes at src to peer                                  */
  COLLIE_STEP_RECV,        /* receive nbytes from peer into dst                           */
  COLLIE_STEP_RECV_REDUCE, /* receive nbytes from peer: dst = src (op) incoming; src may be dst */
  COLLIE_STEP_COPY,        /* dst = src (no-op when they are the same bytes)              */
  COLLIE_STEP_REDUCE,      /* dst = src (op) src2; dst may be src or src2                 */
  COLLIE_NUM_STEP_TYPES
} collie_step_type_t;

typedef struct {
  uint8_t buf;  /* collie_buf_t */
  uint64_t off; /* bytes */
} collie_bufref_t;

typedef struct {
  uint8_t type; /* collie_step_type_t */
  int32_t peer; /* SEND / RECV / RECV_REDUCE; -1 otherwise */
  collie_bufref_t src, src2, dst;
  uint64_t nbytes;
  uint32_t dep_first; /* index into sched->deps */
  uint32_t ndeps;
} collie_step_t;

typedef struct collie_sched {
  int nranks, rank;
  size_t elem_size;        /* bytes per element of the operation's datatype */
  uint64_t scratch_bytes;  /* scratch the executor must provide             */
  collie_step_t *steps;
  uint32_t nsteps, steps_cap;
  uint32_t *deps;
  uint32_t ndeps, deps_cap;
  int failed;              /* allocation failure while building: the schedule is unusable */
} collie_sched_t;

/* Step handles are indices; COLLIE_NO_STEP means "no dependency". */
#define COLLIE_NO_STEP UINT32_MAX

void collie_sched_init(collie_sched_t *s, int nranks, int rank, size_t elem_size);
void collie_sched_free(collie_sched_t *s);
void collie_sched_reset(collie_sched_t *s); /* keeps the memory, drops the steps */

static inline collie_bufref_t collie_ref(collie_buf_t buf, uint64_t off) {
  collie_bufref_t r = {(uint8_t)buf, off};
  return r;
}

/* Each builder appends one step and returns its index (COLLIE_NO_STEP after an allocation
 * failure, which also sets s->failed). deps lists ndeps step indices; COLLIE_NO_STEP entries
 * are ignored, so callers can pass "the previous step, if any" without branching. */
uint32_t collie_sched_send(collie_sched_t *s, int peer, collie_bufref_t src, uint64_t nbytes,
                           const uint32_t *deps, uint32_t ndeps);
uint32_t collie_sched_recv(collie_sched_t *s, int peer, collie_bufref_t dst, uint64_t nbytes,
                           const uint32_t *deps, uint32_t ndeps);
uint32_t collie_sched_recv_reduce(collie_sched_t *s, int peer, collie_bufref_t src, collie_bufref_t dst,
                                  uint64_t nbytes, const uint32_t *deps, uint32_t ndeps);
uint32_t collie_sched_copy(collie_sched_t *s, collie_bufref_t src, collie_bufref_t dst, uint64_t nbytes,
                           const uint32_t *deps, uint32_t ndeps);
uint32_t collie_sched_reduce(collie_sched_t *s, collie_bufref_t src, collie_bufref_t src2,
                             collie_bufref_t dst, uint64_t nbytes, const uint32_t *deps, uint32_t ndeps);

/* Convenience for the common one- and two-dependency cases. */
#define COLLIE_DEP1(a) ((const uint32_t[]){(a)}), 1u
#define COLLIE_DEP2(a, b) ((const uint32_t[]){(a), (b)}), 2u
#define COLLIE_NODEPS NULL, 0u

const char *collie_step_type_name(collie_step_type_t t);

#endif /* COLLIE_SCHED_H */
