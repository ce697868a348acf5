/* Starting ranks. Under a launcher (collie-run, mpirun, mpiexec, srun) every rank is
 * already running and collie_comm_init_env finds its place. With -p N the binary is its
 * own launcher: it re-executes itself N times with the environment collie-run would give
 * (see tools/collie-run-spawn.c), then only supervises. Re-exec rather than plain fork so
 * that each rank starts as a fresh process, exactly as under a real launcher. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

/* Set in the ranks a -p parent starts, so that they do not start ranks of their own. */
#define PERF_CHILD_ENV "COLLIE_PERF_CHILD"
/* After SIGTERM, ranks get this long to exit before SIGKILL. */
#define PERF_KILL_DELAY_MS 2000

int perf_is_spawned_child(void) {
  const char *v = getenv(PERF_CHILD_ENV);
  return v && *v;
}

/* The listening socket for rank 0, bound before any rank exists (port 0: the kernel picks
 * a free one, so parallel runs never collide) and inherited as an open fd, so no rank can
 * try to connect before it listens. Close-on-exec: only rank 0 clears the flag. */
static int open_rendezvous(char *addr, size_t len) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  snprintf(addr, len, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
  return fd;
}

static void set_env_int(const char *name, long v) {
  char s[24];
  snprintf(s, sizeof s, "%ld", v);
  setenv(name, s, 1);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child between fork and exec: the parent is single-threaded, so setenv is safe. */
static _Noreturn void become_rank(int rank, int nranks, int listen_fd, const char *addr, const char *job,
                                  pid_t parent, const sigset_t *mask, char **argv) {
  /* If the parent dies, even by SIGKILL, the rank dies too: no orphans. The parent may
   * already be gone before prctl took effect; then stop here. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(PERF_EXIT_FAILURE);
  set_env_int("COLLIE_RANK", rank);
  set_env_int("COLLIE_NRANKS", nranks);
  set_env_int("COLLIE_LOCAL_RANK", rank);
  set_env_int("COLLIE_LOCAL_SIZE", nranks);
  setenv("COLLIE_ROOT_ADDR", addr, 1);
  setenv("COLLIE_JOB_ID", job, 1);
  setenv(PERF_CHILD_ENV, "1", 1);
  if (rank == 0) {
    if (fcntl(listen_fd, F_SETFD, 0) < 0) _exit(PERF_EXIT_FAILURE);
    set_env_int("COLLIE_ROOT_LISTEN_FD", listen_fd);
  } else {
    unsetenv("COLLIE_ROOT_LISTEN_FD"); /* may be inherited from an enclosing job */
  }
  sigprocmask(SIG_SETMASK, mask, NULL);
  execv("/proc/self/exe", argv);
  fprintf(stderr, "%s: cannot re-execute itself for rank %d: %s\n", argv[0], rank, strerror(errno));
  _exit(PERF_EXIT_FAILURE);
}

static void signal_all(const pid_t *pids, int n, int sig) {
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) kill(pids[i], sig);
}

/* Waits for every rank. The first failure decides the exit status and stops the others
 * (SIGTERM, then SIGKILL after a delay). Signals are taken synchronously with
 * sigtimedwait, so the parent sleeps instead of polling. */
static int supervise(pid_t *pids, int n, const sigset_t *set, const char *prog) {
  int status = 0, running = n;
  int64_t kill_at = 0;
  while (running > 0) {
    int sig;
    if (kill_at) {
      int64_t left = kill_at - now_ms();
      if (left <= 0) {
        signal_all(pids, n, SIGKILL);
        kill_at = 0;
        continue;
      }
      struct timespec ts = {left / 1000, (left % 1000) * 1000000};
      sig = sigtimedwait(set, NULL, &ts);
    } else {
      sig = sigwaitinfo(set, NULL);
    }
    if (sig < 0) continue; /* EAGAIN (deadline) or EINTR */
    if (sig != SIGCHLD) {
      signal_all(pids, n, sig); /* forward ^C, kill, hang-up */
      if (!status) status = 128 + sig;
      if (!kill_at) kill_at = now_ms() + PERF_KILL_DELAY_MS;
      continue;
    }
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
      int rank = -1;
      for (int i = 0; i < n; i++)
        if (pids[i] == pid) rank = i, pids[i] = 0;
      if (rank < 0) continue;
      running--;
      int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (code && !status) {
        status = code;
        /* Wrong results are counted with an allreduce, so every rank knows and is
         * finishing on its own: let them. Any other failure may leave peers waiting. */
        if (running > 0 && code != PERF_EXIT_WRONG) {
          if (WIFEXITED(st))
            fprintf(stderr, "%s: rank %d exited with status %d; stopping the other ranks\n", prog, rank, code);
          else
            fprintf(stderr, "%s: rank %d was killed by signal %d; stopping the other ranks\n", prog, rank,
                    WTERMSIG(st));
          signal_all(pids, n, SIGTERM);
          kill_at = now_ms() + PERF_KILL_DELAY_MS;
        }
      }
    }
  }
  return status;
}

int perf_spawn_local(int nranks, char **argv) {
  const char *prog = program_invocation_short_name;
  char addr[64], job[64];
  int listen_fd = open_rendezvous(addr, sizeof addr);
  if (listen_fd < 0) {
    fprintf(stderr, "%s: cannot listen on 127.0.0.1 for the ranks to meet: %s\n", prog, strerror(errno));
    return PERF_EXIT_FAILURE;
  }
  unsigned long long r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r = (unsigned long long)now_ms();
  snprintf(job, sizeof job, "perf-%ld-%016llx", (long)getpid(), r);

  /* Children must be reapable even if we were started with SIGCHLD ignored. */
  signal(SIGCHLD, SIG_DFL);
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  sigprocmask(SIG_BLOCK, &set, &old);
  fflush(NULL); /* nothing buffered may be written twice by the children */

  pid_t *pids = calloc((size_t)nranks, sizeof *pids);
  if (!pids) {
    fprintf(stderr, "%s: out of memory\n", prog);
    close(listen_fd);
    return PERF_EXIT_FAILURE;
  }
  pid_t self = getpid();
  int status = -1;
  for (int i = 0; i < nranks; i++) {
    pid_t pid = fork();
    if (pid == 0) become_rank(i, nranks, listen_fd, addr, job, self, &old, argv);
    if (pid < 0) {
      fprintf(stderr, "%s: cannot start rank %d: %s\n", prog, i, strerror(errno));
      signal_all(pids, i, SIGKILL);
      status = PERF_EXIT_FAILURE;
      break;
    }
    pids[i] = pid;
  }
  close(listen_fd);
  int s = supervise(pids, nranks, &set, prog);
  if (status < 0) status = s;
  free(pids);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return status;
}

/* Whether a launcher collie_comm_init_env understands started us (its list, in API.md). */
static int under_launcher(void) {
  static const char *vars[] = {"COLLIE_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i]) && *getenv(vars[i])) return 1;
  return 0;
}

collie_result_t perf_comm_init(collie_comm_t **comm) {
  if (under_launcher()) return collie_comm_init_env(comm);
  /* Started alone without -p: a job of one rank, as nccl-tests does with one GPU. */
  collie_unique_id_t id;
  collie_result_t res = collie_get_unique_id(&id);
  return res ? res : collie_comm_init_rank(comm, 1, id, 0);
}

_Noreturn void perf_die(collie_comm_t *comm, int rank, const char *what, collie_result_t res) {
  const char *detail = collie_get_last_error(comm);
  if (!detail || !*detail) detail = collie_get_last_error(NULL);
  char who[32] = "";
  if (rank >= 0) snprintf(who, sizeof who, " rank %d", rank);
  fprintf(stderr, "%s%s: %s failed: %s%s%s\n", program_invocation_short_name, who, what,
          collie_get_error_string(res), detail && *detail ? ": " : "", detail ? detail : "");
  fflush(stdout);
  if (comm) collie_comm_abort(comm);
  exit(PERF_EXIT_FAILURE);
}
