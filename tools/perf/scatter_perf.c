/* scatter_perf: part r of the root's buffer goes to rank r. size is the root's whole
 * buffer, count one part (nccl-tests); busbw = algbw * (n-1)/n. */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = (size_t)c->nranks, per = bytes / c->esz / n;
  c->count = c->recv_elems = c->check_elems = per;
  c->send_elems = per * n;
  c->send_ip_off = 0;
  c->recv_ip_off = per * (size_t)c->rank; /* in place (root): its own part of sendbuf */
  c->size_bytes = per * n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  if (!q) return collie_scatter(s, r, c->count, c->dt, c->root, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_iscatter(s, r, c->count, c->dt, c->root, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) { perf_gen(c, c->root, c->count * (size_t)c->rank, c->count, out); }

static const perf_coll_t coll = {"scatter", 0, 1, perf_factor_gather, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
