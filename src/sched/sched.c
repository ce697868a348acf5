/* Building step programs (see sched.h). */
#include "sched/sched.h"

#include <stdlib.h>
#include <string.h>

void collie_sched_init(collie_sched_t *s, int nranks, int rank, size_t elem_size) {
  memset(s, 0, sizeof(*s));
  s->nranks = nranks;
  s->rank = rank;
  s->elem_size = elem_size ? elem_size : 1;
}

void collie_sched_free(collie_sched_t *s) {
  free(s->steps);
  free(s->deps);
  memset(s, 0, sizeof(*s));
}

void collie_sched_reset(collie_sched_t *s) {
  s->nsteps = 0;
  s->ndeps = 0;
  s->scratch_bytes = 0;
  s->failed = 0;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 0;
  uint32_t ncap = *cap ? *cap : 16;
  while (ncap < need) ncap *= 2;
  void *np = realloc(*p, (size_t)ncap * elem);
  if (!np) return -1;
  *p = np;
  *cap = ncap;
  return 0;
}

static uint32_t append(collie_sched_t *s, collie_step_type_t type, int peer, collie_bufref_t src,
                       collie_bufref_t src2, collie_bufref_t dst, uint64_t nbytes, const uint32_t *deps,
                       uint32_t ndeps) {
  if (s->failed) return COLLIE_NO_STEP;
  uint32_t real = 0;
  for (uint32_t i = 0; i < ndeps; i++) real += deps[i] != COLLIE_NO_STEP;
  if (grow((void **)&s->steps, &s->steps_cap, s->nsteps + 1, sizeof(collie_step_t)) ||
      grow((void **)&s->deps, &s->deps_cap, s->ndeps + real, sizeof(uint32_t))) {
    s->failed = 1;
    return COLLIE_NO_STEP;
  }
  collie_step_t *st = &s->steps[s->nsteps];
  st->type = (uint8_t)type;
  st->peer = peer;
  st->src = src;
  st->src2 = src2;
  st->dst = dst;
  st->nbytes = nbytes;
  st->dep_first = s->ndeps;
  st->ndeps = real;
  for (uint32_t i = 0; i < ndeps; i++)
    if (deps[i] != COLLIE_NO_STEP) s->deps[s->ndeps++] = deps[i];
  return s->nsteps++;
}

static const collie_bufref_t none = {COLLIE_BUF_NONE, 0};

uint32_t collie_sched_send(collie_sched_t *s, int peer, collie_bufref_t src, uint64_t nbytes,
                           const uint32_t *deps, uint32_t ndeps) {
  return append(s, COLLIE_STEP_SEND, peer, src, none, none, nbytes, deps, ndeps);
}

uint32_t collie_sched_recv(collie_sched_t *s, int peer, collie_bufref_t dst, uint64_t nbytes,
                           const uint32_t *deps, uint32_t ndeps) {
  return append(s, COLLIE_STEP_RECV, peer, none, none, dst, nbytes, deps, ndeps);
}

uint32_t collie_sched_recv_reduce(collie_sched_t *s, int peer, collie_bufref_t src, collie_bufref_t dst,
                                  uint64_t nbytes, const uint32_t *deps, uint32_t ndeps) {
  return append(s, COLLIE_STEP_RECV_REDUCE, peer, src, none, dst, nbytes, deps, ndeps);
}

uint32_t collie_sched_copy(collie_sched_t *s, collie_bufref_t src, collie_bufref_t dst, uint64_t nbytes,
                           const uint32_t *deps, uint32_t ndeps) {
  return append(s, COLLIE_STEP_COPY, -1, src, none, dst, nbytes, deps, ndeps);
}

uint32_t collie_sched_reduce(collie_sched_t *s, collie_bufref_t src, collie_bufref_t src2,
                             collie_bufref_t dst, uint64_t nbytes, const uint32_t *deps, uint32_t ndeps) {
  return append(s, COLLIE_STEP_REDUCE, -1, src, src2, dst, nbytes, deps, ndeps);
}

const char *collie_step_type_name(collie_step_type_t t) {
  switch (t) {
    case COLLIE_STEP_SEND: return "send";
    case COLLIE_STEP_RECV: return "recv";
    case COLLIE_STEP_RECV_REDUCE: return "recv-reduce";
    case COLLIE_STEP_COPY: return "copy";
    case COLLIE_STEP_REDUCE: return "reduce";
    default: return "unknown";
  }
}
