/* all_gather_perf: every rank ends with all ranks' buffers side by side. As in
 * nccl-tests, size is the gathered total and count the per-rank elements;
 * busbw = algbw * (n-1)/n (each rank receives all but its own part). */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = (size_t)c->nranks, per = bytes / c->esz / n;
  c->count = c->send_elems = per;
  c->recv_elems = c->check_elems = per * n;
  c->send_ip_off = per * (size_t)c->rank; /* in place: my part of recvbuf */
  c->recv_ip_off = 0;
  c->size_bytes = per * n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  if (!q) return collie_allgather(s, r, c->count, c->dt, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_iallgather(s, r, c->count, c->dt, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) {
  for (int r = 0; r < c->nranks; r++) perf_gen(c, r, 0, c->count, perf_at(c, out, c->count * (size_t)r));
}

static const perf_coll_t coll = {"all_gather", 0, 0, perf_factor_gather, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
