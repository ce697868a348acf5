/* reduce_scatter_perf: rank r ends with part r of the reduction of all ranks' buffers.
 * size is the whole send buffer, count the per-rank part (nccl-tests);
 * busbw = algbw * (n-1)/n. */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = (size_t)c->nranks, per = bytes / c->esz / n;
  c->count = c->recv_elems = c->check_elems = per;
  c->send_elems = per * n;
  c->send_ip_off = 0;
  c->recv_ip_off = per * (size_t)c->rank; /* in place: my part of the input */
  c->size_bytes = per * n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  collie_redop_t op = (collie_redop_t)c->op;
  if (!q) return collie_reduce_scatter(s, r, c->count, c->dt, op, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_ireduce_scatter(s, r, c->count, c->dt, op, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) { perf_gen_reduced(c, c->count * (size_t)c->rank, c->count, out); }

static const perf_coll_t coll = {"reduce_scatter", 1, 0, perf_factor_gather, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
