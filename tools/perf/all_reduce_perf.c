/* all_reduce_perf: every rank ends with the reduction of all ranks' buffers.
 * busbw = algbw * 2(n-1)/n: a ring all-reduce moves each byte that often per rank. */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = bytes / c->esz;
  c->count = c->send_elems = c->recv_elems = c->check_elems = n;
  c->send_ip_off = c->recv_ip_off = 0;
  c->size_bytes = n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  if (!q) return collie_allreduce(s, r, c->count, c->dt, (collie_redop_t)c->op, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_iallreduce(s, r, c->count, c->dt, (collie_redop_t)c->op, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) { perf_gen_reduced(c, 0, c->count, out); }

static const perf_coll_t coll = {"all_reduce", 1, 0, perf_factor_allreduce, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
