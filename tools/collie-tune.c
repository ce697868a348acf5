/* collie-tune: measures the cost model's figures on this machine and writes a tuning file
 * for COLLIE_TUNING_FILE (docs/tuning.md).
 *
 *   alpha, beta (shm)  2 local ranks over shared memory: one-way time of an 8-byte
 *                      ping-pong (alpha, 20th percentile of the round trips) and of a
 *                      16 MiB one (beta = extra time per byte, 20th percentile)
 *   alpha, beta (tcp)  the same with COLLIE_TRANSPORT=tcp (over loopback, or the interface
 *                      COLLIE_SOCKET_IFNAME names)
 *   oversub            twice as many ranks as cores: the mean 8-byte ping-pong time of
 *                      every pair at once over that of one pair alone (rounds of both,
 *                      alternated): how much alpha grows per extra rank per core
 *   gamma, delta       the float32 sum kernel and memcpy on 16 MiB vectors (like the large
 *                      ping-pong, so that beta and gamma are measured alike), in this process
 *
 * The ranks are forked by collie-tune itself and meet like the perf tools' -p ranks
 * (a loopback socket inherited by rank 0, COLLIE_RANK & co. in the environment); they use
 * only the public API. On a shared machine other work only ever adds time, so the figures
 * are low percentiles or best batches, not means (except the oversubscription penalty,
 * which is about waiting).
 *
 * Exit status: 0 written; 1 a measurement failed; 2 bad command line. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collie.h"
#include "core/params.h"
#include "reduce/reduce.h"
#include "tune/tune.h"

#define SMALL_BYTES 8
#define LARGE_BYTES (16u << 20)
#define KERNEL_BYTES LARGE_BYTES /* beta and gamma measured alike */

static int quiet;
static int batches = 7;
static int timeout_s = 60;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  if (quiet) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("collie-tune: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: collie-tune [-o FILE] [-b N] [--no-tcp] [--no-oversub] [-T SEC] [-q] [-h]\n"
          "  Measures alpha and beta over shared memory and TCP, the oversubscription\n"
          "  penalty and the reduction (gamma) and copy (delta) speeds on this machine, and\n"
          "  writes them as a tuning file; load it with COLLIE_TUNING_FILE=FILE.\n"
          "  -o, --output FILE   where to write (default: standard output)\n"
          "  -b, --batches N     effort: N kernel batches (the best counts), 100 N small and\n"
          "                      2 N large round trips (a low percentile counts); default 7\n"
          "  --no-tcp            skip TCP (the file keeps the default tcp.* figures)\n"
          "  --no-oversub        skip the oversubscription measurement\n"
          "  -T, --timeout SEC   give up a measurement after SEC seconds (default 60)\n"
          "  -q, --quiet         no progress on standard error\n"
          "  -h, --help          this help\n"
          "Exit status: 0 written; 1 a measurement failed; 2 bad command line.\n");
}

/* ---- reduction and copy speed, in this process ---------------------------------------- */

static double best_of(int n, double *v) {
  double b = INFINITY;
  for (int i = 0; i < n; i++)
    if (v[i] < b) b = v[i];
  return b;
}

/* Microseconds per byte of dst = a + b (float32) and of memcpy, best of the batches. */
static int measure_kernels(double *gamma, double *delta) {
  const size_t count = KERNEL_BYTES / sizeof(float);
  float *a = malloc(KERNEL_BYTES), *b = malloc(KERNEL_BYTES), *d = malloc(KERNEL_BYTES);
  if (!a || !b || !d) {
    free(a), free(b), free(d);
    return -1;
  }
  for (size_t i = 0; i < count; i++) a[i] = (float)i, b[i] = 1.0f, d[i] = 0;
  collie_reduce_fn sum = collie_reduce_kernel(COLLIE_FLOAT32, COLLIE_SUM);
  const int reps = 2;
  double tg[32], td[32];
  for (int k = 0; k < batches && k < 32; k++) {
    double t0 = now_us();
    for (int r = 0; r < reps; r++) sum(d, a, d, count);
    double t1 = now_us();
    for (int r = 0; r < reps; r++) memcpy(r & 1 ? a : d, r & 1 ? d : b, KERNEL_BYTES);
    double t2 = now_us();
    tg[k] = (t1 - t0) / reps / KERNEL_BYTES;
    td[k] = (t2 - t1) / reps / KERNEL_BYTES;
  }
  int n = batches < 32 ? batches : 32;
  *gamma = best_of(n, tg);
  *delta = best_of(n, td);
  volatile float sink = d[count / 2] + a[1];
  (void)sink;
  free(a), free(b), free(d);
  return 0;
}

/* ---- ping-pong between forked ranks ---------------------------------------------------- */

typedef struct {
  double small_us, large_us; /* one-way times, a low percentile: alpha; beta */
  double oversub_ratio;      /* oversubscribed job: mean one-way time, all pairs / one pair */
} pingpong_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One-way times of `bytes` between this rank and rank^1, round trip by round trip, after
 * a warm-up: *low gets the 20th percentile (the machine when it is not busy with other
 * work: a shared machine's noise only ever adds time), *mean the mean. */
static collie_result_t pingpong(collie_comm_t *comm, int rank, char *buf, size_t bytes, int iters, double *low,
                                double *mean) {
  const int peer = rank ^ 1;
  const bool first = (rank & 1) == 0;
  collie_result_t r;
  double *t = malloc(sizeof(double) * (size_t)iters), sum = 0;
  if (!t) return COLLIE_ERR_SYSTEM;
  for (int i = -iters / 10 - 1; i < iters; i++) { /* negative i: warm-up */
    double t0 = now_us();
    if (first) {
      if ((r = collie_send(buf, bytes, COLLIE_UINT8, peer, comm)) ||
          (r = collie_recv(buf, bytes, COLLIE_UINT8, peer, comm)))
        goto out;
    } else {
      if ((r = collie_recv(buf, bytes, COLLIE_UINT8, peer, comm)) ||
          (r = collie_send(buf, bytes, COLLIE_UINT8, peer, comm)))
        goto out;
    }
    if (i >= 0) sum += t[i] = (now_us() - t0) / 2;
  }
  qsort(t, (size_t)iters, sizeof(double), cmp_double);
  *low = t[iters / 5];
  if (mean) *mean = sum / iters;
out:
  free(t);
  return r;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Ping-pong for about `us` microseconds (the even rank decides, the first byte of each
 * message says whether another round follows); *mean gets the mean one-way time. Time, not
 * a count: sharing cores shows only over scheduler time slices (milliseconds). */
static collie_result_t pingpong_for(collie_comm_t *comm, int rank, char *buf, double us, double *mean) {
  const int peer = rank ^ 1;
  collie_result_t r;
  long rounds = 0;
  double t0 = now_us();
  if ((rank & 1) == 0) {
    for (bool more = true; more; rounds++) {
      more = now_us() - t0 < us;
      buf[0] = more;
      if ((r = collie_send(buf, SMALL_BYTES, COLLIE_UINT8, peer, comm)) ||
          (r = collie_recv(buf, SMALL_BYTES, COLLIE_UINT8, peer, comm)))
        return r;
    }
  } else {
    for (bool more = true; more; rounds++) {
      if ((r = collie_recv(buf, SMALL_BYTES, COLLIE_UINT8, peer, comm))) return r;
      more = buf[0];
      if ((r = collie_send(buf, SMALL_BYTES, COLLIE_UINT8, peer, comm))) return r;
    }
  }
  *mean = (now_us() - t0) / rounds / 2;
  return COLLIE_SUCCESS;
}

/* The oversubscribed job: rounds of "ranks 0 and 1 alone" and "every pair at once",
 * 20 ms each, alternated so that both see the same background load; the median over the
 * rounds of the ratio of rank 0's mean one-way times. The idle ranks wait in a barrier (asleep after
 * COLLIE_SPIN + COLLIE_YIELD). */
static collie_result_t oversub_rounds(collie_comm_t *comm, int rank, int nranks, char *buf, double *ratio) {
  double alone[32], all[32];
  int n = batches < 32 ? batches : 32;
  collie_result_t r = COLLIE_SUCCESS;
  for (int k = 0; k < n && !r; k++) {
    if (rank < 2) r = pingpong_for(comm, rank, buf, 20000, &alone[k]);
    if (!r) r = collie_barrier(comm);
    if (!r && (rank ^ 1) < nranks) r = pingpong_for(comm, rank, buf, 20000, &all[k]);
    if (!r) r = collie_barrier(comm);
  }
  if (!r) {
    for (int k = 0; k < n; k++) all[k] /= alone[k]; /* neighbours in time see the same load */
    *ratio = median(all, n);
  }
  return r;
}

/* One rank of a job: init from the environment; 2 ranks: ping-pong small and large
 * messages; more: the oversubscription rounds. Rank 0 writes the results to fd. */
static _Noreturn void rank_main(int rank, int nranks, int fd) {
  collie_comm_t *comm = NULL;
  collie_result_t r = collie_comm_init_env(&comm);
  const char *what = "collie_comm_init_env";
  pingpong_t pp = {0, 0, 0};
  char *buf = NULL;
  if (!r) {
    buf = calloc(1, LARGE_BYTES);
    what = "ping-pong";
    if (!buf) r = COLLIE_ERR_SYSTEM;
  }
  if (!r && nranks == 2) {
    double mean;
    r = pingpong(comm, rank, buf, SMALL_BYTES, 100 * batches, &pp.small_us, &mean);
    if (!r) r = pingpong(comm, rank, buf, LARGE_BYTES, 2 * batches, &pp.large_us, NULL);
  } else if (!r) {
    r = oversub_rounds(comm, rank, nranks, buf, &pp.oversub_ratio);
  }
  if (!r) {
    what = "collie_barrier";
    r = collie_barrier(comm);
  }
  if (r) {
    const char *e = collie_get_last_error(comm);
    if (!e || !*e) e = collie_get_last_error(NULL);
    fprintf(stderr, "collie-tune: rank %d: %s failed: %s: %s\n", rank, what, collie_get_error_string(r), e ? e : "");
    if (comm) collie_comm_abort(comm);
    _exit(1);
  }
  if (rank == 0 && write(fd, &pp, sizeof pp) != (ssize_t)sizeof pp) _exit(1);
  collie_comm_destroy(comm);
  free(buf);
  _exit(0);
}

static void set_env_int(const char *name, long v) {
  char s[24];
  snprintf(s, sizeof s, "%ld", v);
  setenv(name, s, 1);
}

/* Forks nranks ranks (transport "tcp" or NULL for automatic), waits for them with a
 * deadline, and returns rank 0's times. */
static int run_job(int nranks, const char *transport, pingpong_t *out, const char *label) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 1024) < 0 ||
      getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
    fprintf(stderr, "collie-tune: %s: cannot listen on 127.0.0.1: %s\n", label, strerror(errno));
    if (lfd >= 0) close(lfd);
    return -1;
  }
  int pfd[2];
  if (pipe(pfd) != 0) {
    fprintf(stderr, "collie-tune: %s: pipe: %s\n", label, strerror(errno));
    close(lfd);
    return -1;
  }
  char addr[64], job[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
  snprintf(job, sizeof job, "collie-tune-%ld-%s-%d", (long)getpid(), transport ? transport : "shm", nranks);
  fflush(NULL);
  pid_t parent = getpid(), pids[64] = {0};
  int started = 0, failed = 0;
  for (int i = 0; i < nranks; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "collie-tune: %s: fork: %s\n", label, strerror(errno));
      failed = 1;
      break;
    }
    if (pid == 0) {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
      close(pfd[0]);
      set_env_int("COLLIE_RANK", i);
      set_env_int("COLLIE_NRANKS", nranks);
      set_env_int("COLLIE_LOCAL_RANK", i);
      set_env_int("COLLIE_LOCAL_SIZE", nranks);
      setenv("COLLIE_ROOT_ADDR", addr, 1);
      setenv("COLLIE_JOB_ID", job, 1);
      if (transport) setenv("COLLIE_TRANSPORT", transport, 1);
      else unsetenv("COLLIE_TRANSPORT");
      if (i == 0) set_env_int("COLLIE_ROOT_LISTEN_FD", lfd);
      else {
        close(lfd);
        unsetenv("COLLIE_ROOT_LISTEN_FD");
      }
      collie_params_reload(); /* nothing the parent read may stay cached */
      rank_main(i, nranks, pfd[1]);
    }
    pids[started++] = pid;
  }
  close(lfd);
  close(pfd[1]);
  /* Wait for every rank, killing all of them at the deadline or at the first failure. */
  double deadline = now_us() + timeout_s * 1e6;
  int running = started;
  while (running > 0) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (int i = 0; i < started; i++)
        if (pids[i] == pid) {
          pids[i] = 0;
          running--;
          if (!WIFEXITED(st) || WEXITSTATUS(st)) failed = 1;
        }
      continue;
    }
    if (failed || now_us() > deadline) {
      if (!failed) fprintf(stderr, "collie-tune: %s: no result after %d s; stopping its ranks\n", label, timeout_s);
      failed = 1;
      for (int i = 0; i < started; i++)
        if (pids[i] > 0) kill(pids[i], SIGKILL);
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  pingpong_t pp;
  ssize_t n = read(pfd[0], &pp, sizeof pp);
  close(pfd[0]);
  if (failed || n != (ssize_t)sizeof pp) {
    if (!failed) fprintf(stderr, "collie-tune: %s: rank 0 reported nothing\n", label);
    return -1;
  }
  *out = pp;
  return 0;
}

/* alpha: the small message's one-way time; beta: what each further byte adds. */
static void fit(const pingpong_t *pp, double *alpha, double *beta) {
  *alpha = pp->small_us;
  double b = (pp->large_us - pp->small_us) / (double)(LARGE_BYTES - SMALL_BYTES);
  *beta = b > 0 ? b : pp->large_us / LARGE_BYTES;
}

static double gbps(double us_per_byte) { return us_per_byte > 0 ? 1e-3 / us_per_byte : 0; }

int main(int argc, char **argv) {
  const char *out_path = NULL;
  bool do_tcp = true, do_oversub = true;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      quiet = 1;
    } else if (!strcmp(a, "--no-tcp")) {
      do_tcp = false;
    } else if (!strcmp(a, "--no-oversub")) {
      do_oversub = false;
    } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && val) {
      out_path = val, i++;
    } else if ((!strcmp(a, "-b") || !strcmp(a, "--batches")) && val) {
      char *end;
      long v = strtol(val, &end, 10);
      if (*end || v < 1 || v > 32) {
        fprintf(stderr, "collie-tune: --batches takes a number from 1 to 32, not '%s'\n", val);
        return 2;
      }
      batches = (int)v, i++;
    } else if ((!strcmp(a, "-T") || !strcmp(a, "--timeout")) && val) {
      char *end;
      long v = strtol(val, &end, 10);
      if (*end || v < 1 || v > 3600) {
        fprintf(stderr, "collie-tune: --timeout takes seconds from 1 to 3600, not '%s'\n", val);
        return 2;
      }
      timeout_s = (int)v, i++;
    } else {
      fprintf(stderr, "collie-tune: unknown option or missing value: '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  /* The ranks measure the transports, not a tuning file (which may be the one being
   * rewritten) nor forced settings. */
  unsetenv("COLLIE_TUNING_FILE");
  unsetenv("COLLIE_ALGO");
  unsetenv("COLLIE_PROTO");
  signal(SIGCHLD, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  double t_start = now_us();

  collie_tune_table_t t;
  collie_tune_table_default(&t);
  long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpus < 1) ncpus = 1;

  if (measure_kernels(&t.gamma_us_per_byte, &t.delta_us_per_byte) != 0) {
    fprintf(stderr, "collie-tune: out of memory for the kernel vectors\n");
    return 1;
  }
  note("gamma %.3g us/B (%.2f GB/s float32 sum, %s kernels), delta %.3g us/B (%.2f GB/s memcpy)",
       t.gamma_us_per_byte, gbps(t.gamma_us_per_byte), collie_reduce_isa(), t.delta_us_per_byte,
       gbps(t.delta_us_per_byte));

  pingpong_t pp;
  if (run_job(2, NULL, &pp, "shm ping-pong") != 0) return 1;
  fit(&pp, &t.link[COLLIE_LINK_SHM].alpha_us, &t.link[COLLIE_LINK_SHM].beta_us_per_byte);
  note("shm: alpha %.3g us, beta %.3g us/B (%.2f GB/s)", t.link[COLLIE_LINK_SHM].alpha_us,
       t.link[COLLIE_LINK_SHM].beta_us_per_byte, gbps(t.link[COLLIE_LINK_SHM].beta_us_per_byte));

  if (do_tcp) {
    if (run_job(2, "tcp", &pp, "tcp ping-pong") != 0) return 1;
    fit(&pp, &t.link[COLLIE_LINK_TCP].alpha_us, &t.link[COLLIE_LINK_TCP].beta_us_per_byte);
    note("tcp: alpha %.3g us, beta %.3g us/B (%.2f GB/s)", t.link[COLLIE_LINK_TCP].alpha_us,
         t.link[COLLIE_LINK_TCP].beta_us_per_byte, gbps(t.link[COLLIE_LINK_TCP].beta_us_per_byte));
  }

  int over_ranks = (int)(2 * ncpus);
  if (do_oversub && over_ranks <= 16) {
    if (run_job(over_ranks, NULL, &pp, "oversubscribed ping-pong") != 0) return 1;
    /* ranks per core is 2 here: alpha x (1 + s (2 - 1)) */
    double s = pp.oversub_ratio - 1;
    if (!(s >= 0)) s = 0;
    if (s > 20) s = 20;
    t.oversub_alpha_scale = s;
    note("%d ranks on %ld cores: every pair at once takes %.3g times as long as one pair alone: "
         "oversub.alpha_scale %.3g",
         over_ranks, ncpus, pp.oversub_ratio, s);
  } else if (do_oversub) {
    note("%ld cores: skipping the oversubscription measurement (it would take %d ranks)", ncpus, over_ranks);
  }

  /* Write to a temporary file next to the target, then rename: a communicator created
   * meanwhile reads the old file or the new one, never half of one. */
  char tmp[4096];
  FILE *f = stdout;
  if (out_path && strcmp(out_path, "-")) {
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_path, (long)getpid());
    f = fopen(tmp, "w");
    if (!f) {
      fprintf(stderr, "collie-tune: cannot write %s: %s\n", tmp, strerror(errno));
      return 1;
    }
  }
  char host[256] = "?", when[64] = "?";
  gethostname(host, sizeof host - 1);
  time_t now = time(NULL);
  struct tm tm;
  if (localtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  int v = 0;
  collie_get_version(&v);
  fprintf(f,
          "# collie tuning file: the cost model's figures for this machine.\n"
          "# Written by collie-tune (collie %d.%d.%d) on %s at %s: %ld cores online, %s reduction kernels.\n"
          "# Load it with COLLIE_TUNING_FILE=<this file>; every rank must load the same figures.\n"
          "# One 'key value' per line; keys left out keep collie's defaults (docs/tuning.md).\n"
          "# alpha: us per message (one-way 8-byte ping-pong); beta: us per byte (16 MiB ping-pong);\n"
          "# gamma: us per reduced byte (float32 sum, 16 MiB); delta: us per byte copied (memcpy, 16 MiB);\n"
          "# oversub.alpha_scale: alpha grows by this times (ranks per core - 1).\n"
          "# Per algorithm, e.g.: allreduce.ring.alpha_scale 1.3 (also beta_scale, gamma_scale).\n",
          v / 10000, v / 100 % 100, v % 100, host, when, ncpus, collie_reduce_isa());
  collie_tune_table_write(f, &t);
  if (f != stdout) {
    if (fclose(f) != 0 || rename(tmp, out_path) != 0) {
      fprintf(stderr, "collie-tune: cannot write %s: %s\n", out_path, strerror(errno));
      unlink(tmp);
      return 1;
    }
    note("wrote %s in %.1f s", out_path, (now_us() - t_start) / 1e6);
  } else {
    fflush(stdout);
  }
  return 0;
}
