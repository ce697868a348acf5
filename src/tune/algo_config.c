/* COLLIE_ALGO / config->algo: "ring" (every collective that has it),
 * "allreduce:tree;allgather:bruck" (per collective), "^mesh" (exclude). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
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

/* Walks the spec; for each (collective or NULL, name, excluded) calls fn. Returns -1 and
 * fills err on malformed text or unknown names. */
int collie_algo_spec_parse(const char *spec, collie_algo_spec_t *out, char *err, size_t errlen) {
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
        snprintf(err, errlen, "COLLIE_ALGO names an unknown collective '%s'", tok);
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

collie_result_t collie_check_algo_config(collie_comm_t *comm) {
  char err[768];
  comm->algo_spec = calloc(1, sizeof(collie_algo_spec_t));
  if (!comm->algo_spec) return collie_error(NULL, COLLIE_ERR_SYSTEM, "rank %d: out of memory", comm->rank);
  if (collie_algo_spec_parse(comm->algo, comm->algo_spec, err, sizeof(err)) != 0)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "rank %d: %s", comm->rank, err);
  return COLLIE_SUCCESS;
}
