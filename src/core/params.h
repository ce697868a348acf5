/* Every COLLIE_* environment variable lives in ONE table (params.c): name, type, default
 * and a one-line doc. collie-info prints it, docs/environment.md is generated from it. */
#ifndef COLLIE_PARAMS_H
#define COLLIE_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  COLLIE_P_DEBUG,
  COLLIE_P_DEBUG_SUBSYS,
  COLLIE_P_DEBUG_FILE,
  COLLIE_P_CONNECT_TIMEOUT,
  COLLIE_P_EXEC_TIMEOUT,
  COLLIE_P_KEEPALIVE,
  COLLIE_P_TRANSPORT,
  COLLIE_P_SOCKET_IFNAME,
  COLLIE_P_ROOT_ADDR,
  COLLIE_P_HOST_ID,
  COLLIE_P_PORT_RANGE,
  COLLIE_P_TCP_NSOCKS,
  COLLIE_P_TCP_STRIPE_MIN,
  COLLIE_P_SHM_NSLOTS,
  COLLIE_P_SHM_SLOT_SIZE,
  COLLIE_P_SHM_COLL_SIZE,
  COLLIE_P_SHM_DIRECT,
  COLLIE_P_SHM_CMA,
  COLLIE_P_SHM_STORES,
  COLLIE_P_STREAM_BYTES,
  COLLIE_P_SPREAD_RANKS,
  COLLIE_P_PROGRESS_THREAD,
  COLLIE_P_SPIN,
  COLLIE_P_YIELD,
  COLLIE_P_ALGO,
  COLLIE_P_PROTO,
  COLLIE_P_TUNING_FILE,
  COLLIE_P_CHUNK_SIZE,
  COLLIE_P_RANK,
  COLLIE_P_NRANKS,
  COLLIE_P_LOCAL_RANK,
  COLLIE_P_JOB_ID,
  COLLIE_P_ROOT_LISTEN_FD,
  COLLIE_P_LOCAL_SIZE,
  COLLIE_P_REDUCE_ISA,
  COLLIE_P_RUN_GRACE,
  COLLIE_NUM_PARAMS
} collie_param_id_t;

typedef enum { COLLIE_PT_INT, COLLIE_PT_SIZE, COLLIE_PT_STRING } collie_param_type_t;

typedef struct {
  const char *name;
  collie_param_type_t type;
  const char *def; /* default, as text; NULL: unset */
  const char *doc;
  /* What creation accepts (collie_params_validate): for strings a comma list of values
   * (any case); for numbers "LO-HI" or "LO-" (no upper bound); NULL: anything that parses. */
  const char *valid;
} collie_param_desc_t;

extern const collie_param_desc_t collie_param_table[COLLIE_NUM_PARAMS];
/* The docs' Default: def, or where unset means something else (a value computed at
 * creation, def then only standing in for the code) what it is; NULL: no default. */
const char *collie_param_shown_default(collie_param_id_t id);

/* Values are read from the environment once (first use) and then cached. */
int64_t collie_param_int(collie_param_id_t id);      /* INT and SIZE (K/M/G suffixes) */
const char *collie_param_str(collie_param_id_t id);  /* NULL when unset and no default */
const char *collie_param_source(collie_param_id_t id); /* "default", "environment", "unset" */
/* Whether the user set it (in the environment): what an automatic choice must not override. */
bool collie_param_from_env(collie_param_id_t id);
/* COLLIE_PORT_RANGE: 0 when unset, 1 with lo..hi (1 <= lo <= hi <= 65535), -1 when malformed. */
int collie_param_port_range(int *lo, int *hi);
/* Checks every set variable parses; on failure fills msg and returns -1. */
int collie_params_validate(char *msg, size_t len);
/* Tests may change the environment and ask for a re-read. */
void collie_params_reload(void);
/* Parses "64K", "2M", "1G", plain numbers; returns -1 on malformed text. */
int collie_parse_size(const char *s, int64_t *out);

#endif
