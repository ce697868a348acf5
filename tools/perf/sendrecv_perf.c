/* sendrecv_perf: every rank sends to rank+1 and receives from rank-1 at once (a send and
 * a receive in one group), as nccl-tests' sendrecv_perf: all links busy in one direction.
 * With -p 2 this is the point-to-point view: time is the latency of one message of that
 * size, algbw its bandwidth. busbw = algbw.
 *
 * "In place" sends from and receives into one buffer, the message and the landing area
 * side by side. (The same bytes cannot be both: collie, like MPI, does not define a send
 * and a receive that overlap, and a copy in flight would race with the data arriving.) */
#include "perf.h"

static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = bytes / c->esz;
  c->count = c->send_elems = c->recv_elems = c->check_elems = n;
  c->send_ip_off = 0;
  c->recv_ip_off = n;
  c->size_bytes = n * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  int next = (c->rank + 1) % c->nranks, prev = (c->rank - 1 + c->nranks) % c->nranks;
  collie_result_t res;
  if (!q) {
    collie_group_start();
    collie_result_t a = collie_send(s, c->count, c->dt, next, c->comm);
    collie_result_t b = collie_recv(r, c->count, c->dt, prev, c->comm);
    res = collie_group_end();
    return a ? a : b ? b : res;
  }
  collie_request_t *req;
  if ((res = collie_isend(s, c->count, c->dt, next, c->comm, &req)) || (res = perf_reqs_add(q, req))) return res;
  if ((res = collie_irecv(r, c->count, c->dt, prev, c->comm, &req)) || (res = perf_reqs_add(q, req))) return res;
  return COLLIE_SUCCESS;
}

static void expect(perf_ctx_t *c, void *out) {
  perf_gen(c, (c->rank - 1 + c->nranks) % c->nranks, 0, c->count, out);
}

static const perf_coll_t coll = {"sendrecv", 0, 0, perf_factor_one, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
