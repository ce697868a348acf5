/* Choosing an algorithm: the user's COLLIE_ALGO first, then the cost model. */
#ifndef COLLIE_TUNE_H
#define COLLIE_TUNE_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/algo.h"

#define COLLIE_ALGO_SPEC_MAX 32

typedef struct collie_algo_spec_s {
  int n;
  struct {
    int coll; /* -1: every collective */
    bool exclude;
    char name[32];
  } e[COLLIE_ALGO_SPEC_MAX];
} collie_algo_spec_t;

int collie_algo_spec_parse(const char *spec, collie_algo_spec_t *out, char *err, size_t errlen);

/* Fills out[] with the algorithms to try for this collective, preferred first; *forced
 * tells whether out[0] was named by the user. Returns how many. */
int collie_tune_candidates(const collie_algo_spec_t *spec, collie_coll_t coll, int nranks, size_t bytes,
                           const collie_algo_t **out, int max, bool *forced);

#endif
