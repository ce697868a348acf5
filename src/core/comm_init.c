/* Creating communicators: unique ids, collie_comm_init_rank*, collie_comm_init_all. */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bootstrap/control.h"
#include "bootstrap/hostid.h"
#include "bootstrap/settings.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/cpus.h"
#include "core/error.h"
#include "core/log.h"
#include "core/own_waits.h"
#include "core/params.h"
#include "core/progress_others.h"
#include "transport/shm.h"
#include "transport/tcp.h"

collie_result_t collie_get_unique_id(collie_unique_id_t *id) {
  if (!id) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_get_unique_id: id is NULL");
  collie_id_info_t info;
  struct sockaddr_storage ip;
  char err[256], a[80];
  if (collie_pick_local_addr(&ip, err, sizeof(err)) != 0)
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_get_unique_id: %s", err);
  int fd = collie_id_create(&ip, id, &info);
  if (fd < 0)
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_get_unique_id could not listen on %s: %s",
                        collie_addr_str(&ip, a, sizeof(a)), strerror(errno));
  if (collie_id_listener_register(info.secret, fd) != 0) {
    close(fd);
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_get_unique_id: out of memory (its record of the listening "
                        "socket): " COLLIE_MEMORY_ADVICE);
  }
  return COLLIE_SUCCESS;
}

/* Where this rank accepts transport connections: the interface named by
 * COLLIE_SOCKET_IFNAME, else the address the route to the root uses (rank 0: the root
 * address itself). Not when that address is loopback, which other hosts cannot reach:
 * the root's host name can resolve to loopback on its own host (Debian's /etc/hosts maps
 * it to 127.0.1.1), and then rank 0 and the ranks beside it advertised 127.x addresses to
 * the other hosts, which failed to connect. Nor when it is not this host's (rank 0 behind
 * NAT: collie_listen_exact listens on every address). Then the first non-loopback
 * interface serves: the ranks of this host reach it as well as loopback. */
static collie_result_t make_listener(collie_comm_t *comm, const struct sockaddr_storage *route_ip) {
  struct sockaddr_storage ip = *route_ip;
  char err[256];
  if (collie_param_str(COLLIE_P_SOCKET_IFNAME)) {
    if (collie_pick_local_addr(&ip, err, sizeof(err)) != 0)
      return collie_error(comm, COLLIE_ERR_SYSTEM, "rank %d: %s", comm->rank, err);
  } else if ((collie_addr_is_loopback(&ip) || !collie_addr_is_local(&ip)) &&
             collie_pick_local_addr(&ip, err, sizeof(err)) != 0) {
    ip = *route_ip;
  }
  return collie_tcp_listen(comm, &ip);
}

/* Whether two ranks reach each other through shared memory: the same host identity, and
 * both willing. */
static bool shm_pair(const collie_card_t *a, const collie_card_t *b) {
  return (a->caps & b->caps & COLLIE_CAP_SHM) && !strcmp(a->host_id, b->host_id);
}

/* The groups of the hierarchical algorithms (algo/hier.c): the ranks that reach each other
 * through shared memory, numbered in order of their lowest rank; a rank without shared
 * memory is a group of its own. Every rank computes them from the same cards alike. */
static void find_groups(collie_comm_t *comm) {
  const int n = comm->nranks;
  for (int r = 0; r < n; r++) comm->group_of[r] = -1;
  comm->ngroups = 0;
  comm->group_size = -1; /* until the first group: then its size, or 0 once sizes differ */
  for (int r = 0; r < n; r++) {
    if (comm->group_of[r] >= 0) continue;
    int size = 1;
    comm->group_of[r] = comm->ngroups;
    for (int q = r + 1; q < n; q++)
      if (comm->group_of[q] < 0 && shm_pair(&comm->cards[r], &comm->cards[q])) {
        comm->group_of[q] = comm->ngroups;
        size++;
      }
    comm->ngroups++;
    comm->group_size = comm->group_size < 0 || comm->group_size == size ? size : 0;
  }
}

static collie_result_t setup_transports(collie_comm_t *comm) {
  collie_result_t res = COLLIE_SUCCESS;
  bool *use_tcp = calloc((size_t)comm->nranks, sizeof(bool));
  comm->local_ranks = malloc(sizeof(int) * (size_t)comm->nranks);
  comm->group_of = malloc(sizeof(int) * (size_t)comm->nranks);
  if (!use_tcp || !comm->local_ranks || !comm->group_of) {
    /* Through the first barrier, which the others wait in: they would see only this
     * rank's connection close. */
    free(use_tcp);
    collie_init_no_memory(comm, comm->rank, "its tables of transports and local ranks");
    collie_ctl_barrier(comm, comm->last_error);
    return COLLIE_ERR_SYSTEM;
  }
  /* Local ranks: same host identity, and both willing to use shared memory. */
  const collie_card_t *me = &comm->cards[comm->rank];
  find_groups(comm);
  for (int r = 0; r < comm->nranks; r++) {
    if (r == comm->rank || shm_pair(me, &comm->cards[r])) {
      if (r == comm->rank) comm->local_rank = comm->nlocal;
      comm->local_ranks[comm->nlocal++] = r;
    }
  }
  comm->peers[comm->rank].tp = &collie_transport_self;

  const char *err = NULL;
  collie_result_t own = COLLIE_SUCCESS; /* this rank's own failure, whose code it returns */
  if (comm->nlocal > 1) {
    res = own = collie_shm_create(comm);
    if (res) err = comm->last_error;
  }
  res = collie_ctl_barrier(comm, err);
  if (!res) {
    bool gave_up = false;
    if (comm->nlocal > 1) {
      res = own = collie_shm_connect(comm);
      /* A rank that failed to connect tells rank 0, which gives up and removes its own
       * segment: a rank still connecting then finds it gone ("No such file", with advice
       * about containers). The failure already told is the one to report. */
      gave_up = res && collie_ctl_setup_failed(comm);
      err = res && !gave_up ? comm->last_error : NULL;
    }
    /* Every rank takes part in every barrier, a rank alone on its host too: the barriers
     * are counted, and one skipped left that rank a barrier behind (3 ranks on 2 hosts
     * timed out at creation). */
    res = collie_ctl_barrier(comm, err);
    if (gave_up && !res) res = own; /* defensive, as for TCP below */
    if (!res && comm->nlocal > 1) { /* every rank has probed: the same answers everywhere */
      collie_shm_probe_settle(comm);
      collie_shm_cma_settle(comm);
    }
  }
  if (comm->shm) collie_shm_unlink(comm); /* everyone mapped it (or we give up): nothing stays */
  if (!res) {
    for (int r = 0; r < comm->nranks; r++) use_tcp[r] = !comm->peers[r].tp;
    /* A rank that fails here never connects: the others would wait for it until
     * COLLIE_CONNECT_TIMEOUT. They give up as soon as its failure reaches rank 0 (and rank
     * 0's, them), and the barrier then gives them its sentence instead of their own
     * "timed out waiting for N TCP connections". */
    collie_socket_abandon_if(collie_ctl_setup_failed, comm);
    res = own = collie_tcp_connect(comm, use_tcp);
    bool gave_up = res && collie_ctl_setup_failed(comm);
    collie_socket_abandon_if(NULL, NULL);
    err = res && !gave_up ? comm->last_error : NULL;
    res = collie_ctl_barrier(comm, err);
    if (gave_up && !res) res = own; /* defensive: giving up without a failure left peers unconnected */
  }
  free(use_tcp);
  if (res && comm->shm) collie_shm_unlink_peers(comm);
  /* Its own failure keeps its code: a connect timeout is COLLIE_ERR_TIMEOUT, as its
   * sentence says (it was reported as COLLIE_ERR_SYSTEM, "system call failed"). */
  if (res && err) return own ? own : COLLIE_ERR_SYSTEM;
  return res;
}

/* When the ranks of this host outnumber the cores they may use (the union of their affinity
 * masks, or this process's cgroup CPU quota: core/cpus.h), polling only keeps a peer that
 * has work off the core: measured on 2 cores, an 8 B allreduce took 77 us on 4 ranks with
 * 20 us of polling and 5 us without (8 ranks: 102 us and 11 us). So an oversubscribed rank
 * yields at once, unless COLLIE_SPIN says otherwise. The union, not this rank's own mask:
 * ranks bound to a core each (mpirun --bind-to core) see one CPU apiece and counted
 * themselves oversubscribed. */
static void choose_wait_policy(collie_comm_t *comm) {
  const uint64_t *masks[comm->nlocal];
  for (int i = 0; i < comm->nlocal; i++) masks[i] = comm->cards[comm->local_ranks[i]].cpus;
  int cores = collie_host_usable_cpus(masks, comm->nlocal, COLLIE_CARD_CPU_WORDS);
  if (cores < 1) cores = collie_usable_cpus();
  bool user_spin = collie_param_from_env(COLLIE_P_SPIN);
  comm->oversubscribed = comm->nlocal > cores;
  if (!user_spin && comm->oversubscribed) comm->spin = 0;
  COLLIE_INFO(COLLIE_SUB_INIT, comm->rank, "%d ranks on this host, %d cores: poll %d us, yield %d us, then sleep",
              comm->nlocal, cores, comm->spin, comm->yield);
}

/* A message between hosts costs tens of microseconds (alpha), against a microsecond in
 * shared memory, so when any pair of ranks talks TCP the pipelines cut larger chunks,
 * unless COLLIE_CHUNK_SIZE says otherwise. Measured on 2 ranks over loopback TCP, the
 * automatic choice, best of 5: 64 MiB allreduce 26.1 ms with 1M chunks against 30.9 with
 * 512K, 26.3 with 2M and 42 with 64K (ring); 4 MiB 0.77 ms against 1.0 (512K) and 1.2 (2M).
 * Every rank sees the same nlocal == nranks, the predicate the cost model uses too, so
 * every rank cuts the same chunks. */
#define TCP_CHUNK_BYTES (1u << 20)
size_t collie_auto_chunk_bytes(bool tcp) {
  int64_t one_host = 0;
  collie_parse_size(collie_param_table[COLLIE_P_CHUNK_SIZE].def, &one_host);
  return tcp ? TCP_CHUNK_BYTES : (size_t)one_host;
}

static void choose_chunk(collie_comm_t *comm) {
  const bool user = collie_param_from_env(COLLIE_P_CHUNK_SIZE);
  const bool tcp = comm->nlocal != comm->nranks;
  if (!user) comm->chunk_bytes = collie_auto_chunk_bytes(tcp);
  COLLIE_INFO(COLLIE_SUB_INIT, comm->rank, "pipelining chunk %zu bytes (%s)", comm->chunk_bytes,
              user ? "COLLIE_CHUNK_SIZE" : tcp ? "TCP between some ranks" : "all ranks on one host");
}

/* COLLIE_STREAM_BYTES holds for 2 ranks on a host, and the ranks of a host share its
 * caches: with n of them it is 2/n of it, down to half from 4 ranks on (16M: 8M; a 4-rank
 * 8 MiB all-to-all took 15% less time). Not lower: on 8 ranks, streaming from 4 MiB gained
 * nothing (docs/tuning.md). Only how a rank writes its own buffers: ranks need not agree. */
static void choose_stream_bytes(collie_comm_t *comm) {
  if (!comm->stream_bytes) return; /* 0: never */
  const uint64_t share = comm->nlocal >= 4 ? 4 : comm->nlocal > 2 ? (uint64_t)comm->nlocal : 2;
  const uint64_t threshold = comm->stream_bytes / share * 2;
  comm->stream_bytes = threshold ? threshold : 1;
}

/* Linux starts a process on its parent's CPU and moves it only when its load balancer next
 * looks, milliseconds later; meanwhile two ranks that launched together share one core and
 * every exchange waits for a context switch (an 8 B allreduce on 2 ranks: 9 to 25 us for
 * the first thousands of operations instead of 1.3; 4 ranks on 2 cores, three on one:
 * 9.9 us instead of 6.6). At the first communicator of a process each rank moves to the
 * CPU of its local index (modulo the CPUs it may use) and then gets its whole mask back:
 * a starting place, not a binding.
 * Ranks that are threads of one process are left alone (the mask is per thread, and their
 * creator placed them). */
static void spread_local_ranks(collie_comm_t *comm) {
  static atomic_flag done = ATOMIC_FLAG_INIT;
  if (comm->nlocal < 2 || !collie_param_int(COLLIE_P_SPREAD_RANKS) || atomic_flag_test_and_set(&done)) return;
  for (int li = 0; li < comm->nlocal; li++)
    if (li != comm->local_rank && comm->cards[comm->local_ranks[li]].pid == comm->cards[comm->rank].pid) return;
  cpu_set_t mask, one;
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0 || CPU_COUNT(&mask) < 2) return;
  const int cpu = collie_nth_cpu(&mask, comm->local_rank);
  if (cpu < 0 || sched_getcpu() == cpu) return;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof(one), &one) == 0) sched_setaffinity(0, sizeof(mask), &mask);
  COLLIE_INFO(COLLIE_SUB_INIT, comm->rank, "local rank %d of %d moved to CPU %d (its mask is unchanged)",
              comm->local_rank, comm->nlocal, cpu);
}

static void log_topology(collie_comm_t *comm) {
  if (!collie_log_enabled(COLLIE_LOG_INFO, COLLIE_SUB_INIT)) return;
  char line[512];
  size_t o = 0;
  for (int r = 0; r < comm->nranks && o < sizeof(line) - 32; r++)
    o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%d:%s", r ? " " : "", r, comm->peers[r].tp->name);
  COLLIE_INFO(COLLIE_SUB_INIT, comm->rank, "communicator %016llx: rank %d of %d, %d on this host; peers %s",
              (unsigned long long)comm->comm_hash, comm->rank, comm->nranks, comm->nlocal, line);
}

/* The connect timeout creation waits for, as the communicator will hold it. */
static int creation_connect_timeout_ms(const collie_config_t *config) {
  int ms = (int)collie_param_int(COLLIE_P_CONNECT_TIMEOUT) * 1000;
  if (config && config->connect_timeout_ms > 0) ms = config->connect_timeout_ms;
  return ms > 0 ? ms : 60000;
}

#define REPORT_WINDOW_MS 5000

/* A rank that fails before it reaches the bootstrap tells whoever waits for it
 * (collie_ctl_tell_join_failure): rank 0 answers on listen_fd, the id's listener or the
 * id's address. Closes listen_fd. */
static collie_result_t failed_before_joining(const collie_id_info_t *info, int rank, int nranks,
                                             const collie_config_t *config, collie_result_t res, int listen_fd) {
  char msg[1024];
  snprintf(msg, sizeof(msg), "%s", collie_get_last_error(NULL));
  if (rank == 0 && nranks > 1 && listen_fd < 0) listen_fd = collie_id_listener_take(info->secret);
  if (rank == 0 && nranks > 1 && listen_fd < 0) {
    struct sockaddr_storage a = info->root;
    listen_fd = collie_listen_exact(&a);
  }
  /* Rank 0 may start later than this rank (a launcher's skew), but not by much: were it
   * gone (failed too), this rank would wait the whole connect timeout to return its error. */
  int ms = creation_connect_timeout_ms(config);
  int64_t deadline = collie_now_ns() + (int64_t)(ms < REPORT_WINDOW_MS ? ms : REPORT_WINDOW_MS) * 1000000;
  collie_ctl_tell_join_failure(info, rank, nranks, listen_fd, -1, deadline, msg);
  if (listen_fd >= 0) close(listen_fd);
  collie_set_thread_error(msg);
  return res;
}

static collie_result_t init_comm(collie_comm_t **out, int nranks, collie_unique_id_t id, int rank,
                                 const collie_config_t *config, int listen_fd) {
  collie_result_t res = COLLIE_SUCCESS;
  char msg[512];
  bool joining = false, set_up = false;
  if (!out) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_comm_init_rank: comm is NULL");
  *out = NULL;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                        "collie_comm_init_rank: rank %d is not in 0..nranks-1 (nranks=%d)", rank, nranks);
  if (config && config->struct_size < sizeof(size_t))
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                        "collie_comm_init_rank_config: config->struct_size is %zu; initialise the config "
                        "with COLLIE_CONFIG_INIT",
                        config->struct_size);
  collie_id_info_t info;
  int d = collie_id_decode(&id, &info);
  if (d == -1)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                        "rank %d: the unique id is not a collie unique id (bad magic or checksum); pass the "
                        "128 bytes from collie_get_unique_id unchanged to every rank",
                        rank);
  if (d == -2)
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE,
                        "rank %d: the unique id was made by collie version %u but this is version %d; every "
                        "rank must use the same collie version",
                        rank, info.version, COLLIE_VERSION_CODE);
  /* After the id, so that a value refused on some ranks only (a variable exported on one
   * host) reaches the others: they waited out COLLIE_CONNECT_TIMEOUT ("missing: 2"). */
  if (collie_params_validate(msg, sizeof(msg)) != 0 || collie_log_check_subsys(msg, sizeof(msg)) != 0)
    return failed_before_joining(&info, rank, nranks, config,
                                 collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "rank %d: %s", rank, msg), listen_fd);

  collie_comm_t *comm = calloc(1, sizeof(*comm));
  if (!comm)
    return failed_before_joining(&info, rank, nranks, config, collie_init_no_memory(NULL, rank, "its state"), listen_fd);
  comm->magic = COLLIE_COMM_LIVE;
  pthread_mutex_init(&comm->err_lock, NULL);
  atomic_store(&comm->refs, 1);
  comm->rank = rank;
  comm->nranks = nranks;
  memcpy(comm->secret, info.secret, 16);
  comm->comm_hash = collie_hash64(info.secret, 16, 0x636f6d6d);
  comm->connect_timeout_ms = creation_connect_timeout_ms(config);
  comm->exec_timeout_ms = (int)collie_param_int(COLLIE_P_EXEC_TIMEOUT) * 1000;
  comm->chunk_bytes = (size_t)collie_param_int(COLLIE_P_CHUNK_SIZE);
  comm->spin = (int)collie_param_int(COLLIE_P_SPIN);
  comm->stream_bytes = (uint64_t)collie_param_int(COLLIE_P_STREAM_BYTES);
  comm->yield = (int)collie_param_int(COLLIE_P_YIELD);
  collie_set_wait_peer(comm, -1);
  comm->stall_asked = -1;
  atomic_store(&comm->left_after, UINT64_MAX);
  const char *algo = collie_param_str(COLLIE_P_ALGO), *proto = collie_param_str(COLLIE_P_PROTO);
  if (config) {
    if (config->exec_timeout_ms > 0) comm->exec_timeout_ms = config->exec_timeout_ms;
    if (config->struct_size >= offsetof(collie_config_t, proto) + sizeof(char *)) {
      if (config->algo) algo = config->algo;
      if (config->proto) proto = config->proto;
    }
  }
  if (comm->exec_timeout_ms <= 0) comm->exec_timeout_ms = 600000;
  comm->algo = algo ? strdup(algo) : NULL;
  comm->proto = proto ? strdup(proto) : NULL;
  comm->cards = calloc((size_t)nranks, sizeof(collie_card_t));
  comm->peers = calloc((size_t)nranks, sizeof(collie_peer_t));
  /* A copy of COLLIE_ALGO or COLLIE_PROTO that failed silently would make this rank choose
   * differently from the others (or be refused for settings it does not have). */
  if (!comm->cards || !comm->peers || (algo && !comm->algo) || (proto && !comm->proto)) {
    res = collie_init_no_memory(NULL, rank, "its tables of the ranks and settings");
    goto fail;
  }
  for (int r = 0; r < nranks; r++) comm->peers[r].rank = r;
  res = collie_check_algo_config(comm);
  if (res) goto fail;

  collie_card_t card;
  memset(&card, 0, sizeof(card));
  card.rank = rank;
  card.pid = (int32_t)getpid();
  card.version = COLLIE_VERSION_CODE;
  const char *tr = collie_param_str(COLLIE_P_TRANSPORT);
  card.caps = (tr && !strcasecmp(tr, "tcp")) ? 0 : COLLIE_CAP_SHM;
  snprintf(card.hostname, sizeof(card.hostname), "%s", collie_hostname());
  collie_host_id(card.host_id, sizeof(card.host_id));
  collie_affinity_bits(card.cpus, COLLIE_CARD_CPU_WORDS);

  if (rank == 0 && listen_fd < 0) listen_fd = collie_id_listener_take(info.secret);
  if (rank == 0 && listen_fd < 0 && nranks > 1) {
    struct sockaddr_storage a = info.root;
    char as[80];
    if (!collie_addr_is_local(&a))
      COLLIE_WARN(COLLIE_SUB_BOOTSTRAP, 0,
                  "the root address %s (COLLIE_ROOT_ADDR, MASTER_ADDR or the unique id) is not an address "
                  "of this host (%s); rank 0 listens on port %u of every address: right behind NAT, "
                  "otherwise run rank 0 on the host it names (or create the unique id in rank 0's process)",
                  collie_addr_str(&a, as, sizeof(as)), collie_hostname(), collie_addr_port(&a));
    listen_fd = collie_listen_exact(&a);
    if (listen_fd < 0) {
      const bool taken = errno == EADDRINUSE;
      res = collie_error(NULL, COLLIE_ERR_SYSTEM, "rank 0 could not listen on %s from the unique id: %s; %s",
                         collie_addr_str(&info.root, as, sizeof(as)), strerror(errno),
                         taken ? "another program holds that port (another job, or a rendezvous store such as "
                                 "torch's on MASTER_PORT): give every rank a free one with COLLIE_ROOT_ADDR=host:port"
                               : "create the id in the process of rank 0 or make sure that address is this host's");
      goto fail;
    }
  }
  collie_settings_t settings;
  collie_settings_read(comm, &settings);
  joining = true; /* from here on the bootstrap tells rank 0 itself */
  res = collie_bootstrap(comm, &info, listen_fd, &card, &settings, make_listener);
  if (listen_fd >= 0) close(listen_fd);
  listen_fd = -1;
  if (res) goto fail;
  res = setup_transports(comm);
  if (res) goto fail;
  set_up = true;
  res = collie_ctl_start_watchdog(comm);
  if (res) goto fail;
  res = collie_start_progress_thread(comm);
  if (res) goto fail;
  choose_wait_policy(comm);
  choose_chunk(comm);
  choose_stream_bytes(comm);
  spread_local_ranks(comm);
  res = collie_shm_cma_measure(comm); /* a working communicator, ranks placed */
  if (res) goto fail;
  log_topology(comm);
  collie_own_waits_add(comm);
  *out = comm;
  return COLLIE_SUCCESS;
fail:
  if (comm->last_error[0]) collie_set_thread_error(comm->last_error);
  if (!joining) failed_before_joining(&info, rank, nranks, config, res, listen_fd);
  else if (listen_fd >= 0) close(listen_fd);
  /* Failed on its own after the set-up barriers (its watchdog or progress thread, the
   * timing of process_vm_readv): the others would see only its connections close. */
  if (set_up && !atomic_load(&comm->failed))
    collie_ctl_tell_creation_failure(comm, collie_get_last_error(NULL));
  atomic_store(&comm->destroyed, 1);
  collie_comm_teardown(comm);
  collie_comm_release(comm);
  return res;
}

collie_result_t collie_comm_init_internal(collie_comm_t **out, int nranks, collie_unique_id_t id, int rank,
                                          const collie_config_t *config, int listen_fd) {
  /* the waits of creation move this thread's other communicators (socket.h) */
  collie_socket_idle_with(collie_others_idle);
  collie_result_t res = init_comm(out, nranks, id, rank, config, listen_fd);
  collie_socket_idle_with(NULL);
  return res;
}

collie_result_t collie_comm_init_rank(collie_comm_t **comm, int nranks, collie_unique_id_t id, int rank) {
  return collie_comm_init_internal(comm, nranks, id, rank, NULL, -1);
}

collie_result_t collie_comm_init_rank_config(collie_comm_t **comm, int nranks, collie_unique_id_t id, int rank,
                                             const collie_config_t *config) {
  return collie_comm_init_internal(comm, nranks, id, rank, config, -1);
}

typedef struct {
  collie_comm_t **slot;
  int nranks, rank;
  collie_unique_id_t id;
  collie_result_t res;
  char err[1024];
} init_all_arg_t;

static void *init_all_thread(void *p) {
  init_all_arg_t *a = p;
  a->res = collie_comm_init_rank(a->slot, a->nranks, a->id, a->rank);
  if (a->res) snprintf(a->err, sizeof(a->err), "%s", collie_get_last_error(NULL));
  return NULL;
}

collie_result_t collie_comm_init_all(collie_comm_t **comms, int nranks) {
  if (!comms || nranks < 1)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_comm_init_all: %s",
                        comms ? "nranks must be at least 1" : "comms is NULL");
  /* All ranks live in this process: loopback is always the right rendezvous. */
  collie_id_info_t info;
  collie_unique_id_t id;
  int fd = collie_id_create(NULL, &id, &info);
  if (fd < 0)
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_comm_init_all could not listen on loopback: %s",
                        strerror(errno));
  if (collie_id_listener_register(info.secret, fd) != 0) {
    close(fd);
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_comm_init_all: out of memory (its record of the listening "
                        "socket): " COLLIE_MEMORY_ADVICE);
  }

  init_all_arg_t *args = calloc((size_t)nranks, sizeof(*args));
  pthread_t *th = calloc((size_t)nranks, sizeof(pthread_t));
  if (!args || !th) {
    free(args);
    free(th);
    close(collie_id_listener_take(info.secret));
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_comm_init_all: out of memory (its tables of %d ranks): "
                        COLLIE_MEMORY_ADVICE, nranks);
  }
  int started = 0;
  for (int r = 0; r < nranks; r++) {
    comms[r] = NULL;
    args[r] = (init_all_arg_t){&comms[r], nranks, r, id, COLLIE_SUCCESS, ""};
    int rc = collie_thread_start(&th[r], init_all_thread, &args[r]);
    if (rc != 0) {
      args[r].res = COLLIE_ERR_SYSTEM;
      snprintf(args[r].err, sizeof(args[r].err), "collie_comm_init_all could not start a thread for rank %d: %s; %s",
               r, strerror(rc), collie_thread_advice(rc));
      /* The ranks started wait for this one: it fails in their creation at once, where they
       * waited until COLLIE_CONNECT_TIMEOUT (rank 0 cannot be told: none has started). */
      int64_t deadline = collie_now_ns() + (int64_t)creation_connect_timeout_ms(NULL) * 1000000;
      if (r > 0) collie_ctl_tell_join_failure(&info, r, nranks, -1, -1, deadline, args[r].err);
      break;
    }
    started++;
  }
  for (int r = 0; r < started; r++) pthread_join(th[r], NULL);
  /* The sentence of a rank that failed on its own, rather than one that reports another
   * rank's failure (COLLIE_ERR_REMOTE: "rank 1 closed its connection"). */
  collie_result_t res = COLLIE_SUCCESS;
  for (int pass = 0; pass < 2 && !res; pass++)
    for (int r = 0; r < nranks && r <= started; r++)
      if (args[r].res && !res && (pass || args[r].res != COLLIE_ERR_REMOTE)) {
        res = args[r].res;
        collie_set_thread_error(args[r].err);
      }
  if (res) {
    char keep[1024];
    snprintf(keep, sizeof(keep), "%s", collie_get_last_error(NULL));
    for (int r = 0; r < nranks; r++)
      if (comms[r]) {
        collie_comm_abort(comms[r]);
        comms[r] = NULL;
      }
    collie_set_thread_error(keep);
  }
  int leftover = collie_id_listener_take(info.secret); /* rank 0 may not have got that far */
  if (leftover >= 0) close(leftover);
  free(args);
  free(th);
  return res;
}
