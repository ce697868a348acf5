/* Choosing an algorithm: the user's COLLIE_ALGO first, then the cost model.
 *
 * The cost model is data: per transport a latency alpha (us per message) and an inverse
 * bandwidth beta (us per byte), a reduction cost gamma (us per reduced byte), a local
 * copy cost delta, and one formula per algorithm (cost_model.c) giving the messages
 * (rounds), bytes sent, reduced and copied of one rank's part: estimate = messages *
 * alpha + bytes * beta + reduced * gamma + copied * delta. The figures
 * come from built-in defaults measured on a 2-core VM, or from a tuning file written by
 * collie-tune (COLLIE_TUNING_FILE). docs/tuning.md describes all of it. */
#ifndef COLLIE_TUNE_H
#define COLLIE_TUNE_H

#include <stdatomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "algo/algo.h"

/* ---- COLLIE_ALGO --------------------------------------------------------------------- */

#define COLLIE_ALGO_SPEC_MAX 32

typedef struct {
  int n;
  struct {
    int coll; /* -1: every collective */
    bool exclude;
    char name[32];
  } e[COLLIE_ALGO_SPEC_MAX];
} collie_algo_rules_t;

int collie_algo_spec_parse(const char *spec, collie_algo_rules_t *out, char *err, size_t errlen);

/* ---- COLLIE_PROTO -------------------------------------------------------------------- */

/* How the shared-memory collectives move a call that fits in a few cache lines per rank
 * (algo/native/shm_native.c): `ll` in the lines that carry the flag (inline rounds, NCCL's
 * LL idea), `simple` through the staging area behind separate counters. Messages (point to
 * point, the scheduled algorithms, TCP) always travel as simple. */
typedef enum {
  COLLIE_PROTO_SIMPLE = 0, /* staged rounds for every size */
  COLLIE_PROTO_LL = 1,     /* inline rounds for every call that fits them */
  COLLIE_PROTO_AUTO = 2,   /* unset: inline up to where staging gets cheaper (measured) */
  COLLIE_NUM_PROTOS
} collie_proto_t;

/* "auto" / "simple" / "ll", case-insensitive; NULL or "" is auto. Returns -1 and fills
 * err (listing the valid names) for anything else. */
int collie_proto_parse(const char *name, collie_proto_t *out, char *err, size_t errlen);
const char *collie_proto_name(collie_proto_t p);

/* ---- the tuning table ---------------------------------------------------------------- */

typedef enum { COLLIE_LINK_SHM = 0, COLLIE_LINK_TCP = 1, COLLIE_NUM_LINKS } collie_link_t;
const char *collie_link_name(collie_link_t l); /* "shm", "tcp" */

#define COLLIE_TUNE_OVERRIDES_MAX 32

typedef struct {
  struct {
    double alpha_us;         /* per message: one-way latency of a small one */
    double beta_us_per_byte; /* per byte sent */
  } link[COLLIE_NUM_LINKS];
  double gamma_us_per_byte;  /* per byte reduced */
  double delta_us_per_byte;  /* per byte copied locally (memcpy) */
  /* Oversubscription (more ranks on a host than cores): latency terms are multiplied by
   * 1 + oversub_alpha_scale * (ranks per core - 1). */
  double oversub_alpha_scale;
  int noverrides;
  struct {
    int coll;         /* collie_coll_t */
    char algo[32];
    double alpha_scale, beta_scale, gamma_scale;
  } ov[COLLIE_TUNE_OVERRIDES_MAX];
  char source[512];   /* "default" or the file's path */
} collie_tune_table_t;

/* Defaults measured on a 2-core AMD EPYC VM (docs/tuning.md). */
void collie_tune_table_default(collie_tune_table_t *t);
/* Parses tuning-file text over t (keys missing from the text keep t's values). `name`
 * names the text in errors. Returns 0, or -1 with err naming the line. */
int collie_tune_table_parse(const char *text, const char *name, collie_tune_table_t *t, char *err, size_t errlen);
/* Defaults, then the file at path; source becomes path. Returns 0, or -1 with err (the
 * file is missing or wrong), or -2 with err (out of memory: the file may be right). */
int collie_tune_table_load(const char *path, collie_tune_table_t *t, char *err, size_t errlen);
/* Writes t in the tuning-file format (without a header comment). */
void collie_tune_table_write(FILE *f, const collie_tune_table_t *t);
/* One line describing the table for logs: figures per transport, gamma, overrides, source. */
void collie_tune_table_describe(const collie_tune_table_t *t, char *buf, size_t len);

/* ---- the cost model ------------------------------------------------------------------ */

/* What one decision needs beyond the collective and its size. */
typedef struct {
  const collie_tune_table_t *table;
  collie_link_t link;
  int nranks;
  double ranks_per_core;  /* ranks on the busiest host / its online cores (< 1: not oversubscribed) */
  size_t chunk_bytes;     /* pipelining chunk (COLLIE_CHUNK_SIZE); 0: 64 KiB */
  size_t area_bytes;      /* shared-memory collectives' round (COLLIE_SHM_COLL_SIZE); 0: none */
  size_t bcast_split_min; /* from this size the shared-memory broadcast shares its copying on any
                           * buffers (collie_native_bcast_split_min); 0: never */
  int groups, group_size; /* groups of ranks sharing memory (hosts), and their size when all are
                           * alike (0 when not): the hierarchical algorithms' shape */
  bool cma_msgs;          /* every rank on one host, and messages of COLLIE_CMA_MIN and more are
                           * read once by process_vm_readv (measured faster than the ring at
                           * creation: transport/shm_cma_choice.c) */
} collie_tune_ctx_t;

/* Estimated microseconds of one rank's part; a negative value when the model has no
 * formula for this (collective, algorithm). `bytes` is the collective's size as the
 * caller counts it (collie_coll_call_t.bytes). */
double collie_tune_estimate(const collie_tune_ctx_t *ctx, collie_coll_t coll, const char *algo, size_t bytes);
/* The formula of (coll, algo) as text, as the algorithm's header comment states it; NULL
 * when the model has none. */
const char *collie_tune_formula(collie_coll_t coll, const char *algo);

/* Fills out[] with the algorithms to try, preferred first: a forced one (COLLIE_ALGO),
 * then the rest cheapest first; est[] (may be NULL) gets each one's estimate. *forced
 * tells whether out[0] was named by the user. Returns how many. */
int collie_tune_rank(const collie_algo_rules_t *rules, const collie_tune_ctx_t *ctx, collie_coll_t coll, size_t bytes,
                     const collie_algo_t **out, double *est, int max, bool *forced);

/* ---- per communicator ---------------------------------------------------------------- */

/* The tuning state of a communicator (comm->algo_spec): one allocation, freed with free(). */
struct collie_algo_spec_s {
  collie_algo_rules_t rules; /* COLLIE_ALGO / config->algo */
  collie_proto_t proto;      /* COLLIE_PROTO / config->proto: for the transports to read */
  collie_tune_table_t table; /* defaults or COLLIE_TUNING_FILE */
  int ncpus;                 /* sysconf(_SC_NPROCESSORS_ONLN) at creation: the same on every rank of
                              * a host (not its affinity or cgroup quota, core/cpus.h, which may
                              * differ between ranks that must choose alike) */
  _Atomic int host_ranks;    /* ranks on the busiest host; 0 until the first decision */
  _Atomic int described;     /* rank 0 logged the transport in use */
  /* Decisions already made, by (collective, size, what the model weighed): ranking every
   * algorithm costs more than a small collective itself. Direct-mapped. */
  pthread_mutex_t memo_lock;
  struct {
    bool used, forced;
    int coll, n;
    size_t bytes;
    collie_tune_ctx_t ctx;
    const collie_algo_t *cands[16];
  } memo[64];
};
typedef struct collie_algo_spec_s collie_tune_state_t;

struct collie_comm;
/* The candidates for a collective on comm, preferred first (see collie_tune_rank). */
int collie_tune_candidates(struct collie_comm *comm, collie_coll_t coll, size_t bytes, const collie_algo_t **out,
                           int max, bool *forced);
/* Logs (INFO, TUNE) a new decision: the chosen algorithm, why, and every candidate's
 * estimate. */
void collie_tune_log_choice(struct collie_comm *comm, collie_coll_t coll, size_t bytes, const collie_algo_t *const *cands,
                            int n, const collie_algo_t *chosen, bool forced);
/* The protocol chosen for comm (COLLIE_PROTO). */
collie_proto_t collie_tune_proto(const struct collie_comm *comm);

#endif
