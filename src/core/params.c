/* The table of every COLLIE_* variable and its cached values. */
#include "core/params.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const collie_param_desc_t collie_param_table[COLLIE_NUM_PARAMS] = {
    [COLLIE_P_DEBUG] = {"COLLIE_DEBUG", COLLIE_PT_STRING, "WARN",
                        "Log level: NONE, WARN, INFO or TRACE.", "NONE,WARN,INFO,TRACE"},
    [COLLIE_P_DEBUG_SUBSYS] = {"COLLIE_DEBUG_SUBSYS", COLLIE_PT_STRING, "ALL",
                               "Subsystems to log: comma list of INIT, BOOTSTRAP, TRANSPORT, COLL, TUNE, ALL; "
                               "a leading ^ excludes the listed ones.", NULL},
    [COLLIE_P_DEBUG_FILE] = {"COLLIE_DEBUG_FILE", COLLIE_PT_STRING, NULL,
                             "Write logs to this file instead of stderr; %h host, %p pid, %r rank.", NULL},
    [COLLIE_P_CONNECT_TIMEOUT] = {"COLLIE_CONNECT_TIMEOUT", COLLIE_PT_INT, "60",
                                  "Seconds to wait for peers while creating a communicator.", "1-2147483"},
    [COLLIE_P_EXEC_TIMEOUT] = {"COLLIE_EXEC_TIMEOUT", COLLIE_PT_INT, "600",
                               "Seconds an operation may make no progress before it fails with "
                               "COLLIE_ERR_TIMEOUT (up to half a second more, while it asks the peer it waits "
                               "for what that peer waits for).", "1-2147483"},
    [COLLIE_P_KEEPALIVE] = {"COLLIE_KEEPALIVE", COLLIE_PT_INT, "60",
                            "Seconds within which a rank whose host stopped answering (crashed, powered off, cut "
                            "off the network) is declared lost, by TCP keepalive probes on the control connections "
                            "to rank 0, instead of after COLLIE_EXEC_TIMEOUT; 0 turns the probes off.", "0-86400"},
    [COLLIE_P_TRANSPORT] = {"COLLIE_TRANSPORT", COLLIE_PT_STRING, "auto",
                            "auto: shared memory within a host, TCP between hosts; tcp: TCP even between "
                            "ranks of one host.", "auto,tcp"},
    [COLLIE_P_SOCKET_IFNAME] = {"COLLIE_SOCKET_IFNAME", COLLIE_PT_STRING, NULL,
                                "Network interfaces to use: prefixes (eth,ib), ^ to exclude, = for exact "
                                "names (NCCL's syntax). Default: the address of the route to the root (rank 0: "
                                "the root address), unless that is loopback or not this host's: then the "
                                "first non-loopback interface.", NULL},
    [COLLIE_P_ROOT_ADDR] = {"COLLIE_ROOT_ADDR", COLLIE_PT_STRING, NULL,
                            "host:port where rank 0 listens for the others (collie_comm_init_env). "
                            "MASTER_ADDR/MASTER_PORT are read when unset.", NULL},
    [COLLIE_P_HOST_ID] = {"COLLIE_HOST_ID", COLLIE_PT_STRING, NULL,
                          "Overrides host detection: ranks with the same id are on one host (tests).", NULL},
    [COLLIE_P_PORT_RANGE] = {"COLLIE_PORT_RANGE", COLLIE_PT_STRING, NULL,
                             "lo-hi: ports collie's listening sockets may use: one per rank of a host and communicator, and "
                             "one more on the host of a communicator's rank 0 while it is created (the unique id's, "
                             "or a split's); default any free port. A malformed range fails communicator creation.", NULL},
    [COLLIE_P_TCP_NSOCKS] = {"COLLIE_TCP_NSOCKS", COLLIE_PT_INT, "2",
                             "TCP sockets per peer; large messages are striped across them.", "1-16"},
    [COLLIE_P_TCP_STRIPE_MIN] = {"COLLIE_TCP_STRIPE_MIN", COLLIE_PT_SIZE, "256K",
                                 "Messages at least this large are striped over all sockets of a peer.", NULL},
    [COLLIE_P_SHM_NSLOTS] = {"COLLIE_SHM_NSLOTS", COLLIE_PT_INT, "8",
                             "Slots in each shared-memory ring (one ring per ordered pair of local ranks).", "2-4096"},
    [COLLIE_P_SHM_SLOT_SIZE] = {"COLLIE_SHM_SLOT_SIZE", COLLIE_PT_SIZE, "128K",
                                "Bytes per shared-memory slot; a message moves in slot-sized pieces.", "4K-1G"},
    [COLLIE_P_SHM_COLL_SIZE] = {"COLLIE_SHM_COLL_SIZE", COLLIE_PT_SIZE, "256K",
                                "Bytes each rank stages per round in the shared-memory collectives (algorithm "
                                "'shm'; two such buffers per rank). 0 turns them off. Unset: buffers of 1M while "
                                "the host's segments stay within 48 MiB (else 256K), with rounds of 1M where the "
                                "host's ranks outnumber its CPUs and of 256K where they do not (broadcasts and "
                                "one-round all-gathers use the whole buffers).", NULL},
    [COLLIE_P_SHM_DIRECT] = {"COLLIE_SHM_DIRECT", COLLIE_PT_INT, "1",
                             "1: shared-memory collectives of 64 KiB and more read (and write) the other ranks' "
                             "buffers directly when all are reachable (collie_mem_alloc, or ranks that are threads "
                             "of one process) and a probe at creation found them mappable; 0: always stage.", "0-1"},
    [COLLIE_P_SHM_CMA] = {"COLLIE_SHM_CMA", COLLIE_PT_INT, NULL,
                          "Point-to-point messages between processes of one host read by the receiver straight "
                          "from the sender's ordinary buffer with process_vm_readv (single copy): 0 never; 1 "
                          "messages of 64 KiB and more (not reductions), the shared-memory all-to-all, and the "
                          "shared-memory broadcast of 2 ranks (whose root also writes part of the receiver's buffer "
                          "with process_vm_writev); 2 also the shared-memory all-gather and any broadcast. Unset: "
                          "as 1 if an exchange timed at creation found it faster than the shared-memory ring, "
                          "else only the 2-rank broadcast from 16 MiB. Set it alike on every rank. Needs ranks "
                          "that may read each other (same user; a probe at creation checks; collie calls "
                          "prctl(PR_SET_PTRACER) for Yama).", "0-2"},
    [COLLIE_P_SHM_STORES] = {"COLLIE_SHM_STORES", COLLIE_PT_STRING, "auto",
                             "How copies of 64 KiB and more into shared-memory staging buffers and ring slots "
                             "store: auto times them and uses streaming (non-temporal) stores while ordinary ones "
                             "cost far more, as when the reading rank sits on a distant core; ordinary or "
                             "streaming always. It fixes the kind of the collectives' copies out of staging into "
                             "receive buffers of half COLLIE_STREAM_BYTES and more too (auto: the cheaper lately).",
                             "auto,ordinary,streaming"},
    [COLLIE_P_STREAM_BYTES] = {"COLLIE_STREAM_BYTES", COLLIE_PT_SIZE, "16M",
                               "Collectives whose receive buffer is at least this big write it with non-temporal "
                               "(streaming) stores, which skip reading the destination into the cache first, when "
                               "they copy from a buffer in memory (the caller's or a peer's), and from half this size "
                               "out of the shared-memory collectives' staging area when that costs less (timed); "
                               "0: never. "
                               "The size holds for 2 ranks on a host, which share its caches: "
                               "with n ranks it is 2/n of it, at least half (4 ranks and more).", NULL},
    [COLLIE_P_SPREAD_RANKS] = {"COLLIE_SPREAD_RANKS", COLLIE_PT_INT, "1",
                               "1: at a process's first communicator each rank starts on the CPU of its local "
                               "index, modulo the CPUs it may use (its affinity mask stays as it was); 0: leave "
                               "placement to the scheduler.", "0-1"},
    [COLLIE_P_PROGRESS_THREAD] = {"COLLIE_PROGRESS_THREAD", COLLIE_PT_INT, "0",
                                  "1: a background thread moves nonblocking operations while the application "
                                  "computes (a thread that waits moves them itself).", "0-1"},
    [COLLIE_P_SPIN] = {"COLLIE_SPIN", COLLIE_PT_INT, "20",
                       "Microseconds a waiting rank polls before it starts yielding its core (0 when the "
                       "host's ranks outnumber its cores, unless set; then a rank in a shared-memory "
                       "collective still polls up to 16 times a yield while the peer it waits for runs, "
                       "except with a progress thread).", NULL},
    [COLLIE_P_YIELD] = {"COLLIE_YIELD", COLLIE_PT_INT, "2000",
                        "Microseconds a waiting rank yields (sched_yield) before it sleeps on a futex. The "
                        "clock is read every 64 idle rounds, so unless COLLIE_SPIN and COLLIE_YIELD are "
                        "both 0 a wait polls or yields at least 63 rounds before it sleeps.", NULL},
    [COLLIE_P_ALGO] = {"COLLIE_ALGO", COLLIE_PT_STRING, NULL,
                       "Force algorithms: 'ring' (every collective that has it), "
                       "'allreduce:tree;allgather:bruck', '^mesh' to exclude.", NULL},
    [COLLIE_P_PROTO] = {"COLLIE_PROTO", COLLIE_PT_STRING, NULL,
                        "Protocol of the shared-memory collectives for calls of a few cache lines per rank: "
                        "ll carries them in the lines with the flag (up to 488 bytes per rank for a "
                        "reduce, 2088 for the others, 4136 for a broadcast), simple stages them behind "
                        "separate counters, auto (unset) chooses by size. "
                        "Messages always travel as simple. Other names are refused.", NULL},
    [COLLIE_P_TUNING_FILE] = {"COLLIE_TUNING_FILE", COLLIE_PT_STRING, NULL,
                              "Cost-model figures (alpha, beta per transport, gamma) written by collie-tune; "
                              "read at communicator creation. Unset: built-in defaults (docs/tuning.md).", NULL},
    [COLLIE_P_CHUNK_SIZE] = {"COLLIE_CHUNK_SIZE", COLLIE_PT_SIZE, "64K",
                             "Pipelining chunk of the collective algorithms. Unset: 64K when every rank shares "
                             "one host, 1M when some ranks talk TCP.", "1-"},
    [COLLIE_P_RANK] = {"COLLIE_RANK", COLLIE_PT_INT, NULL, "This process's rank (set by collie-run).", NULL},
    [COLLIE_P_NRANKS] = {"COLLIE_NRANKS", COLLIE_PT_INT, NULL, "Number of ranks (set by collie-run).", NULL},
    [COLLIE_P_LOCAL_RANK] = {"COLLIE_LOCAL_RANK", COLLIE_PT_INT, NULL,
                             "Rank among the ranks of this host (set by collie-run).", NULL},
    [COLLIE_P_JOB_ID] = {"COLLIE_JOB_ID", COLLIE_PT_STRING, NULL,
                         "Job identity shared by the ranks of one job (set by collie-run).", NULL},
    [COLLIE_P_ROOT_LISTEN_FD] = {"COLLIE_ROOT_LISTEN_FD", COLLIE_PT_INT, NULL,
                                 "Listening socket inherited by rank 0 from collie-run.", NULL},
    [COLLIE_P_LOCAL_SIZE] = {"COLLIE_LOCAL_SIZE", COLLIE_PT_INT, NULL,
                             "Number of ranks on this host (set by collie-run).", NULL},
    [COLLIE_P_REDUCE_ISA] = {"COLLIE_REDUCE_ISA", COLLIE_PT_STRING, "auto",
                             "Reduction kernels: auto (AVX2 where the CPU has it) or portable.", "auto,portable"},
    [COLLIE_P_RUN_GRACE] = {"COLLIE_RUN_GRACE", COLLIE_PT_STRING, "30",
                            "collie-run: seconds (decimals allowed, as --grace) the other ranks get to finish after "
                            "one failed. Read by collie-run only: the ranks inherit it and leave it alone.", NULL},
};

/* Defaults that creation computes (the table's def is what the code falls back to). */
static const char *const shown_defaults[COLLIE_NUM_PARAMS] = {
    [COLLIE_P_SHM_COLL_SIZE] = "(computed)",
};

const char *collie_param_shown_default(collie_param_id_t id) {
  return shown_defaults[id] ? shown_defaults[id] : collie_param_table[id].def;
}

typedef struct {
  int loaded;
  const char *str;
  int64_t ival;
  int from_env;
} cached_t;

static cached_t cache[COLLIE_NUM_PARAMS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

int collie_parse_size(const char *s, int64_t *out) {
  if (!s || !*s) return -1;
  if (!isdigit((unsigned char)s[0])) return -1; /* no sign: every collie size is a count */
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s) return -1;
  int64_t mul = 1;
  switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1LL << 10; end++; break;
    case 'M': mul = 1LL << 20; end++; break;
    case 'G': mul = 1LL << 30; end++; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end || v > INT64_MAX / mul) return -1;
  *out = (int64_t)v * mul;
  return 0;
}

static void load(collie_param_id_t id) {
  cached_t *c = &cache[id];
  const collie_param_desc_t *d = &collie_param_table[id];
  const char *env = getenv(d->name);
  c->from_env = env && *env;
  c->str = c->from_env ? env : d->def;
  c->ival = 0;
  if (c->str && d->type != COLLIE_PT_STRING) {
    int64_t v;
    if (collie_parse_size(c->str, &v) == 0) c->ival = v;
    else if (d->def && collie_parse_size(d->def, &v) == 0) c->ival = v;
  }
  c->loaded = 1;
}

static cached_t *get(collie_param_id_t id) {
  pthread_mutex_lock(&cache_lock);
  if (!cache[id].loaded) load(id);
  pthread_mutex_unlock(&cache_lock);
  return &cache[id];
}

int64_t collie_param_int(collie_param_id_t id) { return get(id)->ival; }
const char *collie_param_str(collie_param_id_t id) { return get(id)->str; }

const char *collie_param_source(collie_param_id_t id) {
  cached_t *c = get(id);
  if (c->from_env) return "environment";
  return c->str ? "default" : "unset";
}

bool collie_param_from_env(collie_param_id_t id) { return get(id)->from_env != 0; }

int collie_param_port_range(int *lo, int *hi) {
  const char *range = collie_param_str(COLLIE_P_PORT_RANGE);
  *lo = *hi = 0;
  if (!range || !*range) return 0;
  char tail;
  if (sscanf(range, "%d-%d%c", lo, hi, &tail) != 2 || *lo < 1 || *lo > *hi || *hi > 65535) return -1;
  return 1;
}

/* A value outside the table's `valid`: silently clamped or taken for the default, it ran
 * something else than asked (COLLIE_TRANSPORT=TCP ran shared memory). */
static bool out_of_bounds(collie_param_id_t id, char *msg, size_t len) {
  const collie_param_desc_t *d = &collie_param_table[id];
  const char *env = getenv(d->name);
  if (!d->valid || !env || !*env) return false;
  if (d->type == COLLIE_PT_STRING) {
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", d->valid);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
      if (!strcasecmp(tok, env)) return false;
    char shown[160];
    snprintf(shown, sizeof(shown), "%s", d->valid);
    for (char *c = shown; *c; c++)
      if (*c == ',') *c = '/';
    snprintf(msg, len, "%s='%s' is not one of %s: %s", d->name, env, shown, d->doc);
    return true;
  }
  int64_t v, lo, hi = INT64_MAX;
  const char *dash = strchr(d->valid, '-');
  char lo_text[32];
  snprintf(lo_text, sizeof(lo_text), "%.*s", (int)(dash - d->valid), d->valid);
  if (collie_parse_size(env, &v) != 0 || collie_parse_size(lo_text, &lo) != 0) return false;
  if (dash[1] && collie_parse_size(dash + 1, &hi) != 0) return false;
  if (v >= lo && v <= hi) return false;
  if (dash[1])
    snprintf(msg, len, "%s='%s' is outside %s to %s: %s", d->name, env, lo_text, dash + 1, d->doc);
  else
    snprintf(msg, len, "%s='%s' is below its least value, %s: %s", d->name, env, lo_text, d->doc);
  return true;
}

int collie_params_validate(char *msg, size_t len) {
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++) {
    const collie_param_desc_t *d = &collie_param_table[i];
    const char *env = getenv(d->name);
    int64_t v;
    if (env && *env && d->type != COLLIE_PT_STRING && collie_parse_size(env, &v) != 0) {
      snprintf(msg, len, "%s='%s' is not a number: %s", d->name, env, d->doc);
      return -1;
    }
  }
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++)
    if (out_of_bounds((collie_param_id_t)i, msg, len)) return -1;
  /* Ignored, a malformed range let collie listen anywhere, past the ports a firewall opens. */
  int lo, hi;
  if (collie_param_port_range(&lo, &hi) < 0) {
    snprintf(msg, len, "COLLIE_PORT_RANGE='%s' is not a range of ports: write LOW-HIGH, 1 <= LOW <= HIGH <= 65535",
             collie_param_str(COLLIE_P_PORT_RANGE));
    return -1;
  }
  return 0;
}

void collie_params_reload(void) {
  pthread_mutex_lock(&cache_lock);
  memset(cache, 0, sizeof(cache));
  pthread_mutex_unlock(&cache_lock);
}
