/* Which algorithm serves a collective: the user's COLLIE_ALGO when it applies, else a
 * simple alpha-beta estimate over the algorithms of that collective. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "tune/tune.h"

/* Rough per-transport figures for this machine kind (issue 5 measures them). */
#define ALPHA_US 2.0   /* per message round */
#define BETA_US_PER_B (1.0 / 3000.0) /* 3 GB/s */

static int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

/* Estimated microseconds for one rank's part of the collective. */
static double estimate(const char *name, collie_coll_t coll, int p, double bytes) {
  double lg = ceil_log2(p), a = ALPHA_US, b = BETA_US_PER_B, frac = (p - 1.0) / p;
  if (p == 1) return 0;
  switch (coll) {
    case COLLIE_COLL_ALLREDUCE:
      if (!strcmp(name, "ring")) return 2 * (p - 1) * a + 2 * frac * bytes * b;
      if (!strcmp(name, "rd")) return lg * a + lg * bytes * b;
      if (!strcmp(name, "hd")) return 2 * lg * a + 2 * frac * bytes * b + (p & (p - 1) ? 2 * a + bytes * b : 0);
      if (!strcmp(name, "tree")) return 2 * lg * a + 2 * bytes * b;
      if (!strcmp(name, "mesh")) return 2 * a + 2 * frac * bytes * b * (p > 4 ? 1.5 : 1.0);
      break;
    case COLLIE_COLL_ALLGATHER:
    case COLLIE_COLL_ALLGATHERV:
    case COLLIE_COLL_REDUCE_SCATTER:
    case COLLIE_COLL_REDUCE_SCATTERV:
      if (!strcmp(name, "ring")) return (p - 1) * a + frac * bytes * b;
      if (!strcmp(name, "rd") || !strcmp(name, "hd") || !strcmp(name, "bruck")) return lg * a + frac * bytes * b * 1.1;
      if (!strcmp(name, "mesh")) return a + frac * bytes * b * (p > 4 ? 1.5 : 1.0);
      break;
    case COLLIE_COLL_BROADCAST:
      if (!strcmp(name, "binomial")) return lg * (a + bytes * b);
      if (!strcmp(name, "chain")) return (p - 1) * a + bytes * b * 1.2;
      if (!strcmp(name, "scatter_allgather")) return (lg + p - 1) * a + 2 * frac * bytes * b;
      break;
    case COLLIE_COLL_REDUCE:
      if (!strcmp(name, "binomial")) return lg * (a + bytes * b);
      if (!strcmp(name, "chain")) return (p - 1) * a + bytes * b * 1.2;
      if (!strcmp(name, "rs_gather")) return 2 * (p - 1) * a + 2 * frac * bytes * b;
      break;
    case COLLIE_COLL_ALLTOALL:
    case COLLIE_COLL_ALLTOALLV:
      if (!strcmp(name, "pairwise")) return (p - 1) * a + frac * bytes * b;
      if (!strcmp(name, "bruck")) return lg * a + lg * bytes * b / 2;
      if (!strcmp(name, "mesh")) return a + frac * bytes * b * 1.1;
      break;
    default:
      break;
  }
  return 1e18;
}

static bool excluded(const collie_algo_spec_t *spec, collie_coll_t coll, const char *name) {
  for (int i = 0; i < spec->n; i++)
    if (spec->e[i].exclude && (spec->e[i].coll < 0 || spec->e[i].coll == (int)coll) && !strcmp(spec->e[i].name, name))
      return true;
  return false;
}

int collie_tune_candidates(const collie_algo_spec_t *spec, collie_coll_t coll, int nranks, size_t bytes,
                           const collie_algo_t **out, int max, bool *forced) {
  int n = 0;
  *forced = false;
  /* A per-collective entry beats a global one. */
  const char *want = NULL;
  for (int i = 0; i < spec->n; i++)
    if (!spec->e[i].exclude && spec->e[i].coll == (int)coll) want = spec->e[i].name;
  if (!want)
    for (int i = 0; i < spec->n; i++)
      if (!spec->e[i].exclude && spec->e[i].coll < 0 && collie_algo_find(coll, spec->e[i].name)) {
        want = spec->e[i].name;
        break;
      }
  if (want) {
    const collie_algo_t *a = collie_algo_find(coll, want);
    if (a) {
      out[n++] = a;
      *forced = true;
    }
  }
  /* The rest, cheapest first. */
  const collie_algo_t *rest[32];
  double cost[32];
  int m = 0;
  for (const collie_algo_t *a = collie_algos; a->name && m < 32; a++) {
    if (a->coll != coll || (n && a == out[0]) || excluded(spec, coll, a->name)) continue;
    rest[m] = a;
    cost[m] = estimate(a->name, coll, nranks, (double)bytes);
    m++;
  }
  for (int i = 0; i < m; i++)
    for (int j = i + 1; j < m; j++)
      if (cost[j] < cost[i]) {
        double tc = cost[i];
        cost[i] = cost[j];
        cost[j] = tc;
        const collie_algo_t *ta = rest[i];
        rest[i] = rest[j];
        rest[j] = ta;
      }
  for (int i = 0; i < m && n < max; i++) out[n++] = rest[i];
  /* Everything excluded: keep the fallback so that the collective still works. */
  if (n == 0) {
    const collie_algo_t *a = collie_algo_find(coll, NULL);
    if (a) out[n++] = a;
  }
  return n;
}
