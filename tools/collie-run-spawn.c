/* collie-run: what every rank is started with (rendezvous socket, job id) and the child
 * side of fork, up to exec. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collie-run.h"
#include "core/cpus.h" /* collie_nth_cpu, inline: nothing of the library is linked */

/* The listening socket is created here, before any rank exists, and handed to rank 0 as
 * an open fd: nobody has to pick a port, and no rank can try to connect before it is
 * listening, so there is no race between choosing the port and binding it. */
int cr_open_rendezvous(struct cr_job *job) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fprintf(stderr, "collie-run: cannot create the rendezvous socket: %s.\n", strerror(errno));
    return -1;
  }
  /* Rank 0 closes it with its first communicator; a later one binds the port again, which
   * the first one's connections in TIME_WAIT forbid unless they, cloned from this socket,
   * allow reuse. */
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
    fprintf(stderr, "collie-run: cannot listen on 127.0.0.1 for the rendezvous: %s.\n",
            strerror(errno));
    close(fd);
    return -1;
  }
  job->listen_fd = fd;
  snprintf(job->root_addr, sizeof job->root_addr, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
  return 0;
}

/* Unique across runs on this host (pid) and across hosts and pid reuse (random part). */
void cr_make_job_id(char *buf, size_t size) {
  unsigned long long r;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r = ((unsigned long long)ts.tv_sec << 30) ^ (unsigned long long)ts.tv_nsec;
  }
  snprintf(buf, size, "run-%ld-%016llx", (long)getpid(), r);
}

static void set_env_int(const char *name, int value) {
  char s[16];
  snprintf(s, sizeof s, "%d", value);
  setenv(name, s, 1);
}

/* --bind: the rank-th CPU (round robin) of the mask the child inherited from collie-run. */
static void bind_rank(int rank) {
  cpu_set_t mask, one;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
    fprintf(stderr, "collie-run: --bind: cannot read the CPUs collie-run may use: %s.\n", strerror(errno));
    _exit(CR_EXIT_LAUNCHER);
  }
  const int cpu = collie_nth_cpu(&mask, rank);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    fprintf(stderr, "collie-run: --bind: cannot bind rank %d to CPU %d: %s.\n", rank, cpu, strerror(errno));
    _exit(CR_EXIT_LAUNCHER);
  }
}

/* Runs in the child between fork and exec. collie-run is single-threaded, so the
 * child may use setenv and stdio here. Never returns. */
static _Noreturn void become_rank(const struct cr_job *job, int rank, int out_w, int err_w) {
  const struct cr_options *opt = job->opt;

  /* Its own process group, so that a signal to the rank also reaches whatever it
   * started, and a terminal's Ctrl-C reaches only collie-run, which forwards it once. */
  setpgid(0, 0);
  /* If collie-run dies, even by SIGKILL, the rank dies too. The parent may have died
   * before prctl took effect; then the rank would be orphaned, so give up now. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != job->parent_pid) _exit(CR_EXIT_LAUNCHER);

  if (out_w >= 0 && (dup2(out_w, STDOUT_FILENO) < 0 || dup2(err_w, STDERR_FILENO) < 0)) _exit(CR_EXIT_LAUNCHER);
  /* Ranks live in background process groups: reading the terminal would stop them
   * with SIGTTIN. A piped stdin is meant for one reader, so it goes to rank 0 alone. */
  if (rank != 0 || isatty(STDIN_FILENO)) {
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) dup2(null, STDIN_FILENO);
  }

  if (opt->bind) bind_rank(rank);
  set_env_int("COLLIE_RANK", rank);
  set_env_int("COLLIE_NRANKS", opt->nranks);
  set_env_int("COLLIE_LOCAL_RANK", rank);
  set_env_int("COLLIE_LOCAL_SIZE", opt->nranks);
  setenv("COLLIE_ROOT_ADDR", job->root_addr, 1);
  setenv("COLLIE_JOB_ID", job->job_id, 1);
  if (rank == 0) {
    /* The socket was made close-on-exec so that no other child can inherit it by
     * accident; rank 0 alone clears the flag. */
    if (fcntl(job->listen_fd, F_SETFD, 0) < 0) _exit(CR_EXIT_LAUNCHER);
    set_env_int("COLLIE_ROOT_LISTEN_FD", job->listen_fd);
  } else {
    close(job->listen_fd);
    unsetenv("COLLIE_ROOT_LISTEN_FD"); /* may be inherited from an enclosing job */
  }

  /* collie-run blocks signals for its signalfd and ignores SIGPIPE; the program should
   * start with the mask and dispositions collie-run itself was given... */
  sigaction(SIGPIPE, &job->child_sigpipe, NULL);
  /* Except SIGINT and SIGTERM, which collie-run forwards on purpose: a shell starts a
   * background job of a script with SIGINT ignored, and the ranks then dropped the
   * SIGINT that collie-run passed on. */
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  sigprocmask(SIG_SETMASK, &job->child_sigmask, NULL);

  execvp(opt->argv[0], opt->argv);
  int err = errno;
  fprintf(stderr, "collie-run: cannot execute '%s': %s\n", opt->argv[0], strerror(err));
  /* The shell's convention: 127 when not found, 126 when found but not runnable. */
  _exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

/* Returns the child's pid, or -1 with a message printed. */
pid_t cr_spawn_rank(const struct cr_job *job, int rank, int out_w, int err_w) {
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "collie-run: cannot start rank %d: %s.\n", rank, strerror(errno));
    return -1;
  }
  if (pid == 0) become_rank(job, rank, out_w, err_w);
  /* Also from the parent, so the group exists before the parent might signal it. It
   * fails harmlessly (EACCES) if the child has already called exec. */
  setpgid(pid, pid);
  return pid;
}
