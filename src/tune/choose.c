/* Which algorithm serves a collective: the user's COLLIE_ALGO when it applies, else the
 * cheapest by the cost model (cost_model.c) over the communicator's table. */
#include <stdio.h>
#include <string.h>

#include "algo/native/shm_native.h"
#include "core/comm.h"
#include "core/log.h"
#include "transport/shm.h"
#include "tune/tune.h"

static bool excluded(const collie_algo_rules_t *rules, collie_coll_t coll, const char *name) {
  for (int i = 0; i < rules->n; i++)
    if (rules->e[i].exclude && (rules->e[i].coll < 0 || rules->e[i].coll == (int)coll) &&
        !strcmp(rules->e[i].name, name))
      return true;
  return false;
}

/* Algorithms without a formula sort after every estimated one. */
#define NO_ESTIMATE 1e300

int collie_tune_rank(const collie_algo_rules_t *rules, const collie_tune_ctx_t *ctx, collie_coll_t coll, size_t bytes,
                     const collie_algo_t **out, double *est, int max, bool *forced) {
  int n = 0;
  *forced = false;
  if (max <= 0) return 0;
  /* A per-collective entry beats a global one. */
  const char *want = NULL;
  for (int i = 0; rules && i < rules->n; i++)
    if (!rules->e[i].exclude && rules->e[i].coll == (int)coll) want = rules->e[i].name;
  if (!want)
    for (int i = 0; rules && i < rules->n; i++)
      if (!rules->e[i].exclude && rules->e[i].coll < 0 && collie_algo_find(coll, rules->e[i].name)) {
        want = rules->e[i].name;
        break;
      }
  if (want) {
    const collie_algo_t *a = collie_algo_find(coll, want);
    if (a) {
      if (est) {
        double e = collie_tune_estimate(ctx, coll, a->name, bytes);
        est[n] = e < 0 ? NO_ESTIMATE : e;
      }
      out[n++] = a;
      *forced = true;
    }
  }
  /* The rest, cheapest first; equal estimates keep the registry's order. */
  const collie_algo_t *rest[32];
  double cost[32];
  int m = 0;
  for (const collie_algo_t *a = collie_algos; a->name && m < 32; a++) {
    if (a->coll != coll || (n && a == out[0]) || (rules && excluded(rules, coll, a->name))) continue;
    double e = collie_tune_estimate(ctx, coll, a->name, bytes);
    rest[m] = a;
    cost[m] = e < 0 ? NO_ESTIMATE : e;
    m++;
  }
  for (int i = 1; i < m; i++) /* insertion sort: stable */
    for (int j = i; j > 0 && cost[j] < cost[j - 1]; j--) {
      double tc = cost[j];
      cost[j] = cost[j - 1];
      cost[j - 1] = tc;
      const collie_algo_t *ta = rest[j];
      rest[j] = rest[j - 1];
      rest[j - 1] = ta;
    }
  for (int i = 0; i < m && n < max; i++) {
    if (est) est[n] = cost[i];
    out[n++] = rest[i];
  }
  /* Everything excluded: keep the fallback so that the collective still works. */
  if (n == 0) {
    const collie_algo_t *a = collie_algo_find(coll, NULL);
    if (a) {
      if (est) est[n] = NO_ESTIMATE;
      out[n++] = a;
    }
  }
  return n;
}

/* Ranks on the busiest host, from every rank's host identity (the same on every rank). */
static int busiest_host(const collie_comm_t *comm) {
  if (!comm->cards) return comm->nlocal > 0 ? comm->nlocal : 1;
  int best = 1;
  for (int r = 0; r < comm->nranks; r++) {
    int same = 0, first = 1;
    for (int q = 0; q < comm->nranks && first; q++) {
      if (strcmp(comm->cards[q].host_id, comm->cards[r].host_id)) continue;
      if (q < r) first = 0; /* counted already, at its first rank */
      same++;
    }
    if (first && same > best) best = same;
  }
  return best;
}

static void make_ctx(collie_comm_t *comm, collie_tune_ctx_t *ctx) {
  memset(ctx, 0, sizeof(*ctx)); /* compared whole in the decision memo */
  collie_tune_state_t *st = comm->algo_spec;
  int hr = atomic_load_explicit(&st->host_ranks, memory_order_relaxed);
  if (!hr) {
    hr = busiest_host(comm);
    atomic_store_explicit(&st->host_ranks, hr, memory_order_relaxed);
  }
  ctx->table = &st->table;
  /* All ranks on one host: shared memory. Otherwise the slower link, TCP, dominates. */
  ctx->link = comm->nlocal == comm->nranks ? COLLIE_LINK_SHM : COLLIE_LINK_TCP;
  ctx->nranks = comm->nranks;
  /* Oversubscription only within one host: every rank then sees the same core count.
   * Across hosts a rank cannot know the others' cores, and ranks that weighed it
   * differently would choose different algorithms. */
  ctx->ranks_per_core = hr == comm->nranks ? (double)hr / (st->ncpus > 0 ? st->ncpus : 1) : 1.0;
  ctx->chunk_bytes = comm->chunk_bytes;
  ctx->area_bytes = comm->shm && comm->shm->area_off ? comm->shm->round_size : 0;
  ctx->bcast_split_min = comm->nlocal == comm->nranks ? collie_native_bcast_split_min(comm) : 0;
  ctx->cma_msgs = comm->nlocal == comm->nranks && comm->shm && comm->shm->cma_ok && comm->shm->cma_msgs;
  ctx->groups = comm->ngroups;
  ctx->group_size = comm->group_size;
}

int collie_tune_candidates(collie_comm_t *comm, collie_coll_t coll, size_t bytes, const collie_algo_t **out, int max,
                           bool *forced) {
  collie_tune_state_t *st = comm->algo_spec;
  collie_tune_ctx_t ctx;
  make_ctx(comm, &ctx);
  unsigned slot = (unsigned)((bytes * 0x9e3779b97f4a7c15ull) >> 58) ^ (unsigned)coll;
  slot %= sizeof(st->memo) / sizeof(st->memo[0]);
  int n = -1;
  pthread_mutex_lock(&st->memo_lock);
  if (st->memo[slot].used && st->memo[slot].coll == (int)coll && st->memo[slot].bytes == bytes && max >= 16 &&
      !memcmp(&st->memo[slot].ctx, &ctx, sizeof(ctx))) {
    n = st->memo[slot].n;
    *forced = st->memo[slot].forced;
    memcpy(out, st->memo[slot].cands, sizeof(out[0]) * (size_t)n);
  }
  pthread_mutex_unlock(&st->memo_lock);
  if (n >= 0) return n;
  n = collie_tune_rank(&st->rules, &ctx, coll, bytes, out, NULL, max, forced);
  if (max >= 16 && n <= 16) {
    pthread_mutex_lock(&st->memo_lock);
    st->memo[slot].used = true;
    st->memo[slot].forced = *forced;
    st->memo[slot].coll = (int)coll;
    st->memo[slot].n = n;
    st->memo[slot].bytes = bytes;
    st->memo[slot].ctx = ctx;
    memcpy(st->memo[slot].cands, out, sizeof(out[0]) * (size_t)n);
    pthread_mutex_unlock(&st->memo_lock);
  }
  return n;
}

void collie_tune_log_choice(collie_comm_t *comm, collie_coll_t coll, size_t bytes, const collie_algo_t *const *cands,
                            int n, const collie_algo_t *chosen, bool forced) {
  if (!collie_log_enabled(COLLIE_LOG_INFO, COLLIE_SUB_TUNE)) return;
  collie_tune_ctx_t ctx;
  make_ctx(comm, &ctx);
  collie_tune_state_t *st = comm->algo_spec;
  if (comm->rank == 0 && !atomic_exchange(&st->described, 1)) {
    const int l = ctx.link, hr = atomic_load(&st->host_ranks);
    const double r = ctx.ranks_per_core > 1 ? ctx.ranks_per_core : 1;
    char over[160];
    if (hr != comm->nranks)
      snprintf(over, sizeof over, "ranks on several hosts (up to %d on one): no oversubscription factor", hr);
    else
      snprintf(over, sizeof over, "%d ranks on %d cores: alpha x%.3g, beta gamma delta x%.3g", hr, st->ncpus,
               1 + st->table.oversub_alpha_scale * (r - 1), r);
    COLLIE_INFO(COLLIE_SUB_TUNE, comm->rank,
                "cost model for communicator %016llx: transport %s (%d of %d ranks on this host), alpha %.3g us, "
                "beta %.3g us/B, gamma %.3g us/B, delta %.3g us/B; %s; source %s",
                (unsigned long long)comm->comm_hash, collie_link_name(ctx.link), comm->nlocal, comm->nranks,
                st->table.link[l].alpha_us, st->table.link[l].beta_us_per_byte, st->table.gamma_us_per_byte,
                st->table.delta_us_per_byte, over, st->table.source);
  }
  const bool was_forced = forced && n > 0 && chosen == cands[0];
  const char *why = was_forced ? "forced by COLLIE_ALGO" : forced ? "forced algorithm declined; cost model" : "cost model";
  if (comm->rank != 0) { /* rank 0 speaks for the model: every rank computes the same */
    COLLIE_INFO(COLLIE_SUB_TUNE, comm->rank, "%s: %zu bytes on %d ranks -> %s (%s)", collie_coll_name(coll), bytes,
                comm->nranks, chosen ? chosen->name : "none", why);
    return;
  }
  char line[1024];
  size_t o = 0;
  for (int i = 0; i < n && o < sizeof(line) - 64; i++) {
    double e = collie_tune_estimate(&ctx, coll, cands[i]->name, bytes);
    if (e < 0)
      o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s ?", i ? ", " : "", cands[i]->name);
    else
      o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s %.4g us", i ? ", " : "", cands[i]->name, e);
  }
  COLLIE_INFO(COLLIE_SUB_TUNE, comm->rank, "%s: %zu bytes on %d ranks -> %s (%s); estimates over %s: %s",
              collie_coll_name(coll), bytes, comm->nranks, chosen ? chosen->name : "none", why,
              collie_link_name(ctx.link), line);
}
