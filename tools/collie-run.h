/* collie-run: the local launcher. This header holds what its source files share:
 *   collie-run.c           main: set up the job, start the ranks, hand over to the supervisor
 *   collie-run-options.c   command line and usage
 *   collie-run-spawn.c     rendezvous socket, job id, and the child side of fork
 *   collie-run-supervise.c the wait loop: signals, deadlines, reaping, exit status
 *   collie-run-relay.c     --tag-output: line relaying with a "[rank] " prefix
 * It is a standalone program using only libc, so that it builds even when the library
 * does not. */
#ifndef COLLIE_RUN_H
#define COLLIE_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bounded so that the per-rank pipes of --tag-output (4 fds each) fit ordinary fd limits. */
#define CR_MAX_RANKS 1024
/* After SIGTERM, ranks get this long to exit before SIGKILL. */
#define CR_KILL_DELAY_MS 2000
/* How long a rank's error exit waits for another rank's death by signal to blame instead
 * (collie-run-supervise.c): the killed process's peers can exit before it is reaped. */
#define CR_SETTLE_MS 200
#define CR_DEFAULT_GRACE_S 30.0
/* Launcher failures (cannot create a socket, cannot fork) that are no rank's fault. */
#define CR_EXIT_LAUNCHER 1
#define CR_EXIT_USAGE 2
#define CR_EXIT_TIMEOUT 124

struct cr_options {
  int nranks;
  double timeout_s; /* 0: no timeout */
  double grace_s;
  bool tag_output;
  bool bind; /* --bind: each rank on one CPU of collie-run's own mask, round robin */
  char **argv; /* the program and its arguments, NULL-terminated (points into main's argv) */
};

/* Fills *opt from the command line and COLLIE_RUN_GRACE. Returns -1 when the job should
 * run, otherwise the exit status to leave with at once (0 after --help, 2 on bad usage). */
int cr_parse_options(int argc, char **argv, struct cr_options *opt);

/* One output stream of a rank (stdout or stderr) while --tag-output relays it. */
struct cr_stream {
  int fd;        /* read end of the rank's pipe; -1 once closed */
  int dest;      /* where lines go: 1 or 2 */
  size_t len;    /* bytes waiting in buf for their newline */
  char *buf;
};

struct cr_rank {
  pid_t pid;
  bool running; /* false once reaped */
  struct cr_stream out, err;
};

/* What every rank is started with, fixed before the first fork. */
struct cr_job {
  const struct cr_options *opt;
  int listen_fd; /* rendezvous socket for rank 0; -1 once the parent closed its copy */
  char root_addr[32];
  char job_id[64];
  pid_t parent_pid;
  sigset_t child_sigmask;         /* the mask collie-run was started with */
  struct sigaction child_sigpipe; /* the SIGPIPE disposition it was started with */
  struct cr_rank *ranks;
};

/* collie-run-spawn.c */
int cr_open_rendezvous(struct cr_job *job);
void cr_make_job_id(char *buf, size_t size);
pid_t cr_spawn_rank(const struct cr_job *job, int rank, int out_w, int err_w);

/* collie-run-relay.c */
int cr_stream_open(struct cr_stream *s, int dest, int *write_end);
bool cr_stream_pump(struct cr_stream *s, int rank); /* false once the stream is closed */
/* After the rank exited: relays what is left without waiting, then closes. */
void cr_stream_drain(struct cr_stream *s, int rank);
void cr_stream_close(struct cr_stream *s, int rank);

/* collie-run-supervise.c */
int cr_supervise(struct cr_job *job, int sigfd);
void cr_signal_rank(const struct cr_rank *r, int sig);

#endif
