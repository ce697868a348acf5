/* collie-run: start N ranks of a program on this host, wire up their rendezvous, and
 * wait for them. See usage() in collie-run-options.c for the contract, collie-run.h for
 * how the files divide the work. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collie-run.h"

/* If collie-run was started with 0, 1 or 2 closed, the next open would land there and
 * a rank's dup2 onto stdout could clobber, say, the rendezvous socket. */
static void ensure_std_fds(void) {
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) open("/dev/null", O_RDWR);
}

/* Signals are read from a signalfd instead of handlers, so all the work happens in the
 * main loop and nothing unsafe runs in signal context. They are blocked first, so one
 * that arrives while the ranks are being started waits for the loop. */
static int setup_signals(struct cr_job *job) {
  sigaction(SIGPIPE, NULL, &job->child_sigpipe);
  sigprocmask(SIG_BLOCK, NULL, &job->child_sigmask);
  /* Writing the tagged output of a rank to a closed pipe must not kill collie-run and
   * with it, through PDEATHSIG, every rank. */
  signal(SIGPIPE, SIG_IGN);
  /* An inherited SIG_IGN for SIGCHLD would make the kernel reap the ranks for us and
   * lose their exit status. */
  signal(SIGCHLD, SIG_DFL);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) fprintf(stderr, "collie-run: cannot create a signalfd: %s.\n", strerror(errno));
  return fd;
}

/* Starts every rank. On failure kills and reaps those already started: a job with a
 * rank missing could only hang. Returns 0 or -1. */
static int start_ranks(struct cr_job *job) {
  const struct cr_options *opt = job->opt;
  for (int i = 0; i < opt->nranks; i++) {
    struct cr_rank *r = &job->ranks[i];
    int out_w = -1, err_w = -1;
    if (opt->tag_output && (cr_stream_open(&r->out, STDOUT_FILENO, &out_w) < 0 ||
                            cr_stream_open(&r->err, STDERR_FILENO, &err_w) < 0)) {
      if (out_w >= 0) close(out_w);
      r->pid = -1;
    } else {
      r->pid = cr_spawn_rank(job, i, out_w, err_w);
      /* The parent keeps only the read ends, so it sees EOF when the rank is gone. */
      if (out_w >= 0) close(out_w);
      if (err_w >= 0) close(err_w);
    }
    if (r->pid < 0) {
      for (int k = 0; k < i; k++) cr_signal_rank(&job->ranks[k], SIGKILL);
      for (int k = 0; k < i; k++)
        while (waitpid(job->ranks[k].pid, NULL, 0) < 0 && errno == EINTR) {
        }
      for (int k = 0; k <= i; k++) {
        cr_stream_close(&job->ranks[k].out, k);
        cr_stream_close(&job->ranks[k].err, k);
      }
      return -1;
    }
    r->running = true;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct cr_options opt;
  int rc = cr_parse_options(argc, argv, &opt);
  if (rc >= 0) return rc;

  ensure_std_fds();
  struct cr_job job = {.opt = &opt, .listen_fd = -1, .parent_pid = getpid()};
  cr_make_job_id(job.job_id, sizeof job.job_id);
  job.ranks = calloc((size_t)opt.nranks, sizeof *job.ranks);
  if (!job.ranks) {
    fprintf(stderr, "collie-run: out of memory.\n");
    return CR_EXIT_LAUNCHER;
  }
  for (int i = 0; i < opt.nranks; i++) job.ranks[i].out.fd = job.ranks[i].err.fd = -1;

  int sigfd = setup_signals(&job);
  if (sigfd < 0 || cr_open_rendezvous(&job) < 0) return CR_EXIT_LAUNCHER;

  fflush(NULL); /* nothing buffered may be written twice by the children */
  int started = start_ranks(&job);
  /* Rank 0 has its own copy now. Closing ours means a connect fails fast with
   * ECONNREFUSED once rank 0 is gone, instead of hanging in our backlog. */
  close(job.listen_fd);
  job.listen_fd = -1;

  rc = started < 0 ? CR_EXIT_LAUNCHER : cr_supervise(&job, sigfd);
  close(sigfd);
  free(job.ranks);
  return rc;
}
