/* Helpers shared by the builders in src/algo (see algo_util.h). */
#include "algo/algo_util.h"

#include <stdlib.h>

bool au_valid(const collie_coll_args_t *a) {
  if (!a || a->nranks < 1 || a->rank < 0 || a->rank >= a->nranks || a->elem_size == 0) return false;
  switch (a->coll) {
    case COLLIE_COLL_ALLGATHERV: return a->counts && a->displs;
    case COLLIE_COLL_REDUCE_SCATTERV: return a->counts != NULL;
    case COLLIE_COLL_ALLTOALLV: return a->counts && a->displs && a->counts2 && a->displs2;
    default: return true;
  }
}

collie_result_t au_copy_only(const collie_coll_args_t *a, collie_sched_t *s, uint64_t elems) {
  if (!a->in_place && elems)
    collie_sched_copy(s, collie_ref(COLLIE_BUF_SEND, 0), collie_ref(COLLIE_BUF_RECV, 0), elems * a->elem_size,
                      COLLIE_NODEPS);
  return au_finish(s);
}

bool au_blocks_init(au_blocks_t *b, const collie_coll_args_t *a) {
  int n = a->nranks;
  b->n = n;
  b->off = malloc(2 * (size_t)n * sizeof(uint64_t));
  if (!b->off) return false;
  b->len = b->off + n;
  b->total = b->maxlen = 0;
  uint64_t at = 0;
  for (int q = 0; q < n; q++) {
    switch (a->coll) {
      case COLLIE_COLL_ALLGATHERV:
        b->off[q] = a->displs[q];
        b->len[q] = a->counts[q];
        break;
      case COLLIE_COLL_REDUCE_SCATTERV:
        b->off[q] = at;
        b->len[q] = a->counts[q];
        break;
      case COLLIE_COLL_ALLGATHER:
      case COLLIE_COLL_REDUCE_SCATTER:
      case COLLIE_COLL_ALLTOALL:
        b->off[q] = (uint64_t)q * a->count;
        b->len[q] = a->count;
        break;
      default: /* one vector split near-equally (allreduce) */
        b->off[q] = au_block_start(a->count, n, q);
        b->len[q] = au_block_len(a->count, n, q);
    }
    at += b->len[q];
    if (b->len[q] > b->maxlen) b->maxlen = b->len[q];
  }
  b->total = at;
  return true;
}

void au_blocks_free(au_blocks_t *b) {
  free(b->off);
  b->off = b->len = NULL;
}

void au_deps_add(au_deps_t *d, uint32_t step) {
  if (step == COLLIE_NO_STEP || (d->n && d->v[d->n - 1] == step)) return;
  if (d->n == d->cap) {
    uint32_t ncap = d->cap ? 2 * d->cap : 16;
    uint32_t *nv = realloc(d->v, (size_t)ncap * sizeof *nv);
    if (!nv) {
      d->failed = true;
      return;
    }
    d->v = nv;
    d->cap = ncap;
  }
  d->v[d->n++] = step;
}

void au_deps_free(au_deps_t *d) {
  free(d->v);
  d->v = NULL;
  d->n = d->cap = 0;
}

void au_copier_init(au_copier_t *c, collie_sched_t *s, au_deps_t *out) {
  c->s = s;
  c->len = 0;
  c->deps = (au_deps_t){0};
  c->out = out;
}

uint32_t au_copier_flush(au_copier_t *c) {
  uint32_t st = COLLIE_NO_STEP;
  if (c->len) {
    if (c->deps.failed) c->s->failed = 1;
    st = collie_sched_copy(c->s, c->src, c->dst, c->len, c->deps.v, c->deps.n);
    if (c->out) au_deps_add(c->out, st);
  }
  c->len = 0;
  au_deps_clear(&c->deps);
  return st;
}

void au_copier_add(au_copier_t *c, collie_bufref_t src, collie_bufref_t dst, uint64_t len, const uint32_t *deps,
                   uint32_t ndeps) {
  if (!len) return;
  bool joins = c->len && src.buf == c->src.buf && dst.buf == c->dst.buf && src.off == c->src.off + c->len &&
               dst.off == c->dst.off + c->len;
  if (!joins) {
    au_copier_flush(c);
    c->src = src;
    c->dst = dst;
  }
  c->len += len;
  for (uint32_t i = 0; i < ndeps; i++) au_deps_add(&c->deps, deps[i]);
}

void au_copier_free(au_copier_t *c) { au_deps_free(&c->deps); }

uint32_t au_binomial_bcast(collie_sched_t *s, const au_ring_t *g, int from, collie_bufref_t src, uint64_t len,
                           uint32_t after) {
  const int v = au_mod(g->me - from, g->n);
  uint32_t got = after;
  if (v != 0) {
    src = collie_ref(COLLIE_BUF_RECV, 0);
    got = collie_sched_recv(s, au_member(g, au_real(au_binomial_parent(v), from, g->n)), src, len,
                            COLLIE_DEP1(after));
  }
  int kids[AU_MAX_CHILDREN], nk = au_binomial_children(v, g->n, kids);
  for (int i = 0; i < nk; i++)
    collie_sched_send(s, au_member(g, au_real(kids[i], from, g->n)), src, len, COLLIE_DEP1(got));
  return got;
}
