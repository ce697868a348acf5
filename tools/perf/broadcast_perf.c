/* broadcast_perf: the root's buffer reaches every rank. busbw = algbw: in a pipelined
 * broadcast each link carries the message once. */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = bytes / c->esz;
  c->count = c->send_elems = c->recv_elems = c->check_elems = n;
  c->send_ip_off = c->recv_ip_off = 0;
  c->size_bytes = n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  if (!q) return collie_broadcast(s, r, c->count, c->dt, c->root, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_ibroadcast(s, r, c->count, c->dt, c->root, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) { perf_gen(c, c->root, 0, c->count, out); }

static const perf_coll_t coll = {"broadcast", 0, 1, perf_factor_one, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
