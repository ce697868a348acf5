/* collie-run: the wait loop. One poll() on a signalfd (SIGCHLD, SIGINT, SIGTERM) and
 * the --tag-output pipes, with the next deadline (timeout, end of grace, SIGKILL
 * escalation) as its timeout: nothing spins, which matters with 8 ranks on 2 cores. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collie-run.h"

#define NO_DEADLINE INT64_MAX

struct supervisor {
  struct cr_job *job;
  int nranks;
  int running;
  int64_t timeout_at, grace_at, kill_at; /* CLOCK_MONOTONIC ms, or NO_DEADLINE */
  bool timed_out;
  int sigints;
  int failed_rank; /* the first rank to fail, -1 while none has */
  int failed_code;
  /* A rank that exited with an error, not yet judged the first failure (rank_exited) */
  int tentative_rank, tentative_status;
  int64_t settle_at;
};

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t seconds_to_ms(double s) { return (int64_t)(s * 1000.0 + 0.5); }

/* The rank leads its own process group: signal the group so that children it started
 * (a shell's commands, for instance) get the signal too. */
void cr_signal_rank(const struct cr_rank *r, int sig) {
  if (kill(-r->pid, sig) < 0 && errno == ESRCH) kill(r->pid, sig);
}

static void signal_running(struct supervisor *sv, int sig) {
  for (int i = 0; i < sv->nranks; i++)
    if (sv->job->ranks[i].running) cr_signal_rank(&sv->job->ranks[i], sig);
}

/* SIGTERM now, SIGKILL after CR_KILL_DELAY_MS for whoever ignores it. */
static void terminate_running(struct supervisor *sv, int64_t now) {
  signal_running(sv, SIGTERM);
  if (sv->kill_at == NO_DEADLINE) sv->kill_at = now + CR_KILL_DELAY_MS;
}

static void report_failure(const struct cr_rank *r, int rank, int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    fprintf(stderr, "collie-run: rank %d (pid %ld) was killed by signal %d (%s)%s\n", rank,
            (long)r->pid, sig, strsignal(sig), WCOREDUMP(status) ? " and dumped core" : "");
  } else {
    fprintf(stderr, "collie-run: rank %d (pid %ld) exited with status %d\n", rank, (long)r->pid,
            WEXITSTATUS(status));
  }
}

static int exit_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

/* The job's first failure: reported, and the others get the grace to report theirs. */
static void judge(struct supervisor *sv, int rank, int status, int64_t now) {
  sv->failed_rank = rank;
  sv->failed_code = exit_code(status);
  sv->tentative_rank = -1;
  sv->settle_at = NO_DEADLINE;
  report_failure(&sv->job->ranks[rank], rank, status);
  /* The library reports the failure on the surviving ranks; let them do so. */
  if (sv->running > 0) sv->grace_at = now + seconds_to_ms(sv->job->opt->grace_s);
}

static void rank_exited(struct supervisor *sv, int rank, int status, int64_t now) {
  struct cr_rank *r = &sv->job->ranks[rank];
  r->running = false;
  sv->running--;
  /* Whatever the rank left behind in its process group is an orphan of the job. The
   * kernel does not hand out the id again while the group has members, and an empty
   * group just gives ESRCH, so this cannot hit an unrelated process. */
  kill(-r->pid, SIGKILL);

  /* After a timeout the ranks die because we killed them: not failures of their own. */
  if (exit_code(status) == 0 || sv->failed_rank >= 0 || sv->timed_out) return;
  /* A rank killed by a signal is taken as the cause. One that exits with an error may be
   * reacting to another's death that the kernel has not finished yet: a killed process
   * closes its sockets before it becomes a zombie, and its peers' library can fail and
   * exit first. So such an exit waits CR_SETTLE_MS for a death by signal to blame. */
  if (WIFSIGNALED(status)) {
    judge(sv, rank, status, now);
  } else if (sv->tentative_rank < 0) {
    sv->tentative_rank = rank;
    sv->tentative_status = status;
    sv->settle_at = now + CR_SETTLE_MS;
  }
}

/* Exits are judged in the order waitpid returns them (lowest pid first when several wait):
 * the settle in rank_exited, not this order, decides whom to blame. */
static void reap(struct supervisor *sv) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return; /* 0: the others still run; -1 (ECHILD): none left */
    for (int i = 0; i < sv->nranks; i++)
      if (sv->job->ranks[i].running && sv->job->ranks[i].pid == pid) {
        rank_exited(sv, i, status, now_ms());
        break;
      }
  }
}

static void handle_signals(struct supervisor *sv, int sigfd) {
  struct signalfd_siginfo si;
  while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
    switch (si.ssi_signo) {
    case SIGCHLD:
      reap(sv);
      break;
    case SIGINT:
      /* The second Ctrl-C means "now": ranks stuck in cleanup get no more chances. */
      signal_running(sv, ++sv->sigints >= 2 ? SIGKILL : SIGINT);
      break;
    case SIGTERM:
      signal_running(sv, SIGTERM);
      break;
    }
  }
}

static void check_deadlines(struct supervisor *sv, int64_t now) {
  const struct cr_options *opt = sv->job->opt;
  if (now >= sv->settle_at) judge(sv, sv->tentative_rank, sv->tentative_status, now);
  if (now >= sv->timeout_at) {
    sv->timeout_at = NO_DEADLINE;
    sv->grace_at = NO_DEADLINE; /* the timeout already covers the end of the grace */
    sv->timed_out = true;
    /* from now on the exits are ours, not failures (rank_exited): an error exit still
     * settling is dropped too */
    sv->tentative_rank = -1;
    sv->settle_at = NO_DEADLINE;
    fprintf(stderr, "collie-run: timeout after %g s; killing %d %s still running\n",
            opt->timeout_s, sv->running, sv->running == 1 ? "rank" : "ranks");
    terminate_running(sv, now);
  }
  if (now >= sv->grace_at) {
    sv->grace_at = NO_DEADLINE;
    fprintf(stderr, "collie-run: %d %s still running %g s after rank %d failed; terminating %s\n",
            sv->running, sv->running == 1 ? "rank" : "ranks", opt->grace_s, sv->failed_rank,
            sv->running == 1 ? "it" : "them");
    terminate_running(sv, now);
  }
  if (now >= sv->kill_at) {
    sv->kill_at = NO_DEADLINE;
    signal_running(sv, SIGKILL);
  }
}

static int poll_timeout(const struct supervisor *sv, int64_t now) {
  int64_t next = sv->timeout_at;
  if (sv->settle_at < next) next = sv->settle_at;
  if (sv->grace_at < next) next = sv->grace_at;
  if (sv->kill_at < next) next = sv->kill_at;
  if (next == NO_DEADLINE) return -1;
  if (next <= now) return 0;
  return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

/* Last resort when the loop itself cannot go on: kill everything and just reap. */
static void kill_and_reap(struct supervisor *sv) {
  signal_running(sv, SIGKILL);
  while (sv->running > 0) {
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return;
    for (int i = 0; i < sv->nranks; i++)
      if (sv->job->ranks[i].running && sv->job->ranks[i].pid == pid) rank_exited(sv, i, status, 0);
  }
}

/* Waits for every rank and returns collie-run's exit status. */
int cr_supervise(struct cr_job *job, int sigfd) {
  const struct cr_options *opt = job->opt;
  struct supervisor sv = {
      .job = job, .nranks = opt->nranks, .running = opt->nranks, .timeout_at = NO_DEADLINE,
      .grace_at = NO_DEADLINE, .kill_at = NO_DEADLINE, .failed_rank = -1, .tentative_rank = -1,
      .settle_at = NO_DEADLINE,
  };
  if (opt->timeout_s > 0) sv.timeout_at = now_ms() + seconds_to_ms(opt->timeout_s);

  /* The signalfd, then each open relay pipe with the rank it belongs to. */
  struct pollfd pfds[1 + 2 * CR_MAX_RANKS];
  struct { struct cr_stream *s; int rank; } owner[1 + 2 * CR_MAX_RANKS];

  while (sv.running > 0) {
    int n = 0;
    pfds[n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
    for (int i = 0; i < sv.nranks; i++) {
      struct cr_stream *two[2] = {&job->ranks[i].out, &job->ranks[i].err};
      for (int k = 0; k < 2; k++)
        if (two[k]->fd >= 0) {
          owner[n].s = two[k];
          owner[n].rank = i;
          pfds[n++] = (struct pollfd){.fd = two[k]->fd, .events = POLLIN};
        }
    }
    int ready = poll(pfds, (nfds_t)n, poll_timeout(&sv, now_ms()));
    if (ready < 0 && errno != EINTR) {
      fprintf(stderr, "collie-run: cannot wait for the ranks (poll: %s); killing them.\n",
              strerror(errno));
      kill_and_reap(&sv);
      break;
    }
    for (int k = 1; ready > 0 && k < n; k++)
      if (pfds[k].revents) cr_stream_pump(owner[k].s, owner[k].rank);
    if (ready > 0 && pfds[0].revents) handle_signals(&sv, sigfd);
    check_deadlines(&sv, now_ms());
  }

  for (int i = 0; i < sv.nranks; i++) {
    cr_stream_drain(&job->ranks[i].out, i);
    cr_stream_drain(&job->ranks[i].err, i);
  }
  if (sv.tentative_rank >= 0) judge(&sv, sv.tentative_rank, sv.tentative_status, now_ms());
  if (sv.timed_out) return CR_EXIT_TIMEOUT;
  return sv.failed_rank >= 0 ? sv.failed_code : 0;
}
