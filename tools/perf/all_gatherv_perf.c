/* all_gatherv_perf: all_gather with uneven parts (rank k sends about 2(k+1)/(n(n+1)) of
 * the total), sizes and busbw defined as for all_gather; count is the mean part. */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = (size_t)c->nranks, total = bytes / c->esz / n * n;
  perf_uneven_split(total, c->nranks, 0, c->counts, c->displs);
  c->count = total / n;
  c->send_elems = c->counts[c->rank];
  c->recv_elems = c->check_elems = total;
  c->send_ip_off = c->displs[c->rank];
  c->recv_ip_off = 0;
  c->size_bytes = total * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  size_t mine = c->counts[c->rank];
  if (!q) return collie_allgatherv(s, mine, r, c->counts, c->displs, c->dt, c->comm);
  collie_request_t *req;
  collie_result_t res = collie_iallgatherv(s, mine, r, c->counts, c->displs, c->dt, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

static void expect(perf_ctx_t *c, void *out) {
  for (int r = 0; r < c->nranks; r++) perf_gen(c, r, 0, c->counts[r], perf_at(c, out, c->displs[r]));
}

static const perf_coll_t coll = {"all_gatherv", 0, 0, perf_factor_gather, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
