/* A communicator's tuning state, set up at creation: COLLIE_ALGO / config->algo ("ring"
 * for every collective that has it, "allreduce:tree;allgather:bruck" per collective,
 * "^mesh" to exclude), COLLIE_PROTO / config->proto, and the cost table (defaults or
 * COLLIE_TUNING_FILE). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "algo/algo.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/log.h"
#include "core/params.h"
#include "tune/tune.h"

static int coll_by_name(const char *name) {
  for (int c = 0; c < COLLIE_NUM_COLLS; c++)
    if (!strcmp(collie_coll_name((collie_coll_t)c), name)) return c;
  return -1;
}

static bool algo_name_known(const char *name) {
  for (const collie_algo_t *a = collie_algos; a->name; a++)
    if (!strcmp(a->name, name)) return true;
  return false;
}

static void list_names(char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (const collie_algo_t *a = collie_algos; a->name && o < len - 32; a++) {
    bool seen = false;
    for (const collie_algo_t *b = collie_algos; b < a; b++)
      if (!strcmp(a->name, b->name)) seen = true;
    if (!seen) o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", a->name);
  }
}

/* The collectives that have algorithms to choose from, in their order. */
static void list_colls(char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (int c = 0; c < COLLIE_NUM_COLLS && o < len - 32; c++)
    for (const collie_algo_t *a = collie_algos; a->name; a++)
      if ((int)a->coll == c) {
        o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", collie_coll_name(a->coll));
        break;
      }
}

/* Walks the spec; for each (collective or NULL, name, excluded) calls fn. Returns -1 and
 * fills err on malformed text or unknown names. */
int collie_algo_spec_parse(const char *spec, collie_algo_rules_t *out, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  if (!spec || !*spec) return 0;
  char buf[512];
  snprintf(buf, sizeof(buf), "%s", spec);
  for (char *save, *tok = strtok_r(buf, ";,", &save); tok; tok = strtok_r(NULL, ";,", &save)) {
    while (*tok == ' ') tok++;
    if (!*tok) continue;
    int coll = -1;
    char *colon = strchr(tok, ':');
    if (colon) {
      *colon = 0;
      coll = coll_by_name(tok);
      if (coll < 0) {
        char names[256];
        list_colls(names, sizeof(names));
        snprintf(err, errlen, "COLLIE_ALGO names an unknown collective '%s'; valid names: %s", tok, names);
        return -1;
      }
      tok = colon + 1;
    }
    bool exclude = *tok == '^';
    if (exclude) tok++;
    if (!algo_name_known(tok)) {
      char names[512];
      list_names(names, sizeof(names));
      snprintf(err, errlen, "COLLIE_ALGO names an unknown algorithm '%s'; valid names: %s", tok, names);
      return -1;
    }
    if (coll >= 0 && !collie_algo_find((collie_coll_t)coll, tok)) {
      /* "broadcast:ring" would otherwise be silently ignored. */
      char names[256];
      size_t o = 0;
      names[0] = 0;
      for (const collie_algo_t *a = collie_algos; a->name && o < sizeof(names) - 32; a++)
        if ((int)a->coll == coll) o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", o ? ", " : "", a->name);
      snprintf(err, errlen, "COLLIE_ALGO: %s has no algorithm '%s'; its algorithms are: %s",
               collie_coll_name((collie_coll_t)coll), tok, names);
      return -1;
    }
    if (out->n == COLLIE_ALGO_SPEC_MAX) {
      snprintf(err, errlen, "COLLIE_ALGO has more than %d entries", COLLIE_ALGO_SPEC_MAX);
      return -1;
    }
    out->e[out->n].coll = coll;
    out->e[out->n].exclude = exclude;
    snprintf(out->e[out->n].name, sizeof(out->e[out->n].name), "%s", tok);
    out->n++;
  }
  return 0;
}

static const char *const proto_names[COLLIE_NUM_PROTOS] = {"simple", "ll", "auto"};

const char *collie_proto_name(collie_proto_t p) {
  return (unsigned)p < COLLIE_NUM_PROTOS ? proto_names[p] : "unknown";
}

int collie_proto_parse(const char *name, collie_proto_t *out, char *err, size_t errlen) {
  *out = COLLIE_PROTO_AUTO;
  if (!name || !*name) return 0;
  for (int p = 0; p < COLLIE_NUM_PROTOS; p++)
    if (!strcasecmp(name, proto_names[p])) {
      *out = (collie_proto_t)p;
      return 0;
    }
  snprintf(err, errlen,
           "COLLIE_PROTO (or collie_config_t.proto) names an unknown protocol '%s'; valid names: auto (the "
           "default), simple, ll",
           name);
  return -1;
}

collie_proto_t collie_tune_proto(const collie_comm_t *comm) {
  return comm && comm->algo_spec ? comm->algo_spec->proto : COLLIE_PROTO_AUTO;
}

collie_result_t collie_check_algo_config(collie_comm_t *comm) {
  char err[768];
  collie_tune_state_t *st = calloc(1, sizeof(*st));
  comm->algo_spec = st;
  if (!st) return collie_init_no_memory(NULL, comm->rank, "its tuning tables");
  pthread_mutex_init(&st->memo_lock, NULL);
  if (collie_algo_spec_parse(comm->algo, &st->rules, err, sizeof(err)) != 0)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "rank %d: %s", comm->rank, err);
  if (collie_proto_parse(comm->proto, &st->proto, err, sizeof(err)) != 0)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "rank %d: %s", comm->rank, err);
  const char *path = collie_param_str(COLLIE_P_TUNING_FILE);
  if (path && *path) {
    int loaded = collie_tune_table_load(path, &st->table, err, sizeof(err));
    if (loaded != 0)
      return collie_error(NULL, loaded == -2 ? COLLIE_ERR_SYSTEM : COLLIE_ERR_INVALID_ARGUMENT,
                          "rank %d: COLLIE_TUNING_FILE: %s", comm->rank, err);
  } else {
    collie_tune_table_default(&st->table);
  }
  long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
  st->ncpus = ncpus > 0 ? (int)ncpus : 1;
  if (comm->rank == 0 && collie_log_enabled(COLLIE_LOG_INFO, COLLIE_SUB_TUNE)) {
    char desc[1536];
    collie_tune_table_describe(&st->table, desc, sizeof(desc));
    COLLIE_INFO(COLLIE_SUB_TUNE, comm->rank,
                "tuning table for a communicator of %d ranks: %s; proto %s; %d cores online", comm->nranks, desc,
                collie_proto_name(st->proto), st->ncpus);
  }
  return COLLIE_SUCCESS;
}
