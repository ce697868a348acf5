/* alltoall_perf: block p of rank r's buffer goes to rank p, landing at block r. size is
 * one rank's whole buffer, count one block (nccl-tests); busbw = algbw * (n-1)/n (the
 * block a rank keeps for itself crosses no link). */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = (size_t)c->nranks, per = bytes / c->esz / n;
  c->count = per;
  c->send_elems = c->recv_elems = c->check_elems = per * n;
  c->send_ip_off = c->recv_ip_off = 0;
  c->size_bytes = per * n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  if (!q) return collie_alltoall(s, r, c->count, c->dt, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_ialltoall(s, r, c->count, c->dt, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

/* Block p here is block (my rank) of rank p's input. */
static void expect(perf_ctx_t *c, void *out) {
  for (int p = 0; p < c->nranks; p++)
    perf_gen(c, p, c->count * (size_t)c->rank, c->count, perf_at(c, out, c->count * (size_t)p));
}

static const perf_coll_t coll = {"alltoall", 0, 0, perf_factor_gather, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
