/* collie_comm_init_env: rank, size and rendezvous from whichever launcher started us.
 *
 * Order (API.md): COLLIE_RANK/COLLIE_NRANKS (collie-run), OMPI_COMM_WORLD_RANK/SIZE (Open
 * MPI), PMI_RANK/PMI_SIZE (MPICH), SLURM_PROCID/SLURM_NTASKS (Slurm), RANK/WORLD_SIZE
 * (torchrun). The root's address comes from COLLIE_ROOT_ADDR or MASTER_ADDR/MASTER_PORT;
 * without one, all ranks must share a host and meet through a file named after the
 * launcher's job id, which rank 0 writes and removes once everyone has joined. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "core/comm.h"
#include "core/comm_internal.h"
#include "core/error.h"
#include "core/log.h"
#include "core/own_waits.h"
#include "core/params.h"

static int env_int(const char *name, int *out) {
  const char *v = name ? getenv(name) : NULL;
  if (!v || !*v) return -1;
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || x < 0 || x > 1 << 30) return -2;
  *out = (int)x;
  return 0;
}

/* Slurm's variables describe this process only in a task srun started (SLURM_STEP_ID
 * set), and not in a torchrun worker under srun: there torchrun's RANK/WORLD_SIZE are the
 * nearer launcher's, and SLURM_PROCID/SLURM_NTASKS count the torchrun agents (every
 * worker of a host took itself for the same rank). An sbatch script's own shell has
 * SLURM_PROCID=0 and SLURM_NTASKS of the whole job too, and a program started there, or
 * torchrun started there, is not one of those tasks. Returns why they are not ours, or
 * NULL when they are. */
static const char *slurm_not_ours(void) {
  if (getenv("TORCHELASTIC_RUN_ID")) return "torchrun started this process inside a Slurm task";
  if (!getenv("SLURM_STEP_ID") && !getenv("SLURM_STEPID")) {
    int n;
    if (env_int("SLURM_NTASKS", &n) == 0 && n == 1) return NULL; /* sbatch -n 1: the one rank */
    return "they are the environment of a Slurm batch script (no SLURM_STEP_ID), not of a task srun started";
  }
  return NULL;
}

typedef struct {
  const char *rank, *size, *local_size, *name;
  /* Why the variables, though set, do not describe this process (inherited from an
   * enclosing launcher's environment), or NULL when they do; a NULL function: they always do. */
  const char *(*not_ours)(void);
  const char *how; /* how to start each rank with this launcher, for that sentence */
  /* Added to the sentence for ranks that span hosts without a root address. */
  const char *across_hosts_hint;
} launcher_t;

static const launcher_t launchers[] = {
    {"COLLIE_RANK", "COLLIE_NRANKS", "COLLIE_LOCAL_SIZE", "collie-run", NULL, NULL, ""},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "Open MPI", NULL, NULL, ""},
    {"PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS", "PMI (MPICH, srun --mpi=pmi2)", NULL, NULL, ""},
    /* rank 0 runs on the step's first node: the hint says how a batch script names it */
    {"SLURM_PROCID", "SLURM_NTASKS", NULL, "Slurm", slurm_not_ours, "srun (srun -n %s ./app in the batch script)",
     " (in the batch script, before srun: export COLLIE_ROOT_ADDR=$(scontrol show hostnames "
     "\"$SLURM_JOB_NODELIST\" | head -1):29500)"},
    {"RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "torchrun", NULL, NULL, ""},
};

/* A string that every rank of this job shares and no other job has. across_hosts: the
 * ranks meet at COLLIE_ROOT_ADDR and may run on several hosts, so the key may not depend
 * on the host (it seeds the communicator's secret, and a rank with another secret is
 * turned away). */
static void job_key(char *buf, size_t len, bool across_hosts) {
  const char *v;
  if ((v = getenv("COLLIE_JOB_ID")) && *v) snprintf(buf, len, "c-%s", v);
  else if ((v = getenv("PMIX_NAMESPACE")) && *v) snprintf(buf, len, "ompi-%s", v);
  else if ((v = getenv("OMPI_MCA_ess_base_jobid")) && *v) snprintf(buf, len, "ompi-%s", v);
  else if ((v = getenv("SLURM_JOB_ID")) && *v)
    snprintf(buf, len, "slurm-%s.%s", v, getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "0");
  else if (getenv("PMI_FD") || getenv("PMI_PORT"))
    /* MPICH's hydra starts every rank of a host from one proxy: its pid names the job on
     * one host. Each host has its own proxy, so across hosts the root address alone names
     * the job (with the pid, ranks of other hosts were refused as strangers). */
    snprintf(buf, len, across_hosts ? "hydra" : "hydra-%d", (int)getppid());
  else if ((v = getenv("TORCHELASTIC_RUN_ID")) && *v) snprintf(buf, len, "torch-%s", v);
  else buf[0] = 0;
  for (char *p = buf; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
      *p = '_';
}

static void secret_from(const char *a, const char *b, uint8_t out[16]) {
  char buf[512];
  int n = snprintf(buf, sizeof(buf), "%s|%s", a, b);
  uint64_t h1 = collie_hash64(buf, (size_t)n, 1), h2 = collie_hash64(buf, (size_t)n, 2);
  memcpy(out, &h1, 8);
  memcpy(out + 8, &h2, 8);
}

/* Is addr ("host:port") a host name, other than localhost, that resolved to loopback? */
static bool named_loopback(const char *addr, const struct sockaddr_storage *resolved) {
  const char *colon = strrchr(addr, ':');
  if (!collie_addr_is_loopback(resolved) || addr[0] == '[' || !colon) return false;
  char host[256];
  struct in_addr a4;
  snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
  return inet_pton(AF_INET, host, &a4) != 1 && strcasecmp(host, "localhost") != 0;
}

static collie_result_t init_with_addr(collie_comm_t **comm, int rank, int size, const char *addr, const char *key) {
  collie_id_info_t info = {0};
  char err[256];
  int parsed = collie_parse_hostport(addr, &info.root, err, sizeof(err));
  if (parsed != 0)
    return collie_error(NULL, parsed == -2 ? COLLIE_ERR_SYSTEM : COLLIE_ERR_INVALID_ARGUMENT,
                        "collie_comm_init_env on rank %d: root address: %s", rank, err);
  secret_from(key, addr, info.secret);
  info.version = COLLIE_VERSION_CODE;
  collie_unique_id_t id;
  collie_id_encode(&info, &id);
  int fd = -1;
  int inherited;
  static atomic_flag adopted = ATOMIC_FLAG_INIT;
  if (rank == 0 && env_int("COLLIE_ROOT_LISTEN_FD", &inherited) == 0 && !atomic_flag_test_and_set(&adopted)) {
    /* collie-run bound the port for us: adopt its socket (no race for the port). Once: the
     * first communicator closes it, and a later one found the number taken by whatever
     * the program opened since (made nonblocking, waited on, closed); it binds the port
     * itself (collie-run's socket has SO_REUSEADDR, so its old connections do not block
     * that). */
    int listening = 0;
    socklen_t ll = sizeof(listening);
    if (getsockopt(inherited, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) == 0 && listening) fd = inherited;
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  if (rank == 0 && fd < 0 && size > 1 && named_loopback(addr, &info.root)) {
    /* The root's name resolves to loopback here (Debian's /etc/hosts maps a host's own name
     * to 127.0.1.1) while the other hosts resolve it to this host's real address: listen on
     * every address, or they are refused until COLLIE_CONNECT_TIMEOUT. */
    struct sockaddr_storage any;
    memset(&any, 0, sizeof(any));
    any.ss_family = info.root.ss_family;
    collie_addr_set_port(&any, collie_addr_port(&info.root));
    fd = collie_listen_exact(&any);
    char as[80];
    COLLIE_INFO(COLLIE_SUB_BOOTSTRAP, 0, "the root address %s resolves to %s on this host: listening on every address",
                addr, collie_addr_str(&info.root, as, sizeof(as)));
    if (fd < 0)
      return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_comm_init_env on rank 0 could not listen on port %u: %s",
                          collie_addr_port(&info.root), strerror(errno));
  }
  return collie_comm_init_internal(comm, size, id, rank, NULL, fd);
}

/* What rank 0 leaves in the meeting file: the unique id, and which process wrote it. A
 * job killed while its ranks met leaves its file behind, and a later job may get the same
 * key (hydra's proxy pid and Open MPI's job id are reused as pids are): its other ranks,
 * reading before their rank 0 wrote, joined the dead one's address and failed after
 * COLLIE_CONNECT_TIMEOUT. A file whose writer is gone is waited past instead. */
typedef struct {
  collie_unique_id_t id;
  uint64_t pidns; /* the writer's PID namespace (/proc/self/ns/pid inode), 0 if unknown */
  uint64_t start; /* the writer's start time (collie_proc_start), 0 if unknown */
  int32_t pid;
  uint32_t zero;
} meeting_t;

static uint64_t own_pidns(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Whether the file's writer is known to be gone (in this PID namespace, pidns, no process
 * with its pid and start time); unknown counts as alive. */
static bool writer_gone(const meeting_t *m, uint64_t pidns) {
  if (!m->start || !m->pidns || m->pidns != pidns) return false;
  return collie_proc_start(m->pid) != m->start;
}

static collie_result_t init_single_host(collie_comm_t **comm, int rank, int size, const char *key,
                                        const char *launcher) {
  if (!key[0])
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE,
                        "collie_comm_init_env on rank %d: %s gave no job id to meet by; set "
                        "COLLIE_ROOT_ADDR=host:port (or MASTER_ADDR and MASTER_PORT) for every rank",
                        rank, launcher);
  char path[512], tmp[560];
  snprintf(path, sizeof(path), "/tmp/collie-%u-%s.id", (unsigned)getuid(), key);
  int64_t timeout_ms = collie_param_int(COLLIE_P_CONNECT_TIMEOUT) * 1000;
  meeting_t m = {0};
  if (rank == 0) {
    m = (meeting_t){.pid = (int32_t)getpid(), .pidns = own_pidns(), .start = collie_proc_start((int)getpid())};
    collie_id_info_t info;
    int fd = collie_id_create(NULL, &m.id, &info);
    if (fd < 0)
      return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_comm_init_env on rank 0 could not listen on loopback: %s",
                          strerror(errno));
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    int wfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (wfd < 0 || write(wfd, &m, sizeof(m)) != (ssize_t)sizeof(m) || close(wfd) != 0 || rename(tmp, path) != 0) {
      int e = errno;
      if (wfd >= 0) unlink(tmp);
      close(fd);
      return collie_error(NULL, COLLIE_ERR_SYSTEM,
                          "collie_comm_init_env on rank 0 could not publish its address in %s: %s", path,
                          strerror(e));
    }
    collie_result_t res = collie_comm_init_internal(comm, size, m.id, 0, NULL, fd);
    unlink(path); /* everyone joined (or gave up): the file has served */
    return res;
  }
  int64_t deadline = collie_now_ns() + timeout_ms * 1000000;
  const uint64_t pidns = own_pidns();
  bool said = false;
  for (;;) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = read(fd, &m, sizeof(m));
      close(fd);
      if (n == (ssize_t)sizeof(m) && !writer_gone(&m, pidns)) break;
      if (n == (ssize_t)sizeof(m) && !said) {
        COLLIE_INFO(COLLIE_SUB_BOOTSTRAP, rank, "%s was left by process %d, which is gone: waiting for rank 0's", path,
                    (int)m.pid);
        said = true;
      }
    }
    if (collie_now_ns() > deadline)
      return collie_error(NULL, COLLIE_ERR_TIMEOUT,
                          "collie_comm_init_env on rank %d: rank 0 did not publish its address in %s within %lld s%s; "
                          "check that rank 0 runs on this host, or set COLLIE_ROOT_ADDR",
                          rank, path, (long long)(timeout_ms / 1000),
                          said ? " (the file there was left by a process that is gone)" : "");
    usleep(5000);
  }
  return collie_comm_init_internal(comm, size, m.id, rank, NULL, -1);
}

/* The root address from MASTER_ADDR and MASTER_PORT. Under torchrun the port is taken:
 * the elastic agent of the first host holds it with its rendezvous store (it tells its
 * workers so with TORCHELASTIC_USE_AGENT_STORE), and in older versions the first worker's
 * init_process_group did. Rank 0 failed there with "Address already in use", or, first
 * to bind it, broke torch's own start. So where torchrun started the ranks
 * (TORCHELASTIC_RUN_ID) collie meets one port higher, which every rank computes alike. */
static collie_result_t master_address(int rank, char *out, size_t len) {
  const char *h = getenv("MASTER_ADDR"), *p = getenv("MASTER_PORT");
  char *end;
  long port = strtol(p, &end, 10);
  if (*end || port < 1 || port > 65535)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                        "collie_comm_init_env on rank %d: MASTER_PORT='%s' is not a port (1 to 65535)", rank, p);
  const bool torchrun = getenv("TORCHELASTIC_RUN_ID") != NULL;
  if (torchrun) {
    if (port == 65535)
      return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                          "collie_comm_init_env on rank %d: under torchrun collie meets at MASTER_PORT + 1, and "
                          "MASTER_PORT is 65535: set COLLIE_ROOT_ADDR=host:port",
                          rank);
    port++;
    COLLIE_INFO(COLLIE_SUB_BOOTSTRAP, rank,
                "torchrun's rendezvous store holds MASTER_PORT %s: collie's rank 0 listens on port %ld", p, port);
  }
  snprintf(out, len, strchr(h, ':') ? "[%s]:%ld" : "%s:%ld", h, port);
  return COLLIE_SUCCESS;
}

collie_result_t collie_comm_init_env(collie_comm_t **comm) {
  if (!comm) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_comm_init_env: comm is NULL");
  *comm = NULL;
  const launcher_t *l = NULL;
  int rank = -1, size = -1, local_size = -1;
  const launcher_t *skipped = NULL; /* set, but inherited: see launcher_t.not_ours */
  const char *why = NULL;
  for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
    const launcher_t *c = &launchers[i];
    int r = env_int(c->rank, &rank), s = env_int(c->size, &size);
    if (r == -1 && s == -1) continue;
    const char *not_ours = c->not_ours ? c->not_ours() : NULL;
    if (not_ours) {
      COLLIE_INFO(COLLIE_SUB_BOOTSTRAP, -1, "%s=%s and %s=%s ignored: %s", c->rank, getenv(c->rank), c->size,
                  getenv(c->size) ? getenv(c->size) : "(unset)", not_ours);
      if (!skipped) skipped = c, why = not_ours;
      continue;
    }
    if (r != 0 || s != 0 || size < 1 || rank >= size)
      return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                          "collie_comm_init_env: %s=%s and %s=%s do not describe a rank of a job", c->rank,
                          getenv(c->rank) ? getenv(c->rank) : "(unset)", c->size,
                          getenv(c->size) ? getenv(c->size) : "(unset)");
    l = c;
    break;
  }
  if (!l && skipped) {
    const char *n = getenv(skipped->size);
    char how[160];
    snprintf(how, sizeof(how), skipped->how, n ? n : "N");
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE,
                        "collie_comm_init_env: %s=%s and %s=%s do not describe this process: %s; start each rank "
                        "with %s, or with another launcher",
                        skipped->rank, getenv(skipped->rank), skipped->size, n ? n : "(unset)", why, how);
  }
  if (!l)
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE,
                        "collie_comm_init_env found no launcher environment: start the program with collie-run, "
                        "mpirun, mpiexec or srun, or set COLLIE_RANK and COLLIE_NRANKS (and COLLIE_ROOT_ADDR)");
  const char *addr = collie_param_str(COLLIE_P_ROOT_ADDR);
  char master[300];
  if (!addr && getenv("MASTER_ADDR") && getenv("MASTER_PORT")) {
    collie_result_t res = master_address(rank, master, sizeof(master));
    if (res) return res;
    addr = master;
  }
  char key[256];
  job_key(key, sizeof(key), addr != NULL);
  COLLIE_INFO(COLLIE_SUB_BOOTSTRAP, rank, "launched by %s as rank %d of %d (job key '%s')", l->name, rank, size, key);
  if (addr) return init_with_addr(comm, rank, size, addr, key);
  if (size == 1) {
    collie_unique_id_t id;
    collie_result_t res = collie_get_unique_id(&id);
    return res ? res : collie_comm_init_internal(comm, 1, id, 0, NULL, -1);
  }
  int nnodes;
  bool multi = (env_int(l->local_size, &local_size) == 0 && local_size != size) ||
               (env_int("SLURM_NNODES", &nnodes) == 0 && nnodes > 1);
  if (multi)
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE,
                        "collie_comm_init_env on rank %d: the %d ranks span several hosts; set "
                        "COLLIE_ROOT_ADDR=host:port (a host of rank 0 and a free port) or MASTER_ADDR and "
                        "MASTER_PORT for every rank%s",
                        rank, size, l->across_hosts_hint);
  return init_single_host(comm, rank, size, key, l->name);
}
