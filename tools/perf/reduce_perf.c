/* reduce_perf: the root ends with the reduction of all ranks' buffers; only it is
 * checked. busbw = algbw, as for broadcast (the same traffic, reversed). */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = bytes / c->esz;
  c->count = c->send_elems = c->recv_elems = n;
  c->check_elems = c->rank == c->root ? n : 0;
  c->send_ip_off = c->recv_ip_off = 0;
  c->size_bytes = n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  if (!q) return collie_reduce(s, r, c->count, c->dt, (collie_redop_t)c->op, c->root, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_ireduce(s, r, c->count, c->dt, (collie_redop_t)c->op, c->root, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) { perf_gen_reduced(c, 0, c->check_elems, out); }

static const perf_coll_t coll = {"reduce", 1, 1, perf_factor_one, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
