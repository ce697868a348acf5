/* Symbolic verifier for step programs: see sched_verify.h for what it checks.
 *
 * Layout of one run: build every rank's schedule; check each step on its own (peers,
 * buffers, bounds, alignment, dependencies); match messages FIFO per (sender, receiver);
 * look for hazards between steps of a rank that dependencies leave unordered; execute
 * symbolically in a seeded random order under rendezvous semantics; compare the receive
 * buffers with the collective's definition. Symbolic values are 8 bytes per element:
 * a reduction value is (element index, id of an interned rank set kept as sorted
 * intervals, so 1000 ranks cost no more than 2), a data value is (origin rank, origin
 * element index), and garbage carries where it was. */
#include "sched_verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collie.h"

enum { ST_USER = 0, ST_SEND = 1, ST_SCR = 2, NUM_ST = 3 }; /* storages of one rank */
enum { S_WAIT = 0, S_STARTED = 1, S_DONE = 2 };

#define GARBAGE_BASE 0xFFFFFFF0u /* a >= this: garbage; a - base = storage, b = position */
#define MAX_SCRATCH_ELEMS (1u << 26)
#define BITSET_MAX_STEPS 4096u

typedef struct {
  uint32_t a, b;
} sval_t;

typedef struct {
  collie_sched_t s;
  uint64_t size_bytes[3]; /* SEND, RECV, SCRATCH as the layout allows       */
  size_t base_s, base_r;  /* in place: where send / recv start in user storage */
  size_t send_elems, recv_elems;
  sval_t *st[NUM_ST];
  size_t st_size[NUM_ST];
  uint8_t *state;
  uint32_t *pending, *dfirst, *dlist, *pstep;
  uint32_t *ready; /* steps whose dependencies are done, not yet started */
  uint32_t ndone, nready;
  uint64_t *know; /* barrier: ranks known to have started, per step */
  uint64_t *anc;  /* hazard check: ancestors per step (lazy)        */
  uint32_t *stamp;
  uint32_t stamp_gen;
} rank_t;


typedef struct {
  const sv_case_t *c;
  sv_report_t *rep;
  int n;
  size_t E;
  bool reduction;
  rank_t *R;
  uint32_t *arena; /* rank sets: [count, lo0, hi0, lo1, hi1, ...] */
  size_t alen, acap;
  /* Reduction expressions, hash-consed so equal trees (up to operand order) share an id:
   * leaves are ranks (left = right = NONE), ex_set is each expression's rank set. */
  uint32_t *ex_l, *ex_r, *ex_set;
  size_t nex, cex;
  uint64_t *hkey;
  uint32_t *hval;
  size_t hcap, hn;
  uint32_t *single; /* the leaf expression of each rank */
  uint32_t memo_x, memo_y, memo_r;
  bool memo_ok, arena_failed;
  size_t kw; /* words of a rank bitset */
  int *active; /* ranks with ready steps, and each rank's place in it (-1: none) */
  int *active_pos;
  int nactive;
  uint64_t rng;
} ctx_t;

/* ------------------------------------------------------------------ reporting */

static void failf(ctx_t *x, int rank, long step, const char *fmt, ...) {
  sv_report_t *rep = x->rep;
  if (rep->nfail < SV_MAX_FAIL) {
    sv_failure_t *f = &rep->fail[rep->nfail];
    f->rank = rank;
    f->step = step;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof f->what, fmt, ap);
    va_end(ap);
  }
  rep->nfail++;
}

static const char *buf_name(int b) {
  switch (b) {
    case COLLIE_BUF_SEND: return "send";
    case COLLIE_BUF_RECV: return "recv";
    case COLLIE_BUF_SCRATCH: return "scratch";
    case COLLIE_BUF_NONE: return "none";
    default: return "bad-buffer";
  }
}

static void step_desc(const collie_step_t *st, char *out, size_t len) {
  unsigned long long n = (unsigned long long)st->nbytes;
#define RNG(ref) buf_name((ref).buf), (unsigned long long)(ref).off, (unsigned long long)((ref).off + n)
  switch (st->type) {
    case COLLIE_STEP_SEND:
      snprintf(out, len, "send %lluB %s[%llu,%llu) to %d", n, RNG(st->src), (int)st->peer);
      break;
    case COLLIE_STEP_RECV:
      snprintf(out, len, "recv %lluB from %d into %s[%llu,%llu)", n, (int)st->peer, RNG(st->dst));
      break;
    case COLLIE_STEP_RECV_REDUCE:
      snprintf(out, len, "recv-reduce %lluB from %d: %s[%llu,%llu) = %s[%llu,%llu) op in", n, (int)st->peer,
               RNG(st->dst), RNG(st->src));
      break;
    case COLLIE_STEP_COPY:
      snprintf(out, len, "copy %lluB %s[%llu,%llu) -> %s[%llu,%llu)", n, RNG(st->src), RNG(st->dst));
      break;
    case COLLIE_STEP_REDUCE:
      snprintf(out, len, "reduce %lluB %s[%llu,%llu) = %s[%llu,%llu) op %s[%llu,%llu)", n, RNG(st->dst),
               RNG(st->src), RNG(st->src2));
      break;
    default: snprintf(out, len, "step of unknown type %d", (int)st->type);
  }
#undef RNG
}

static bool is_garbage(sval_t v) { return v.a >= GARBAGE_BASE; }

static void val_desc(const ctx_t *x, sval_t v, char *out, size_t len) {
  static const char *stn[NUM_ST] = {"recv", "send", "scratch"};
  if (is_garbage(v)) {
    unsigned st = v.a - GARBAGE_BASE;
    snprintf(out, len, "garbage(initial %s storage elem %u)", st < NUM_ST ? stn[st] : "?", v.b);
    return;
  }
  if (!x->reduction) {
    snprintf(out, len, "(rank %u, elem %u)", v.a, v.b);
    return;
  }
  size_t p = 0;
  const uint32_t *s = &x->arena[x->ex_set[v.b]];
  p += (size_t)snprintf(out + p, len - p, "{");
  for (uint32_t k = 0; k < s[0] && p + 24 < len; k++) {
    uint32_t lo = s[1 + 2 * k], hi = s[2 + 2 * k];
    if (hi - lo == 1)
      p += (size_t)snprintf(out + p, len - p, "%s%u", k ? "," : "", lo);
    else
      p += (size_t)snprintf(out + p, len - p, "%s%u-%u", k ? "," : "", lo, hi - 1);
  }
  snprintf(out + p, len - p, "} @elem %u", v.a);
}

void sv_describe(const sv_case_t *c, char *buf, size_t len) {
  int o = snprintf(buf, len, "%s %s nranks=%d count=%zu root=%d in_place=%d elem=%zu chunk=%zu seed=%llu",
                   collie_coll_name(c->coll), c->algo_name ? c->algo_name : "?", c->nranks, c->count, c->root,
                   (int)c->in_place, c->elem_size, c->chunk_bytes, (unsigned long long)c->seed);
  if (c->group_of && o > 0 && (size_t)o < len) {
    o += snprintf(buf + o, len - (size_t)o, " groups=%d of", c->ngroups);
    for (int r = 0; r < c->nranks && r < 16 && o > 0 && (size_t)o < len; r++)
      o += snprintf(buf + o, len - (size_t)o, "%s%d", r ? "," : "=", c->group_of[r]);
  }
}

/* ------------------------------------------------------------------ rank sets */

static bool arena_reserve(ctx_t *x, size_t extra) {
  if (x->alen + extra <= x->acap) return true;
  size_t ncap = x->acap ? x->acap : 4096;
  while (ncap < x->alen + extra) ncap *= 2;
  if (ncap > UINT32_MAX) return false;
  uint32_t *na = realloc(x->arena, ncap * sizeof(uint32_t));
  if (!na) return false;
  x->arena = na;
  x->acap = ncap;
  return true;
}

/* Union of two disjoint rank sets; *dup = a rank present in both (or -1). */
static uint32_t set_union(ctx_t *x, uint32_t A, uint32_t B, long *dup) {
  *dup = -1;
  uint32_t na = x->arena[A], nb = x->arena[B];
  if (!arena_reserve(x, 1 + 2 * (size_t)(na + nb))) {
    x->arena_failed = true;
    return A;
  }
  const uint32_t *a = &x->arena[A + 1], *b = &x->arena[B + 1];
  uint32_t id = (uint32_t)x->alen, *out = &x->arena[id + 1], no = 0;
  uint32_t ia = 0, ib = 0;
  while (ia < na || ib < nb) {
    uint32_t lo, hi;
    if (ib >= nb || (ia < na && a[2 * ia] <= b[2 * ib])) {
      lo = a[2 * ia];
      hi = a[2 * ia + 1];
      ia++;
    } else {
      lo = b[2 * ib];
      hi = b[2 * ib + 1];
      ib++;
    }
    if (no && lo < out[2 * no - 1]) {
      if (*dup < 0) *dup = lo;
      if (hi > out[2 * no - 1]) out[2 * no - 1] = hi;
    } else if (no && lo == out[2 * no - 1]) {
      out[2 * no - 1] = hi;
    } else {
      out[2 * no] = lo;
      out[2 * no + 1] = hi;
      no++;
    }
  }
  x->arena[id] = no;
  x->alen += 1 + 2 * (size_t)no;
  return id;
}

/* ------------------------------------------------------------------ expressions */

#define NO_EXPR UINT32_MAX

static uint32_t expr_new(ctx_t *x, uint32_t l, uint32_t r, uint32_t set) {
  if (x->nex == x->cex) {
    size_t nc = x->cex ? 2 * x->cex : 1024;
    uint32_t *a = realloc(x->ex_l, nc * sizeof *a), *b = a ? realloc(x->ex_r, nc * sizeof *b) : NULL;
    if (a) x->ex_l = a;
    if (b) x->ex_r = b;
    uint32_t *c = b ? realloc(x->ex_set, nc * sizeof *c) : NULL;
    if (!c || nc > UINT32_MAX / 2) {
      x->arena_failed = true;
      return NO_EXPR;
    }
    x->ex_set = c;
    x->cex = nc;
  }
  x->ex_l[x->nex] = l;
  x->ex_r[x->nex] = r;
  x->ex_set[x->nex] = set;
  return (uint32_t)x->nex++;
}

static uint64_t hash64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

/* Slot of key in the hash table (empty slots hold UINT64_MAX). */
static size_t hslot(const ctx_t *x, uint64_t key) {
  size_t m = x->hcap - 1, i = (size_t)hash64(key) & m;
  while (x->hkey[i] != UINT64_MAX && x->hkey[i] != key) i = (i + 1) & m;
  return i;
}

static bool hgrow(ctx_t *x) {
  size_t oc = x->hcap, nc = oc ? 2 * oc : 4096;
  uint64_t *ok = x->hkey, *nk = malloc(nc * sizeof *nk);
  uint32_t *ov = x->hval, *nv = malloc(nc * sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return false;
  }
  memset(nk, 0xff, nc * sizeof *nk);
  x->hkey = nk, x->hval = nv, x->hcap = nc;
  for (size_t i = 0; i < oc; i++)
    if (ok[i] != UINT64_MAX) {
      size_t j = hslot(x, ok[i]);
      nk[j] = ok[i];
      nv[j] = ov[i];
    }
  free(ok);
  free(ov);
  return true;
}

/* The expression A op B (the same id as B op A); *dup: a rank in both, or -1. */
static uint32_t expr_combine(ctx_t *x, uint32_t A, uint32_t B, long *dup) {
  *dup = -1;
  if (x->memo_ok && x->memo_x == A && x->memo_y == B) return x->memo_r;
  uint32_t lo = A < B ? A : B, hi = A ^ B ^ lo;
  uint64_t key = (uint64_t)lo << 32 | hi;
  if (2 * (x->hn + 1) > x->hcap && !hgrow(x)) {
    x->arena_failed = true;
    return NO_EXPR;
  }
  size_t i = hslot(x, key);
  uint32_t id;
  if (x->hkey[i] == key) {
    id = x->hval[i];
  } else {
    uint32_t set = set_union(x, x->ex_set[A], x->ex_set[B], dup);
    if (x->arena_failed || *dup >= 0) return NO_EXPR;
    id = expr_new(x, lo, hi, set);
    if (id == NO_EXPR) return NO_EXPR;
    x->hkey[i] = key;
    x->hval[i] = id;
    x->hn++;
  }
  x->memo_ok = true;
  x->memo_x = A;
  x->memo_y = B;
  x->memo_r = id;
  return id;
}

/* "((0+1)+(2+3))", shortened with "..." when long. */
static size_t expr_desc(const ctx_t *x, uint32_t e, char *out, size_t len) {
  if (len < 8) return 0;
  if (x->ex_l[e] == NO_EXPR) return (size_t)snprintf(out, len, "%u", x->arena[x->ex_set[e] + 1]);
  size_t p = (size_t)snprintf(out, len, "(");
  p += expr_desc(x, x->ex_l[e], out + p, len - p);
  if (p + 8 >= len) return p + (size_t)snprintf(out + p, len - p, "...");
  p += (size_t)snprintf(out + p, len - p, "+");
  p += expr_desc(x, x->ex_r[e], out + p, len - p);
  if (p + 2 >= len) return p;
  return p + (size_t)snprintf(out + p, len - p, ")");
}

static bool set_is_full(const ctx_t *x, uint32_t e) {
  uint32_t id = x->ex_set[e];
  return x->arena[id] == 1 && x->arena[id + 1] == 0 && x->arena[id + 2] == (uint32_t)x->n;
}

/* ------------------------------------------------------------------ layouts */

static size_t extent(const size_t *counts, const size_t *displs, int n) {
  size_t e = 0;
  for (int q = 0; q < n; q++)
    if (counts[q] && displs[q] + counts[q] > e) e = displs[q] + counts[q];
  return e;
}

static size_t prefix(const size_t *counts, int r) {
  size_t s = 0;
  for (int q = 0; q < r; q++) s += counts[q];
  return s;
}

/* Send / receive sizes of rank r in elements, and where they sit in user storage in place. */
static void layout(const sv_case_t *c, int r, size_t *send, size_t *recv, size_t *bs, size_t *br) {
  int n = c->nranks;
  size_t cnt = c->count, nc = (size_t)n * cnt;
  bool root = r == c->root;
  *bs = *br = 0;
  switch (c->coll) {
    case COLLIE_COLL_ALLREDUCE: *send = cnt, *recv = cnt; break;
    case COLLIE_COLL_BROADCAST: *send = root ? cnt : 0, *recv = cnt; break;
    case COLLIE_COLL_REDUCE: *send = cnt, *recv = root ? cnt : 0; break;
    case COLLIE_COLL_ALLGATHER:
      *send = cnt, *recv = nc;
      *bs = (size_t)r * cnt;
      break;
    case COLLIE_COLL_ALLGATHERV:
      *send = c->counts[r], *recv = extent(c->counts, c->displs, n);
      *bs = c->displs[r];
      break;
    case COLLIE_COLL_REDUCE_SCATTER:
      *send = nc, *recv = cnt;
      *br = (size_t)r * cnt;
      break;
    case COLLIE_COLL_REDUCE_SCATTERV:
      *send = prefix(c->counts, n), *recv = c->counts[r];
      *br = prefix(c->counts, r);
      break;
    case COLLIE_COLL_ALLTOALL: *send = nc, *recv = nc; break;
    case COLLIE_COLL_ALLTOALLV: {
      size_t e = 0, f = 0;
      for (int q = 0; q < n; q++) {
        size_t sc = c->a2a_counts[(size_t)r * n + q], rc = c->a2a_counts[(size_t)q * n + r];
        const size_t *sd = c->in_place ? c->a2a_rdispls : c->a2a_sdispls; /* in place: one layout */
        if (sc && sd[(size_t)r * n + q] + sc > e) e = sd[(size_t)r * n + q] + sc;
        if (rc && c->a2a_rdispls[(size_t)r * n + q] + rc > f) f = c->a2a_rdispls[(size_t)r * n + q] + rc;
      }
      *send = e, *recv = f;
      break;
    }
    case COLLIE_COLL_SCATTER:
      *send = root ? nc : 0, *recv = cnt;
      if (root) *br = (size_t)r * cnt;
      break;
    case COLLIE_COLL_GATHER:
      *send = cnt, *recv = root ? nc : 0;
      if (root) *bs = (size_t)r * cnt;
      break;
    default: *send = *recv = 0;
  }
  if (!c->in_place) *bs = *br = 0;
}

uint64_t sv_case_elems(const sv_case_t *c) {
  uint64_t total = 0;
  for (int r = 0; r < c->nranks; r++) {
    size_t s, v, bs, br;
    layout(c, r, &s, &v, &bs, &br);
    total += s + v;
  }
  return total;
}

/* Storage holding (buf, element offset) of rank R. */
static int resolve(const ctx_t *x, const rank_t *R, int buf, uint64_t off_e, size_t *pos) {
  if (buf == COLLIE_BUF_SCRATCH) {
    *pos = off_e;
    return ST_SCR;
  }
  if (buf == COLLIE_BUF_RECV) {
    *pos = R->base_r + off_e;
    return ST_USER;
  }
  if (x->c->in_place) {
    *pos = R->base_s + off_e;
    return ST_USER;
  }
  *pos = off_e;
  return ST_SEND;
}

static sval_t *ptr(const ctx_t *x, const rank_t *R, collie_bufref_t ref) {
  size_t pos;
  int st = resolve(x, R, ref.buf, ref.off / x->E, &pos);
  return R->st[st] + pos;
}

static sval_t init_val(const ctx_t *x, int r, int st, size_t pos) {
  const rank_t *R = &x->R[r];
  bool in_send = false;
  size_t i = 0;
  if (st == ST_SEND) {
    in_send = true;
    i = pos;
  } else if (st == ST_USER && x->c->in_place && pos >= R->base_s && pos < R->base_s + R->send_elems) {
    in_send = true;
    i = pos - R->base_s;
  }
  sval_t v;
  if (!in_send) {
    v.a = GARBAGE_BASE + (uint32_t)st;
    v.b = (uint32_t)pos;
  } else if (x->reduction) {
    v.a = (uint32_t)i;
    v.b = x->single[r];
  } else {
    v.a = (uint32_t)r;
    v.b = (uint32_t)i;
  }
  return v;
}

/* ------------------------------------------------------------------ static checks */

static bool is_p2p(int t) {
  return t == COLLIE_STEP_SEND || t == COLLIE_STEP_RECV || t == COLLIE_STEP_RECV_REDUCE;
}

static void check_ref(ctx_t *x, int r, uint32_t i, const char *role, collie_bufref_t ref, uint64_t nbytes,
                      bool write) {
  const rank_t *R = &x->R[r];
  char d[256];
  if (nbytes == 0) return;
  if (ref.buf >= COLLIE_NUM_BUFS) {
    step_desc(&R->s.steps[i], d, sizeof d);
    failf(x, r, i, "%s of %s uses buffer %s", role, d, buf_name(ref.buf));
    return;
  }
  uint64_t lim = R->size_bytes[ref.buf];
  bool misaligned = ref.off % x->E, wsend = write && ref.buf == COLLIE_BUF_SEND;
  bool oob = ref.off > lim || nbytes > lim - ref.off;
  if (!misaligned && !wsend && !oob) return;
  step_desc(&R->s.steps[i], d, sizeof d);
  if (misaligned)
    failf(x, r, i, "%s of %s: offset %llu not element aligned (elem %zu)", role, d, (unsigned long long)ref.off,
          x->E);
  if (wsend) failf(x, r, i, "%s writes the send buffer (read only)", d);
  if (oob)
    failf(x, r, i, "%s out of bounds: %s of %s is %llu bytes", d, role, buf_name(ref.buf), (unsigned long long)lim);
}

static bool same_bytes(const ctx_t *x, const rank_t *R, collie_bufref_t a, collie_bufref_t b) {
  size_t pa, pb;
  return resolve(x, R, a.buf, a.off / x->E, &pa) == resolve(x, R, b.buf, b.off / x->E, &pb) && pa == pb;
}

static bool overlap(const ctx_t *x, const rank_t *R, collie_bufref_t a, collie_bufref_t b, uint64_t n) {
  size_t pa, pb, ne = n / x->E;
  if (!ne) return false;
  return resolve(x, R, a.buf, a.off / x->E, &pa) == resolve(x, R, b.buf, b.off / x->E, &pb) &&
         pa < pb + ne && pb < pa + ne;
}

static void check_steps(ctx_t *x, int r) {
  rank_t *R = &x->R[r];
  const collie_sched_t *s = &R->s;
  char d[256];
#define DESC (step_desc(st, d, sizeof d), d)
  for (uint32_t i = 0; i < s->nsteps && x->rep->nfail < SV_MAX_FAIL; i++) {
    const collie_step_t *st = &s->steps[i];
    if (st->nbytes % x->E)
      failf(x, r, i, "%s: length not a whole number of elements (elem %zu)", DESC, x->E);
    for (uint32_t k = 0; k < st->ndeps; k++) {
      uint32_t dep = s->deps[st->dep_first + k];
      if (dep >= i) failf(x, r, i, "%s depends on step %u, which is not an earlier step", DESC, dep);
    }
    if (is_p2p(st->type)) {
      if (st->peer < 0 || st->peer >= x->n)
        failf(x, r, i, "%s: peer %d out of range", DESC, (int)st->peer);
      else if (st->peer == r)
        failf(x, r, i, "%s: message to itself (use a copy)", DESC);
    }
    if (!x->reduction && (st->type == COLLIE_STEP_RECV_REDUCE || st->type == COLLIE_STEP_REDUCE))
      failf(x, r, i, "%s: a reduction in a data-movement collective", DESC);
    if (x->c->coll == COLLIE_COLL_BARRIER && st->nbytes)
      failf(x, r, i, "%s: a barrier must only use zero-byte messages", DESC);
    switch (st->type) {
      case COLLIE_STEP_SEND: check_ref(x, r, i, "source", st->src, st->nbytes, false); break;
      case COLLIE_STEP_RECV: check_ref(x, r, i, "destination", st->dst, st->nbytes, true); break;
      case COLLIE_STEP_RECV_REDUCE:
      case COLLIE_STEP_COPY:
        check_ref(x, r, i, "source", st->src, st->nbytes, false);
        check_ref(x, r, i, "destination", st->dst, st->nbytes, true);
        break;
      case COLLIE_STEP_REDUCE:
        check_ref(x, r, i, "source", st->src, st->nbytes, false);
        check_ref(x, r, i, "source 2", st->src2, st->nbytes, false);
        check_ref(x, r, i, "destination", st->dst, st->nbytes, true);
        break;
      default: failf(x, r, i, "unknown step type %d", (int)st->type); continue;
    }
    if (x->rep->nfail) continue;
    if (st->type == COLLIE_STEP_COPY || st->type == COLLIE_STEP_RECV_REDUCE || st->type == COLLIE_STEP_REDUCE) {
      if (overlap(x, R, st->src, st->dst, st->nbytes) && !same_bytes(x, R, st->src, st->dst))
        failf(x, r, i, "%s: source and destination overlap without being the same bytes", DESC);
      if (st->type == COLLIE_STEP_REDUCE && overlap(x, R, st->src2, st->dst, st->nbytes) &&
          !same_bytes(x, R, st->src2, st->dst))
        failf(x, r, i, "%s: source 2 and destination overlap without being the same bytes", DESC);
    }
  }
#undef DESC
}

/* ------------------------------------------------------------------ message matching */

static bool match_messages(ctx_t *x) {
  int n = x->n;
  size_t np = (size_t)n * n;
  uint32_t *scnt = calloc(np, sizeof *scnt), *rcnt = calloc(np, sizeof *rcnt);
  size_t *base = malloc((np + 1) * sizeof *base);
  uint32_t *sslot = NULL, *rslot = NULL;
  bool ok = false, oom = true;
  if (!scnt || !rcnt || !base) goto out;
  for (int r = 0; r < n; r++) {
    const collie_sched_t *s = &x->R[r].s;
    for (uint32_t i = 0; i < s->nsteps; i++) {
      const collie_step_t *st = &s->steps[i];
      if (st->type == COLLIE_STEP_SEND)
        scnt[(size_t)r * n + st->peer]++;
      else if (is_p2p(st->type))
        rcnt[(size_t)st->peer * n + r]++;
    }
  }
  base[0] = 0;
  for (size_t p = 0; p < np; p++) {
    if (scnt[p] != rcnt[p])
      failf(x, (int)(p / n), -1, "rank %d sends %u messages to rank %d, which receives %u from it", (int)(p / n),
            scnt[p], (int)(p % n), rcnt[p]);
    base[p + 1] = base[p] + scnt[p];
  }
  if (x->rep->nfail) {
    oom = false;
    goto out;
  }
  sslot = malloc((base[np] + 1) * sizeof *sslot);
  rslot = malloc((base[np] + 1) * sizeof *rslot);
  if (!sslot || !rslot) goto out;
  memset(scnt, 0, np * sizeof *scnt);
  memset(rcnt, 0, np * sizeof *rcnt);
  for (int r = 0; r < n; r++) {
    const collie_sched_t *s = &x->R[r].s;
    for (uint32_t i = 0; i < s->nsteps; i++) {
      const collie_step_t *st = &s->steps[i];
      if (st->type == COLLIE_STEP_SEND) {
        size_t p = (size_t)r * n + st->peer;
        sslot[base[p] + scnt[p]++] = i;
      } else if (is_p2p(st->type)) {
        size_t p = (size_t)st->peer * n + r;
        rslot[base[p] + rcnt[p]++] = i;
      }
    }
  }
  for (size_t p = 0; p < np; p++) {
    int a = (int)(p / n), b = (int)(p % n);
    for (size_t k = base[p]; k < base[p + 1]; k++) {
      uint32_t si = sslot[k], ri = rslot[k];
      x->R[a].pstep[si] = ri;
      x->R[b].pstep[ri] = si;
      uint64_t sl = x->R[a].s.steps[si].nbytes, rl = x->R[b].s.steps[ri].nbytes;
      if (sl != rl && x->rep->nfail < SV_MAX_FAIL)
        failf(x, a, si, "message %zu from %d to %d: rank %d step %u sends %llu bytes, rank %d step %u receives %llu",
              k - base[p], a, b, a, si, (unsigned long long)sl, b, ri, (unsigned long long)rl);
    }
  }
  oom = false;
  ok = x->rep->nfail == 0;
out:
  if (oom) failf(x, -1, -1, "verifier out of memory matching messages");
  free(scnt);
  free(rcnt);
  free(base);
  free(sslot);
  free(rslot);
  return ok;
}

/* ------------------------------------------------------------------ hazards */

/* Two steps conflict when they touch the same bytes, one writing, and neither depends
 * (transitively) on the other. Checking every overlapping pair is quadratic when many
 * steps read the same bytes, so each elementary segment of a storage keeps its last
 * writer and the readers since: visiting accesses in step order (deps point backwards,
 * so this is a topological order), a read must follow the last write and a write must
 * follow the last write and every read since. Transitivity covers all other pairs. */

typedef struct {
  uint64_t start, end;
  uint32_t step;
  uint8_t st, w;
} acc_t;

typedef struct {
  uint32_t step, next;
} rnode_t;

static void build_anc(rank_t *R) {
  const collie_sched_t *s = &R->s;
  size_t w = (s->nsteps + 63) / 64;
  R->anc = calloc((size_t)s->nsteps * w + 1, sizeof(uint64_t));
  if (!R->anc) return;
  for (uint32_t i = 0; i < s->nsteps; i++) {
    uint64_t *ai = R->anc + (size_t)i * w;
    for (uint32_t k = 0; k < s->steps[i].ndeps; k++) {
      uint32_t d = s->deps[s->steps[i].dep_first + k];
      const uint64_t *ad = R->anc + (size_t)d * w;
      for (size_t q = 0; q <= d / 64; q++) ai[q] |= ad[q];
      ai[d / 64] |= 1ull << (d % 64);
    }
  }
}

/* Is step a (< b) a transitive dependency of step b? */
static bool ordered(rank_t *R, uint32_t a, uint32_t b, uint32_t *stack) {
  const collie_sched_t *s = &R->s;
  if (s->nsteps <= BITSET_MAX_STEPS) {
    if (!R->anc) build_anc(R);
    if (R->anc) {
      size_t w = (s->nsteps + 63) / 64;
      return (R->anc[(size_t)b * w + a / 64] >> (a % 64)) & 1;
    }
  }
  if (!R->stamp) {
    R->stamp = calloc(s->nsteps, sizeof *R->stamp);
    if (!R->stamp) return true; /* cannot tell: do not report */
  }
  uint32_t gen = ++R->stamp_gen, sp = 0;
  stack[sp++] = b;
  while (sp) {
    uint32_t v = stack[--sp];
    for (uint32_t k = 0; k < s->steps[v].ndeps; k++) {
      uint32_t d = s->deps[s->steps[v].dep_first + k];
      if (d == a) return true;
      if (d < a || R->stamp[d] == gen) continue;
      R->stamp[d] = gen;
      stack[sp++] = d;
    }
  }
  return false;
}

static void add_acc(const ctx_t *x, const rank_t *R, acc_t *acc, size_t *na, uint32_t i, collie_bufref_t ref,
                    uint64_t nbytes, bool w) {
  size_t pos, ne = nbytes / x->E;
  if (!ne) return;
  int st = resolve(x, R, ref.buf, ref.off / x->E, &pos);
  acc[*na].start = pos;
  acc[*na].end = pos + ne;
  acc[*na].step = i;
  acc[*na].st = (uint8_t)st;
  acc[*na].w = w;
  (*na)++;
}

/* Sorts a[0..n) using tmp[0..n): insertion sort when short, else LSD radix by bytes. */
static void sort_u64(uint64_t *a, size_t n, uint64_t *tmp) {
  if (n < 48) {
    for (size_t i = 1; i < n; i++) {
      uint64_t v = a[i];
      size_t j = i;
      for (; j && a[j - 1] > v; j--) a[j] = a[j - 1];
      a[j] = v;
    }
    return;
  }
  uint64_t max = 0;
  for (size_t i = 0; i < n; i++) max |= a[i];
  for (int shift = 0; shift < 64 && (max >> shift); shift += 8) {
    size_t cnt[257] = {0};
    for (size_t i = 0; i < n; i++) cnt[((a[i] >> shift) & 255) + 1]++;
    for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
    for (size_t i = 0; i < n; i++) tmp[cnt[(a[i] >> shift) & 255]++] = a[i];
    memcpy(a, tmp, n * sizeof *a);
  }
}

typedef struct {
  ctx_t *x;
  rank_t *R;
  int r;
  uint32_t *stack;
  uint32_t last_a, last_b; /* last pair found ordered */
  bool found;
} hz_t;

static void hazard_pair(hz_t *h, uint32_t a, uint32_t b) {
  if (a == b || h->found || (a == h->last_a && b == h->last_b)) return;
  if (ordered(h->R, a, b, h->stack)) {
    h->last_a = a;
    h->last_b = b;
    return;
  }
  char da[256], db[256];
  step_desc(&h->R->s.steps[a], da, sizeof da);
  step_desc(&h->R->s.steps[b], db, sizeof db);
  failf(h->x, h->r, b, "hazard: step %u (%s) and step %u (%s) touch the same bytes, one writing, but neither "
        "depends on the other", a, da, b, db);
  h->found = true;
}

static void check_hazards(ctx_t *x, int r) {
  rank_t *R = &x->R[r];
  const collie_sched_t *s = &R->s;
  size_t na = 0, npool = 0, cpool = 1024;
  acc_t *acc = malloc(((size_t)s->nsteps * 3 + 1) * sizeof *acc);
  uint32_t *stack = malloc(((size_t)s->nsteps + 1) * sizeof *stack);
  uint64_t *pts = malloc(((size_t)s->nsteps * 12 + 4) * sizeof *pts), *tmp = pts + (size_t)s->nsteps * 6 + 2;
  uint32_t *wr = NULL, *rh = NULL;
  rnode_t *pool = malloc(cpool * sizeof *pool);
  hz_t h = {x, R, r, stack, UINT32_MAX, UINT32_MAX, false};
  if (!acc || !stack || !pts || !pool) goto oom;
  for (uint32_t i = 0; i < s->nsteps; i++) { /* reads of a step before its write */
    const collie_step_t *st = &s->steps[i];
    switch (st->type) {
      case COLLIE_STEP_SEND: add_acc(x, R, acc, &na, i, st->src, st->nbytes, false); break;
      case COLLIE_STEP_RECV: add_acc(x, R, acc, &na, i, st->dst, st->nbytes, true); break;
      case COLLIE_STEP_COPY:
        if (same_bytes(x, R, st->src, st->dst)) break; /* skipped by the executor */
        add_acc(x, R, acc, &na, i, st->src, st->nbytes, false);
        add_acc(x, R, acc, &na, i, st->dst, st->nbytes, true);
        break;
      case COLLIE_STEP_RECV_REDUCE:
        add_acc(x, R, acc, &na, i, st->src, st->nbytes, false);
        add_acc(x, R, acc, &na, i, st->dst, st->nbytes, true);
        break;
      case COLLIE_STEP_REDUCE:
        add_acc(x, R, acc, &na, i, st->src, st->nbytes, false);
        add_acc(x, R, acc, &na, i, st->src2, st->nbytes, false);
        add_acc(x, R, acc, &na, i, st->dst, st->nbytes, true);
        break;
      default: break;
    }
  }
  for (int t = 0; t < NUM_ST && !h.found && x->rep->nfail < SV_MAX_FAIL; t++) {
    size_t np = 0;
    for (size_t k = 0; k < na; k++)
      if (acc[k].st == t) {
        pts[np++] = acc[k].start;
        pts[np++] = acc[k].end;
      }
    if (!np) continue;
    sort_u64(pts, np, tmp);
    size_t u = 0;
    for (size_t k = 0; k < np; k++)
      if (!u || pts[k] != pts[u - 1]) pts[u++] = pts[k];
    size_t nseg = u - 1;
    free(wr);
    free(rh);
    wr = malloc((nseg + 1) * sizeof *wr);
    rh = malloc((nseg + 1) * sizeof *rh);
    if (!wr || !rh) goto oom;
    memset(wr, 0xff, (nseg + 1) * sizeof *wr);
    memset(rh, 0xff, (nseg + 1) * sizeof *rh);
    npool = 0;
    for (size_t k = 0; k < na && !h.found; k++) {
      const acc_t *a = &acc[k];
      if (a->st != t) continue;
      size_t lo = 0, hi = u - 1; /* first segment starting at a->start */
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pts[mid] < a->start) lo = mid + 1; else hi = mid;
      }
      for (size_t g = lo; g < nseg && pts[g] < a->end && !h.found; g++) {
        if (wr[g] != UINT32_MAX) hazard_pair(&h, wr[g], a->step);
        if (!a->w) {
          if (rh[g] != UINT32_MAX && pool[rh[g]].step == a->step) continue;
          if (npool == cpool) {
            rnode_t *np2 = realloc(pool, 2 * cpool * sizeof *pool);
            if (!np2) goto oom;
            pool = np2;
            cpool *= 2;
          }
          pool[npool].step = a->step;
          pool[npool].next = rh[g];
          rh[g] = (uint32_t)npool++;
        } else {
          for (uint32_t q = rh[g]; q != UINT32_MAX && !h.found; q = pool[q].next)
            hazard_pair(&h, pool[q].step, a->step);
          wr[g] = a->step;
          rh[g] = UINT32_MAX;
        }
      }
    }
  }
  goto out;
oom:
  failf(x, r, -1, "verifier out of memory checking hazards");
out:
  free(acc);
  free(stack);
  free(pts);
  free(wr);
  free(rh);
  free(pool);
  free(R->anc);
  R->anc = NULL;
  free(R->stamp);
  R->stamp = NULL;
}

/* ------------------------------------------------------------------ execution */

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static bool combine(ctx_t *x, int r, uint32_t i, sval_t *dst, const sval_t *a, const sval_t *b, size_t ne) {
  for (size_t k = 0; k < ne; k++) {
    sval_t va = a[k], vb = b[k];
    if (x->memo_ok && va.b == x->memo_x && vb.b == x->memo_y && va.a == vb.a && va.a < GARBAGE_BASE) {
      dst[k].a = va.a; /* the common case: neighbours share their rank sets */
      dst[k].b = x->memo_r;
      continue;
    }
    char s1[256], s2[256], d[256];
    if (is_garbage(va) || is_garbage(vb) || va.a != vb.a) {
      val_desc(x, va, s1, sizeof s1);
      val_desc(x, vb, s2, sizeof s2);
      step_desc(&x->R[r].s.steps[i], d, sizeof d);
      failf(x, r, i, "%s: element %zu combines %s with %s%s", d, k, s1, s2,
            va.a != vb.a && !is_garbage(va) && !is_garbage(vb) ? " (different element indices)" : "");
      return false;
    }
    long dup;
    uint32_t u = expr_combine(x, va.b, vb.b, &dup);
    if (x->arena_failed) {
      failf(x, r, i, "verifier out of memory (rank sets)");
      return false;
    }
    if (dup >= 0) {
      val_desc(x, va, s1, sizeof s1);
      val_desc(x, vb, s2, sizeof s2);
      step_desc(&x->R[r].s.steps[i], d, sizeof d);
      failf(x, r, i, "%s: element %zu combines %s with %s: rank %ld's contribution counted twice", d, k, s1, s2,
            dup);
      return false;
    }
    dst[k].a = va.a;
    dst[k].b = u;
  }
  return true;
}

static void push_ready(ctx_t *x, int r, uint32_t i) {
  rank_t *R = &x->R[r];
  R->ready[R->nready++] = i;
  if (x->active_pos[r] < 0) {
    x->active_pos[r] = x->nactive;
    x->active[x->nactive++] = r;
  }
}

static uint32_t pop_ready(ctx_t *x, int r, uint64_t rnd) {
  rank_t *R = &x->R[r];
  uint32_t win = R->nready < 16 ? R->nready : 16;
  uint32_t k = R->nready - 1 - (uint32_t)(rnd % win);
  uint32_t i = R->ready[k];
  R->ready[k] = R->ready[--R->nready];
  if (!R->nready) { /* leaves the active list */
    int p = x->active_pos[r], last = x->active[--x->nactive];
    x->active[p] = last;
    x->active_pos[last] = p;
    x->active_pos[r] = -1;
  }
  return i;
}

static void complete(ctx_t *x, int r, uint32_t i, int from_rank, uint32_t from_step) {
  rank_t *R = &x->R[r];
  R->state[i] = S_DONE;
  R->ndone++;
  if (R->know) {
    uint64_t *k = R->know + (size_t)i * x->kw;
    const collie_step_t *st = &R->s.steps[i];
    k[r / 64] |= 1ull << (r % 64);
    for (uint32_t d = 0; d < st->ndeps; d++) {
      const uint64_t *kd = R->know + (size_t)R->s.deps[st->dep_first + d] * x->kw;
      for (size_t w = 0; w < x->kw; w++) k[w] |= kd[w];
    }
    if (from_rank >= 0) {
      const uint64_t *ks = x->R[from_rank].know + (size_t)from_step * x->kw;
      for (size_t w = 0; w < x->kw; w++) k[w] |= ks[w];
    }
  }
  for (uint32_t k = R->dfirst[i]; k < R->dfirst[i + 1]; k++) {
    uint32_t d = R->dlist[k];
    if (--R->pending[d] == 0) push_ready(x, r, d);
  }
}

/* Starts step i of rank r; returns false after a failure. */
static bool start(ctx_t *x, int r, uint32_t i) {
  rank_t *R = &x->R[r];
  const collie_step_t *st = &R->s.steps[i];
  size_t ne = st->nbytes / x->E;
  if (st->type == COLLIE_STEP_COPY) {
    if (ne) memmove(ptr(x, R, st->dst), ptr(x, R, st->src), ne * sizeof(sval_t));
    complete(x, r, i, -1, 0);
    return true;
  }
  if (st->type == COLLIE_STEP_REDUCE) {
    if (ne && !combine(x, r, i, ptr(x, R, st->dst), ptr(x, R, st->src), ptr(x, R, st->src2), ne)) return false;
    complete(x, r, i, -1, 0);
    return true;
  }
  R->state[i] = S_STARTED;
  int p = st->peer;
  uint32_t j = R->pstep[i];
  if (x->R[p].state[j] != S_STARTED) return true;
  int sr = st->type == COLLIE_STEP_SEND ? r : p, rr = sr == r ? p : r;
  uint32_t si = sr == r ? i : j, ri = sr == r ? j : i;
  rank_t *S = &x->R[sr], *D = &x->R[rr];
  const collie_step_t *ss = &S->s.steps[si], *rs = &D->s.steps[ri];
  if (ne) {
    const sval_t *in = ptr(x, S, ss->src);
    if (rs->type == COLLIE_STEP_RECV)
      memcpy(ptr(x, D, rs->dst), in, ne * sizeof(sval_t));
    else if (!combine(x, rr, ri, ptr(x, D, rs->dst), ptr(x, D, rs->src), in, ne))
      return false;
  }
  complete(x, sr, si, -1, 0);
  complete(x, rr, ri, sr, si);
  return true;
}

static void report_deadlock(ctx_t *x) {
  char msg[SV_MSG_LEN];
  size_t p = 0;
  int shown = 0, blocked = 0;
  p += (size_t)snprintf(msg, sizeof msg, "deadlock (rendezvous semantics): ");
  for (int r = 0; r < x->n; r++) {
    rank_t *R = &x->R[r];
    if (R->ndone == R->s.nsteps) continue;
    blocked++;
    if (shown >= 8 || p + 200 >= sizeof msg) continue;
    uint32_t i = 0;
    while (R->state[i] == S_DONE) i++;
    const collie_step_t *st = &R->s.steps[i];
    char d[256];
    step_desc(st, d, sizeof d);
    if (R->state[i] == S_STARTED)
      p += (size_t)snprintf(msg + p, sizeof msg - p, "[rank %d step %u: %s, started, peer's step %u not started] ",
                            r, i, d, R->pstep[i]);
    else {
      uint32_t dep = 0;
      for (uint32_t k = 0; k < st->ndeps; k++)
        if (R->state[R->s.deps[st->dep_first + k]] != S_DONE) {
          dep = R->s.deps[st->dep_first + k];
          break;
        }
      p += (size_t)snprintf(msg + p, sizeof msg - p, "[rank %d step %u: %s, waits for step %u] ", r, i, d, dep);
    }
    shown++;
  }
  if (blocked > shown) snprintf(msg + p, sizeof msg - p, "... %d ranks blocked in all", blocked);
  failf(x, -1, -1, "%s", msg);
}

static bool simulate(ctx_t *x) {
  x->active = malloc((size_t)x->n * sizeof *x->active);
  x->active_pos = malloc((size_t)x->n * sizeof *x->active_pos);
  if (!x->active || !x->active_pos) {
    failf(x, -1, -1, "verifier out of memory");
    return false;
  }
  x->nactive = 0;
  for (int r = 0; r < x->n; r++) x->active_pos[r] = -1;
  for (int r = 0; r < x->n; r++)
    for (uint32_t i = 0; i < x->R[r].s.nsteps; i++)
      if (x->R[r].pending[i] == 0) push_ready(x, r, i);
  /* Pseudo-random order that stays on one rank for a while (its data stays in cache) and
   * picks among its most recently enabled steps; one time in 256 it jumps to a random rank.
   * Completion under rendezvous does not depend on the order, and results can depend on
   * it only through hazards, which check_hazards finds statically: the random order is a
   * second line of defence. */
  int cur = -1;
  while (x->nactive) {
    uint64_t rnd = rng_next(&x->rng);
    if (cur < 0 || !x->R[cur].nready || (rnd & 255) == 0) cur = x->active[(rnd >> 8) % (uint64_t)x->nactive];
    uint32_t i = pop_ready(x, cur, rnd >> 32);
    if (!start(x, cur, i)) return false;
  }
  for (int r = 0; r < x->n; r++)
    if (x->R[r].ndone != x->R[r].s.nsteps) {
      report_deadlock(x);
      return false;
    }
  return true;
}

/* ------------------------------------------------------------------ results */

static sval_t recv_val(const ctx_t *x, int r, size_t i) {
  const rank_t *R = &x->R[r];
  return R->st[ST_USER][R->base_r + i];
}

static bool expect(ctx_t *x, int r, size_t i, sval_t want, bool full) {
  sval_t got = recv_val(x, r, i);
  bool ok = !is_garbage(got) && got.a == want.a && (full ? set_is_full(x, got.b) : got.b == want.b);
  if (ok) return true;
  char g[512], w[512];
  val_desc(x, got, g, sizeof g);
  if (full)
    snprintf(w, sizeof w, "all %d ranks @elem %u", x->n, want.a);
  else
    val_desc(x, want, w, sizeof w);
  failf(x, r, -1, "result: rank %d recv element %zu is %s, expected %s", r, i, g, w);
  return false;
}

/* Allreduce results must be bitwise identical on every rank: the same reduction tree
 * (operand order aside, our operations being commutative) as rank 0's. */
static bool same_as_rank0(ctx_t *x, int r, size_t i) {
  uint32_t e0 = recv_val(x, 0, i).b, e = recv_val(x, r, i).b;
  if (e == e0) return true;
  char a[400], b[400];
  expr_desc(x, e, a, sizeof a);
  expr_desc(x, e0, b, sizeof b);
  failf(x, r, -1, "result: rank %d recv element %zu is reduced as %s but rank 0's as %s: results would not be "
        "bitwise identical", r, i, a, b);
  return false;
}

static bool expect_red(ctx_t *x, int r, size_t i, size_t idx) {
  sval_t w = {(uint32_t)idx, 0};
  return expect(x, r, i, w, true);
}

static bool expect_data(ctx_t *x, int r, size_t i, int q, size_t idx) {
  sval_t w = {(uint32_t)q, (uint32_t)idx};
  return expect(x, r, i, w, false);
}

/* v-variants: receive elements no block covers must keep their initial value. */
static void check_gaps(ctx_t *x, int r, const uint8_t *covered) {
  rank_t *R = &x->R[r];
  for (size_t i = 0; i < R->recv_elems; i++) {
    if (covered[i]) continue;
    sval_t got = recv_val(x, r, i), want = init_val(x, r, ST_USER, R->base_r + i);
    if (got.a != want.a || got.b != want.b) {
      char g[512];
      val_desc(x, got, g, sizeof g);
      failf(x, r, -1, "result: rank %d recv element %zu lies between blocks but was overwritten with %s", r, i, g);
      return;
    }
  }
}

static void check_barrier(ctx_t *x) {
  for (int r = 0; r < x->n && x->rep->nfail < SV_MAX_FAIL; r++) {
    rank_t *R = &x->R[r];
    uint64_t *all = calloc(x->kw, sizeof *all);
    if (!all) return;
    all[r / 64] |= 1ull << (r % 64);
    for (uint32_t i = 0; i < R->s.nsteps; i++)
      for (size_t w = 0; w < x->kw; w++) all[w] |= R->know[(size_t)i * x->kw + w];
    for (int q = 0; q < x->n; q++)
      if (!((all[q / 64] >> (q % 64)) & 1)) {
        failf(x, r, -1, "barrier: rank %d can finish before rank %d has started (no chain of messages from it)", r,
              q);
        break;
      }
    free(all);
  }
}

static void check_results(ctx_t *x) {
  const sv_case_t *c = x->c;
  int n = x->n;
  size_t cnt = c->count;
  for (int r = 0; r < n && x->rep->nfail < SV_MAX_FAIL; r++) {
    rank_t *R = &x->R[r];
    bool ok = true;
    switch (c->coll) {
      case COLLIE_COLL_ALLREDUCE:
        for (size_t i = 0; ok && i < cnt; i++) ok = expect_red(x, r, i, i);
        for (size_t i = 0; ok && r > 0 && i < cnt; i++) ok = same_as_rank0(x, r, i);
        break;
      case COLLIE_COLL_REDUCE:
        for (size_t i = 0; ok && r == c->root && i < cnt; i++) ok = expect_red(x, r, i, i);
        break;
      case COLLIE_COLL_REDUCE_SCATTER:
        for (size_t i = 0; ok && i < cnt; i++) ok = expect_red(x, r, i, (size_t)r * cnt + i);
        break;
      case COLLIE_COLL_REDUCE_SCATTERV: {
        size_t off = prefix(c->counts, r);
        for (size_t i = 0; ok && i < c->counts[r]; i++) ok = expect_red(x, r, i, off + i);
        break;
      }
      case COLLIE_COLL_BROADCAST:
        for (size_t i = 0; ok && i < cnt; i++) ok = expect_data(x, r, i, c->root, i);
        break;
      case COLLIE_COLL_ALLGATHER:
        for (int q = 0; q < n; q++)
          for (size_t i = 0; ok && i < cnt; i++) ok = expect_data(x, r, (size_t)q * cnt + i, q, i);
        break;
      case COLLIE_COLL_ALLTOALL:
        for (int q = 0; q < n; q++)
          for (size_t i = 0; ok && i < cnt; i++) ok = expect_data(x, r, (size_t)q * cnt + i, q, (size_t)r * cnt + i);
        break;
      case COLLIE_COLL_SCATTER:
        for (size_t i = 0; ok && i < cnt; i++) ok = expect_data(x, r, i, c->root, (size_t)r * cnt + i);
        break;
      case COLLIE_COLL_GATHER:
        for (int q = 0; r == c->root && q < n; q++)
          for (size_t i = 0; ok && i < cnt; i++) ok = expect_data(x, r, (size_t)q * cnt + i, q, i);
        break;
      case COLLIE_COLL_ALLGATHERV:
      case COLLIE_COLL_ALLTOALLV: {
        uint8_t *cov = calloc(R->recv_elems + 1, 1);
        if (!cov) return;
        for (int q = 0; q < n; q++) {
          size_t len, at, from;
          if (c->coll == COLLIE_COLL_ALLGATHERV) {
            len = c->counts[q], at = c->displs[q], from = 0;
          } else {
            len = c->a2a_counts[(size_t)q * n + r];
            at = c->a2a_rdispls[(size_t)r * n + q];
            from = c->in_place ? c->a2a_rdispls[(size_t)q * n + r] : c->a2a_sdispls[(size_t)q * n + r];
          }
          for (size_t i = 0; i < len; i++) {
            cov[at + i] = 1;
            if (ok) ok = expect_data(x, r, at + i, q, from + i);
          }
        }
        if (ok) check_gaps(x, r, cov);
        free(cov);
        break;
      }
      case COLLIE_COLL_BARRIER: break;
      default: break;
    }
  }
  if (c->coll == COLLIE_COLL_BARRIER) check_barrier(x);
}

/* ------------------------------------------------------------------ one run */

static bool is_reduction(collie_coll_t c) {
  return c == COLLIE_COLL_ALLREDUCE || c == COLLIE_COLL_REDUCE || c == COLLIE_COLL_REDUCE_SCATTER ||
         c == COLLIE_COLL_REDUCE_SCATTERV;
}

static bool setup_rank(ctx_t *x, int r) {
  rank_t *R = &x->R[r];
  const collie_sched_t *s = &R->s;
  uint32_t n = s->nsteps;
  R->state = calloc(n + 1, 1);
  R->pending = malloc((n + 1) * sizeof(uint32_t));
  R->dfirst = calloc(n + 2, sizeof(uint32_t));
  R->dlist = malloc(((size_t)s->ndeps + 1) * sizeof(uint32_t));
  R->pstep = malloc((n + 1) * sizeof(uint32_t));
  R->ready = malloc((n + 1) * sizeof(uint32_t));
  if (!R->state || !R->pending || !R->dfirst || !R->dlist || !R->pstep || !R->ready) return false;
  for (uint32_t i = 0; i < n; i++) {
    R->pending[i] = s->steps[i].ndeps;
    for (uint32_t k = 0; k < s->steps[i].ndeps; k++) R->dfirst[s->deps[s->steps[i].dep_first + k] + 1]++;
  }
  for (uint32_t i = 0; i < n; i++) R->dfirst[i + 1] += R->dfirst[i];
  uint32_t *fill = calloc(n + 1, sizeof(uint32_t));
  if (!fill) return false;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < s->steps[i].ndeps; k++) {
      uint32_t d = s->deps[s->steps[i].dep_first + k];
      R->dlist[R->dfirst[d] + fill[d]++] = i;
    }
  free(fill);
  if (x->c->coll == COLLIE_COLL_BARRIER) {
    R->know = calloc((size_t)(n + 1) * x->kw, sizeof(uint64_t));
    if (!R->know) return false;
  }
  /* storage */
  size_t sc = (size_t)(s->scratch_bytes / x->E);
  if (x->c->in_place) {
    size_t a = R->base_s + R->send_elems, b = R->base_r + R->recv_elems;
    R->st_size[ST_USER] = a > b ? a : b;
    R->st_size[ST_SEND] = 0;
  } else {
    R->st_size[ST_USER] = R->recv_elems;
    R->st_size[ST_SEND] = R->send_elems;
  }
  R->st_size[ST_SCR] = sc;
  for (int t = 0; t < NUM_ST; t++) {
    R->st[t] = malloc((R->st_size[t] + 1) * sizeof(sval_t));
    if (!R->st[t]) return false;
    for (size_t p = 0; p < R->st_size[t]; p++) R->st[t][p] = (sval_t){GARBAGE_BASE + (uint32_t)t, (uint32_t)p};
  }
  sval_t *in = x->c->in_place ? R->st[ST_USER] + R->base_s : R->st[ST_SEND];
  for (size_t i = 0; i < R->send_elems; i++) in[i] = init_val(x, r, x->c->in_place ? ST_USER : ST_SEND,
                                                            (x->c->in_place ? R->base_s : 0) + i);
  return true;
}

static void free_rank(rank_t *R) {
  collie_sched_free(&R->s);
  free(R->state);
  free(R->pending);
  free(R->dfirst);
  free(R->dlist);
  free(R->pstep);
  free(R->ready);
  free(R->know);
  free(R->anc);
  free(R->stamp);
  for (int t = 0; t < NUM_ST; t++) free(R->st[t]);
}

static sv_status_t build_all(ctx_t *x) {
  const sv_case_t *c = x->c;
  int n = x->n, declined = 0, built = 0;
  size_t *col = NULL;
  if (c->coll == COLLIE_COLL_ALLTOALLV && !(col = malloc((size_t)n * sizeof *col))) {
    failf(x, -1, -1, "verifier out of memory");
    return SV_FAIL;
  }
  for (int r = 0; r < n; r++) {
    rank_t *R = &x->R[r];
    collie_coll_args_t a;
    memset(&a, 0, sizeof a);
    a.coll = c->coll;
    a.nranks = n;
    a.rank = r;
    a.root = c->root;
    a.count = c->count;
    a.elem_size = x->E;
    a.in_place = c->in_place;
    a.chunk_bytes = c->chunk_bytes;
    a.group_of = c->group_of;
    a.ngroups = c->ngroups;
    if (c->coll == COLLIE_COLL_ALLGATHERV || c->coll == COLLIE_COLL_REDUCE_SCATTERV) {
      a.counts = c->counts;
      a.displs = c->coll == COLLIE_COLL_ALLGATHERV ? c->displs : NULL;
    } else if (c->coll == COLLIE_COLL_ALLTOALLV) {
      for (int q = 0; q < n; q++) col[q] = c->a2a_counts[(size_t)q * n + r];
      a.counts = &c->a2a_counts[(size_t)r * n];
      a.displs = c->in_place ? &c->a2a_rdispls[(size_t)r * n] : &c->a2a_sdispls[(size_t)r * n];
      a.counts2 = col;
      a.displs2 = &c->a2a_rdispls[(size_t)r * n];
      a.matrix = c->a2a_counts; /* what the coll layer gathers before a forced bruck */
    }
    collie_sched_init(&R->s, n, r, x->E);
    collie_result_t rc = c->build(&a, &R->s);
    if (rc == COLLIE_ERR_INVALID_ARGUMENT) {
      declined++;
      collie_sched_reset(&R->s);
    } else if (rc != COLLIE_SUCCESS) {
      failf(x, r, -1, "builder returned %d", (int)rc);
    } else {
      built++;
      if (R->s.failed) failf(x, r, -1, "schedule marked failed (allocation)");
      if (R->s.nranks != n || R->s.rank != r || R->s.elem_size != x->E)
        failf(x, r, -1, "schedule header changed: nranks %d rank %d elem_size %zu", R->s.nranks, R->s.rank,
              R->s.elem_size);
      if (R->s.scratch_bytes / x->E > MAX_SCRATCH_ELEMS)
        failf(x, r, -1, "scratch of %llu bytes is beyond what the verifier models",
              (unsigned long long)R->s.scratch_bytes);
    }
  }
  free(col);
  if (declined && built) {
    int d = -1, b = -1;
    for (int r = 0; r < n; r++) {
      if (x->R[r].s.nsteps == 0 && d < 0) d = r;
      if (x->R[r].s.nsteps && b < 0) b = r;
    }
    failf(x, -1, -1, "ranks disagree: %d declined and %d built (e.g. ranks %d and %d)", declined, built, d, b);
  }
  if (x->rep->nfail) return SV_FAIL;
  return declined ? SV_DECLINED : SV_OK;
}

sv_status_t sv_run(const sv_case_t *c, sv_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  ctx_t x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.rep = rep;
  x.n = c->nranks;
  x.E = c->elem_size ? c->elem_size : 1;
  x.reduction = is_reduction(c->coll);
  x.kw = ((size_t)x.n + 63) / 64;
  x.rng = c->seed * 0x2545F4914F6CDD1Dull + (uint64_t)x.n * 1000003u + c->count;
  sv_status_t status = SV_FAIL;
  if (x.n < 1) {
    failf(&x, -1, -1, "bad case: nranks %d", x.n);
    return SV_FAIL;
  }
  x.R = calloc((size_t)x.n, sizeof *x.R);
  x.single = malloc((size_t)x.n * sizeof *x.single);
  if (!x.R || !x.single || !arena_reserve(&x, 3 * (size_t)x.n)) {
    failf(&x, -1, -1, "verifier out of memory");
    goto out;
  }
  for (int r = 0; r < x.n; r++) {
    x.single[r] = expr_new(&x, NO_EXPR, NO_EXPR, (uint32_t)x.alen);
    x.arena[x.alen++] = 1;
    x.arena[x.alen++] = (uint32_t)r;
    x.arena[x.alen++] = (uint32_t)r + 1;
  }
  if (x.arena_failed) {
    failf(&x, -1, -1, "verifier out of memory");
    goto out;
  }
  status = build_all(&x);
  if (status != SV_OK) goto out;
  status = SV_FAIL;
  for (int r = 0; r < x.n; r++) {
    rank_t *R = &x.R[r];
    size_t sz[3];
    layout(c, r, &R->send_elems, &R->recv_elems, &R->base_s, &R->base_r);
    sz[COLLIE_BUF_SEND] = R->send_elems * x.E;
    sz[COLLIE_BUF_RECV] = R->recv_elems * x.E;
    sz[COLLIE_BUF_SCRATCH] = (size_t)R->s.scratch_bytes;
    for (int b = 0; b < 3; b++) R->size_bytes[b] = sz[b];
    rep->total_steps += R->s.nsteps;
    if (R->s.nsteps > rep->max_steps) rep->max_steps = R->s.nsteps;
  }
  for (int r = 0; r < x.n && !rep->nfail; r++) check_steps(&x, r);
  if (rep->nfail) goto out;
  for (int r = 0; r < x.n; r++)
    if (!setup_rank(&x, r)) {
      failf(&x, r, -1, "verifier out of memory");
      goto out;
    }
  if (!match_messages(&x)) goto out;
  for (int r = 0; r < x.n && !rep->nfail; r++) check_hazards(&x, r);
  if (rep->nfail) goto out;
  if (!simulate(&x)) goto out;
  check_results(&x);
  if (!rep->nfail) status = SV_OK;
out:
  if (x.R)
    for (int r = 0; r < x.n; r++) free_rank(&x.R[r]);
  free(x.R);
  free(x.single);
  free(x.arena);
  free(x.ex_l);
  free(x.ex_r);
  free(x.ex_set);
  free(x.hkey);
  free(x.hval);
  free(x.active);
  free(x.active_pos);
  return rep->nfail ? SV_FAIL : status;
}
