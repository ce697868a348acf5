/* alltoallv_perf: alltoall with uneven blocks. Rank s splits its buffer unevenly over the
 * destinations, the split rotated by s, so every rank sends the same total (size, as in
 * alltoall) but receives a different one. count is the mean block; busbw as alltoall. */
#include <stdlib.h>

#include "perf.h"

/* Rank s's split of its send buffer: scratch[0..n) counts, scratch[n..2n) displs. */
static size_t *split_of(perf_ctx_t *c, int s, size_t *scratch) {
  perf_uneven_split(c->count * (size_t)c->nranks, c->nranks, s, scratch, scratch + c->nranks);
  return scratch;
}

static size_t *scratch_alloc(perf_ctx_t *c) {
  size_t *p = malloc(2 * (size_t)c->nranks * sizeof *p);
  if (!p) perf_die(c->comm, c->rank, "allocating alltoallv counts", COLLIE_ERR_SYSTEM);
  return p;
}

/* counts/displs: what I send; counts2/displs2: what I receive, in source order. */
static void setup(perf_ctx_t *c, size_t bytes) {
  size_t n = (size_t)c->nranks, off = 0, *t = scratch_alloc(c);
  c->count = bytes / c->esz / n;
  perf_uneven_split(c->count * n, c->nranks, c->rank, c->counts, c->displs);
  for (int s = 0; s < c->nranks; s++) {
    c->counts2[s] = split_of(c, s, t)[c->rank];
    c->displs2[s] = off;
    off += c->counts2[s];
  }
  free(t);
  c->send_elems = c->count * n;
  c->recv_elems = c->check_elems = off;
  c->send_ip_off = c->recv_ip_off = 0;
  c->size_bytes = c->send_elems * c->esz;
  c->bw_bytes = (double)c->size_bytes;
}

static collie_result_t start(perf_ctx_t *c, const void *s, void *r, perf_reqs_t *q) {
  if (!q) return collie_alltoallv(s, c->counts, c->displs, r, c->counts2, c->displs2, c->dt, c->comm);
  collie_request_t *req;
  collie_result_t res =
      collie_ialltoallv(s, c->counts, c->displs, r, c->counts2, c->displs2, c->dt, c->comm, &req);
  return res ? res : perf_reqs_add(q, req);
}

/* The block from s is the part of s's input that s's split gives to me. */
static void expect(perf_ctx_t *c, void *out) {
  size_t *t = scratch_alloc(c);
  for (int s = 0; s < c->nranks; s++) {
    split_of(c, s, t);
    perf_gen(c, s, t[c->nranks + c->rank], t[c->rank], perf_at(c, out, c->displs2[s]));
  }
  free(t);
}

static const perf_coll_t coll = {"alltoallv", 0, 0, perf_factor_gather, setup, start, expect};

int main(int argc, char **argv) { return perf_main(argc, argv, &coll); }
