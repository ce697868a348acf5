/* Settings the ranks of a communicator must share: read by each rank, compared by rank 0
 * (settings.h says why). */
#include "bootstrap/settings.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/unique_id.h"
#include "core/comm_internal.h"
#include "core/params.h"
#include "transport/shm.h"
#include "tune/tune.h"

typedef enum { SCOPE_JOB, SCOPE_TCP, SCOPE_HOST, SCOPE_ONE_HOST } scope_t;

#define LAYOUT "the ranks of a host map each other's shared-memory segments, which must have one layout"

static const struct {
  const char *var;  /* the variable, for "mpirun -x" */
  const char *also; /* another way to set it, or NULL */
  const char *what; /* what must be the same */
  scope_t scope;
  const char *consequence;
} settings[COLLIE_NUM_SETTINGS] = {
    [COLLIE_SET_ALGO] = {"COLLIE_ALGO", "collie_config_t.algo", "value", SCOPE_JOB,
                         "ranks that force different algorithms wait forever for each other"},
    [COLLIE_SET_PROTO] = {"COLLIE_PROTO", "collie_config_t.proto", "value", SCOPE_JOB,
                          "ranks of different protocols cannot understand each other"},
    [COLLIE_SET_TUNING] = {"COLLIE_TUNING_FILE", NULL, "figures", SCOPE_JOB,
                           "ranks that weigh the algorithms with different figures choose different ones and "
                           "wait forever for each other"},
    [COLLIE_SET_CHUNK] = {"COLLIE_CHUNK_SIZE", NULL, "value", SCOPE_JOB,
                          "ranks that cut messages into different pieces cannot match them"},
    [COLLIE_SET_TCP_NSOCKS] = {"COLLIE_TCP_NSOCKS", NULL, "value", SCOPE_TCP,
                               "ranks that talk TCP wait for as many connections from each other as they open"},
    [COLLIE_SET_SHM_NSLOTS] = {"COLLIE_SHM_NSLOTS", NULL, "value", SCOPE_HOST, LAYOUT},
    [COLLIE_SET_SHM_SLOT_SIZE] = {"COLLIE_SHM_SLOT_SIZE", NULL, "value", SCOPE_HOST, LAYOUT},
    [COLLIE_SET_SHM_COLL_SIZE] = {"COLLIE_SHM_COLL_SIZE", NULL, "value", SCOPE_ONE_HOST, LAYOUT},
};

/* A variable's key is its value as a number (0 for unset, where the value it then takes
 * depends on the hosts), shown as the user wrote it. */
static void from_param(collie_settings_t *s, collie_setting_id_t k, collie_param_id_t p, const char *unset) {
  const bool user = collie_param_from_env(p);
  s->key[k] = user || !unset ? (uint64_t)collie_param_int(p) : 0;
  if (user)
    snprintf(s->shown[k], COLLIE_SETTING_SHOWN, "has %s=%.*s", collie_param_table[p].name,
             COLLIE_SETTING_SHOWN - 32, collie_param_str(p));
  else
    snprintf(s->shown[k], COLLIE_SETTING_SHOWN, "has it unset (%s)", unset ? unset : collie_param_table[p].def);
}

static void from_text(collie_settings_t *s, collie_setting_id_t k, const char *value) {
  if (value && *value)
    snprintf(s->shown[k], COLLIE_SETTING_SHOWN, "has '%.*s'", COLLIE_SETTING_SHOWN - 16, value);
  else
    snprintf(s->shown[k], COLLIE_SETTING_SHOWN, "has it unset");
}

/* The figures, not the struct: its padding and the file's path must not count. */
static uint64_t table_key(const collie_tune_table_t *t) {
  uint64_t h = 0x7475;
  for (int l = 0; l < COLLIE_NUM_LINKS; l++) {
    h = collie_hash64(&t->link[l].alpha_us, sizeof(double), h);
    h = collie_hash64(&t->link[l].beta_us_per_byte, sizeof(double), h);
  }
  h = collie_hash64(&t->gamma_us_per_byte, sizeof(double), h);
  h = collie_hash64(&t->delta_us_per_byte, sizeof(double), h);
  h = collie_hash64(&t->oversub_alpha_scale, sizeof(double), h);
  for (int i = 0; i < t->noverrides; i++) {
    h = collie_hash64(&t->ov[i].coll, sizeof(int), h);
    h = collie_hash64(t->ov[i].algo, strnlen(t->ov[i].algo, sizeof(t->ov[i].algo)), h);
    h = collie_hash64(&t->ov[i].alpha_scale, sizeof(double), h);
    h = collie_hash64(&t->ov[i].beta_scale, sizeof(double), h);
    h = collie_hash64(&t->ov[i].gamma_scale, sizeof(double), h);
  }
  return h;
}

void collie_settings_read(const collie_comm_t *comm, collie_settings_t *s) {
  memset(s, 0, sizeof(*s));
  const collie_tune_state_t *st = comm->algo_spec;
  /* The parsed rules (zero-filled), so that spacing and separators do not count. */
  s->key[COLLIE_SET_ALGO] = collie_hash64(&st->rules, sizeof(st->rules), 0x616c);
  from_text(s, COLLIE_SET_ALGO, comm->algo);
  s->key[COLLIE_SET_PROTO] = (uint64_t)st->proto;
  from_text(s, COLLIE_SET_PROTO, comm->proto);
  s->key[COLLIE_SET_TUNING] = table_key(&st->table);
  const char *path = collie_param_str(COLLIE_P_TUNING_FILE);
  if (path && *path)
    snprintf(s->shown[COLLIE_SET_TUNING], COLLIE_SETTING_SHOWN, "read figures from %.*s", COLLIE_SETTING_SHOWN - 32,
             path);
  else
    snprintf(s->shown[COLLIE_SET_TUNING], COLLIE_SETTING_SHOWN, "has it unset (the built-in figures)");
  from_param(s, COLLIE_SET_CHUNK, COLLIE_P_CHUNK_SIZE, "automatic: 64K on one host, 1M across hosts");
  from_param(s, COLLIE_SET_TCP_NSOCKS, COLLIE_P_TCP_NSOCKS, NULL);
  from_param(s, COLLIE_SET_SHM_NSLOTS, COLLIE_P_SHM_NSLOTS, NULL);
  from_param(s, COLLIE_SET_SHM_SLOT_SIZE, COLLIE_P_SHM_SLOT_SIZE, NULL);
  /* The area's size as this rank would make it, since unset it follows the online CPUs
   * (transport/shm.c): 1M on one rank and unset on another agree where unset means 1M.
   * Compared only when every rank shares one host (nranks is then its rank count). */
  from_param(s, COLLIE_SET_SHM_COLL_SIZE, COLLIE_P_SHM_COLL_SIZE, NULL);
  const collie_shm_area_sizes_t area = collie_shm_area_sizes(comm->nranks);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  char *shown = s->shown[COLLIE_SET_SHM_COLL_SIZE];
  if (!collie_param_from_env(COLLIE_P_SHM_COLL_SIZE)) { /* what unset means here; a value set shows as set */
    if (area.round == area.buffer)
      snprintf(shown, COLLIE_SETTING_SHOWN, "has it unset (%zu KiB for %d ranks on %ld online CPUs)",
               area.buffer >> 10, comm->nranks, cpus);
    else
      snprintf(shown, COLLIE_SETTING_SHOWN, "has it unset (%zu KiB buffers, %zu KiB rounds: %d ranks, %ld CPUs)",
               area.buffer >> 10, area.round >> 10, comm->nranks, cpus);
  }
  /* Unset, the rounds may be smaller than the buffers, which no value set does: the two
   * sizes together decide the layout (the rounds are 256 KiB when smaller) */
  s->key[COLLIE_SET_SHM_COLL_SIZE] = (uint64_t)area.buffer * 2 + (area.round != area.buffer);
}

/* The pairs setup_transports will join by shared memory. */
static bool same_host(const collie_card_t *a, const collie_card_t *b) {
  return (a->caps & b->caps & COLLIE_CAP_SHM) && !strcmp(a->host_id, b->host_id);
}

/* The value a setting takes: an unset COLLIE_CHUNK_SIZE becomes what choose_chunk picks. */
static uint64_t effective(const collie_settings_t *s, collie_setting_id_t k, bool tcp) {
  if (k == COLLIE_SET_CHUNK && s->key[k] == 0) return collie_auto_chunk_bytes(tcp);
  return s->key[k];
}

int collie_settings_check(const collie_card_t *cards, const collie_settings_t *all, int nranks, char *msg,
                          size_t len) {
  /* same_host is an equivalence (both shared-memory capable, one host id): when rank 0
   * shares a host with everyone, every pair does; when not, every rank has a TCP peer. */
  bool one_host = true;
  for (int r = 1; r < nranks; r++)
    if (!same_host(&cards[0], &cards[r])) one_host = false;
  for (int k = 0; k < COLLIE_NUM_SETTINGS; k++) {
    const scope_t scope = settings[k].scope;
    const bool per_host = scope == SCOPE_HOST || scope == SCOPE_ONE_HOST;
    if ((scope == SCOPE_ONE_HOST && !one_host) || (scope == SCOPE_TCP && one_host)) continue;
    for (int r = 1; r < nranks; r++) {
      int ref = 0; /* rank 0, or per host the first rank of r's host */
      if (per_host) {
        if (!(cards[r].caps & COLLIE_CAP_SHM)) continue;
        while (ref < r && !same_host(&cards[ref], &cards[r])) ref++;
        if (ref == r) continue;
      }
      const uint64_t want = effective(&all[ref], k, !one_host);
      if (effective(&all[r], k, !one_host) == want) continue;
      int others = 0;
      for (int o = r + 1; o < nranks; o++)
        if (effective(&all[o], k, !one_host) != want && (!per_host || same_host(&cards[o], &cards[ref]))) others++;
      char more[64] = "", name[96];
      if (others) snprintf(more, sizeof(more), " (and %d more rank%s)", others, others == 1 ? "" : "s");
      if (settings[k].also) snprintf(name, sizeof(name), "%s (or %s)", settings[k].var, settings[k].also);
      else snprintf(name, sizeof(name), "%s", settings[k].var);
      snprintf(msg, len,
               "ranks %d and %d%s%s disagree on %s: rank %d %s, rank %d %s%s; %s the same %s, "
               "since %s: set it the same way everywhere (mpirun -x %s, srun --export, the job script of "
               "every host) or unset it everywhere",
               ref, r, per_host ? " of host " : "", per_host ? cards[r].hostname : "", name, ref, all[ref].shown[k],
               r, all[r].shown[k], more, per_host ? "the ranks of one host must use" : "every rank must use",
               settings[k].what, settings[k].consequence, settings[k].var);
      return -1;
    }
  }
  return 0;
}
