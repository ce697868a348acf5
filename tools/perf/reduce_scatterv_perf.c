/* reduce_scatterv_perf: reduce_scatter with uneven parts (as in all_gatherv_perf);
 * sizes and busbw as for reduce_scatter, count the mean part. */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = (size_t)c->nranks, total = bytes / c->esz / n * n;
  perf_uneven_split(total, c->nranks, 0, c->counts, c->displs);
  c->count = total / n;
  c->send_elems = total;
  c->recv_elems = c->check_elems = c->counts[c->rank];
  c->send_ip_off = 0;
  c->recv_ip_off = c->displs[c->rank];
  c->size_bytes = total * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  collie_redop_t op = (collie_redop_t)c->op;
  if (!q) return collie_reduce_scatterv(s, r, c->counts, c->dt, op, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_ireduce_scatterv(s, r, c->counts, c->dt, op, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) { perf_gen_reduced(c, c->displs[c->rank], c->counts[c->rank], out); }

static const perf_coll_t coll = {"reduce_scatterv", 1, 0, perf_factor_gather, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
