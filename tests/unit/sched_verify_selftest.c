/* Self-test of the verifier: deliberately broken schedules, each of which must be caught
 * with the expected complaint. Runs first in every sweep, so a verifier that silently
 * passes everything cannot go unnoticed. */
#include <stdio.h>
#include <string.h>

#include "sched_verify.h"

#define R(buf, off) collie_ref(COLLIE_BUF_##buf, (off))

/* Two-rank allreduce by exchange: each rank sends its input and reduces the peer's into
 * RECV. Variants break one rule each. */
static int bad_kind;

static collie_result_t exchange_allreduce(const collie_coll_args_t *a, collie_sched_t *s) {
  if (a->nranks != 2) return COLLIE_ERR_INVALID_ARGUMENT;
  uint64_t len = a->count * a->elem_size;
  int peer = 1 - a->rank;
  collie_bufref_t in = a->in_place ? R(RECV, 0) : R(SEND, 0);
  switch (bad_kind) {
    case 0: { /* correct: receive into scratch, then reduce */
      s->scratch_bytes = len;
      uint32_t snd = collie_sched_send(s, peer, in, len, COLLIE_NODEPS);
      uint32_t rcv = collie_sched_recv(s, peer, R(SCRATCH, 0), len, COLLIE_NODEPS);
      collie_sched_reduce(s, in, R(SCRATCH, 0), R(RECV, 0), len, COLLIE_DEP2(snd, rcv));
      break;
    }
    case 1: /* hazard: in place, the reduction overwrites what the send still reads */
      collie_sched_send(s, peer, in, len, COLLIE_NODEPS);
      collie_sched_recv_reduce(s, peer, in, R(RECV, 0), len, COLLIE_NODEPS);
      break;
    case 2: { /* double count: reduce own input twice (out of place) */
      collie_sched_send(s, peer, in, len, COLLIE_NODEPS);
      uint32_t rr = collie_sched_recv_reduce(s, peer, in, R(RECV, 0), len, COLLIE_NODEPS);
      collie_sched_reduce(s, R(RECV, 0), in, R(RECV, 0), len, COLLIE_DEP1(rr));
      break;
    }
    case 3: { /* deadlock under rendezvous: each receives before sending */
      uint32_t rr = collie_sched_recv_reduce(s, peer, in, R(RECV, 0), len, COLLIE_NODEPS);
      collie_sched_send(s, peer, R(RECV, 0), len, COLLIE_DEP1(rr));
      break;
    }
    case 4: /* length mismatch */
      collie_sched_send(s, peer, in, a->rank ? len : len - a->elem_size, COLLIE_NODEPS);
      collie_sched_recv(s, peer, R(RECV, 0), len, COLLIE_NODEPS);
      break;
    case 5: /* writes the send buffer */
      collie_sched_copy(s, R(RECV, 0), R(SEND, 0), len, COLLIE_NODEPS);
      break;
    case 6: /* out of bounds */
      collie_sched_recv(s, peer, R(RECV, a->elem_size), len, COLLIE_NODEPS);
      collie_sched_send(s, peer, in, len, COLLIE_NODEPS);
      break;
    case 7: /* misaligned (elem > 1) */
      collie_sched_copy(s, in, R(RECV, 1), len - a->elem_size, COLLIE_NODEPS);
      break;
    case 8: /* wrong result: only the own contribution */
      collie_sched_copy(s, in, R(RECV, 0), len, COLLIE_NODEPS);
      break;
    case 9: /* message counts disagree */
      if (a->rank == 0) collie_sched_send(s, peer, in, len, COLLIE_NODEPS);
      break;
    case 10: /* ranks disagree about declining */
      if (a->rank == 1) return COLLIE_ERR_INVALID_ARGUMENT;
      break;
  }
  return COLLIE_SUCCESS;
}

/* Allreduce where every rank gathers all inputs and sums them starting with its own:
 * complete everywhere, but in a different order on each rank. */
static collie_result_t own_order_allreduce(const collie_coll_args_t *a, collie_sched_t *s) {
  uint64_t len = a->count * a->elem_size;
  int n = a->nranks, r = a->rank;
  collie_bufref_t in = a->in_place ? R(RECV, 0) : R(SEND, 0);
  s->scratch_bytes = len * (uint64_t)n;
  uint32_t first = COLLIE_NO_STEP, last;
  for (int k = 1; k < n; k++) first = collie_sched_send(s, (r + k) % n, in, len, COLLIE_DEP1(first));
  last = collie_sched_copy(s, in, R(SCRATCH, 0), len, COLLIE_NODEPS);
  for (int k = 1; k < n; k++) {
    uint32_t rcv = collie_sched_recv(s, (r + n - k) % n, R(SCRATCH, len * (uint64_t)k), len, COLLIE_NODEPS);
    last = collie_sched_reduce(s, R(SCRATCH, 0), R(SCRATCH, len * (uint64_t)k), R(SCRATCH, 0), len,
                               COLLIE_DEP2(last, rcv));
  }
  collie_sched_copy(s, R(SCRATCH, 0), R(RECV, 0), len, COLLIE_DEP2(last, first));
  return COLLIE_SUCCESS;
}

/* Barrier where rank 0 only sends: it can finish before the others start. */
static collie_result_t bad_barrier(const collie_coll_args_t *a, collie_sched_t *s) {
  for (int p = 1; p < a->nranks; p++)
    if (a->rank == 0)
      collie_sched_send(s, p, R(NONE, 0), 0, COLLIE_NODEPS);
    else if (a->rank == p)
      collie_sched_recv(s, 0, R(NONE, 0), 0, COLLIE_NODEPS);
  return COLLIE_SUCCESS;
}

/* Allgatherv that copies whole receive ranges, gaps included. */
static collie_result_t gap_allgatherv(const collie_coll_args_t *a, collie_sched_t *s) {
  size_t es = a->elem_size, end = 0;
  for (int q = 0; q < a->nranks; q++)
    if (a->displs[q] + a->counts[q] > end) end = a->displs[q] + a->counts[q];
  if (a->nranks != 2) return COLLIE_ERR_INVALID_ARGUMENT;
  int peer = 1 - a->rank;
  uint64_t mine = a->counts[a->rank] * es, off = a->displs[a->rank] * es;
  s->scratch_bytes = end * es;
  uint32_t c = collie_sched_copy(s, R(SEND, 0), R(SCRATCH, off), mine, COLLIE_NODEPS);
  uint32_t snd = collie_sched_send(s, peer, R(SEND, 0), mine, COLLIE_NODEPS);
  uint32_t rcv = collie_sched_recv(s, peer, R(SCRATCH, a->displs[peer] * es), a->counts[peer] * es, COLLIE_NODEPS);
  collie_sched_copy(s, R(SCRATCH, 0), R(RECV, 0), end * es, (const uint32_t[]){c, snd, rcv}, 3);
  return COLLIE_SUCCESS;
}

typedef struct {
  int kind;
  collie_coll_t coll;
  collie_algo_fn fn;
  bool in_place;
  size_t elem;
  const char *expect; /* substring of the first failure; NULL: must pass */
} selftest_t;

int sv_selftest(void) {
  static const size_t vc[2] = {3, 2}, vd[2] = {4, 0};
  static const selftest_t t[] = {
      {0, COLLIE_COLL_ALLREDUCE, exchange_allreduce, true, 4, NULL},
      {0, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, NULL},
      {1, COLLIE_COLL_ALLREDUCE, exchange_allreduce, true, 1, "hazard"},
      {2, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, "counted twice"},
      {3, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, "deadlock"},
      {4, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 2, "receives"},
      {5, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, "send buffer"},
      {6, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, "out of bounds"},
      {7, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 4, "aligned"},
      {8, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, "expected all 2 ranks"},
      {9, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, "sends 1 messages"},
      {10, COLLIE_COLL_ALLREDUCE, exchange_allreduce, false, 1, "disagree"},
      {0, COLLIE_COLL_ALLREDUCE, own_order_allreduce, false, 1, "bitwise identical"},
      {0, COLLIE_COLL_BARRIER, bad_barrier, false, 1, "before rank"},
      {0, COLLIE_COLL_ALLGATHERV, gap_allgatherv, false, 1, "between blocks"},
  };
  int bad = 0;
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    sv_case_t c;
    memset(&c, 0, sizeof c);
    c.coll = t[k].coll;
    c.algo_name = "selftest";
    c.build = t[k].fn;
    c.nranks = t[k].coll == COLLIE_COLL_BARRIER ? 5 : t[k].fn == own_order_allreduce ? 3 : 2;
    c.count = 6;
    c.in_place = t[k].in_place;
    c.elem_size = t[k].elem;
    c.counts = vc;
    c.displs = vd;
    bad_kind = t[k].kind;
    sv_report_t rep;
    sv_status_t st = sv_run(&c, &rep);
    bool ok = t[k].expect ? st == SV_FAIL && strstr(rep.fail[0].what, t[k].expect) : st == SV_OK;
    if (!ok) {
      bad++;
      printf("verifier self-test %zu (kind %d, %s): expected %s, got %s%s%s\n", k, t[k].kind,
             collie_coll_name(t[k].coll), t[k].expect ? t[k].expect : "success",
             st == SV_OK ? "success" : st == SV_DECLINED ? "declined" : "failure: ",
             st == SV_FAIL ? rep.fail[0].what : "", "");
    }
  }
  printf("verifier self-test: %s (%zu broken schedules)\n", bad ? "FAILED" : "OK", sizeof t / sizeof t[0]);
  return bad != 0;
}
