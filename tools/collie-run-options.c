/* collie-run: command line parsing and usage text. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collie-run.h"

/* Large enough for any real job, small enough that milliseconds fit in an int64. */
#define CR_MAX_SECONDS 1e7

static void usage(FILE *f) {
  fprintf(f,
          "Usage: collie-run -n N [--timeout S] [--grace S] [--tag-output] [--bind] [--] PROGRAM [ARGS...]\n"
          "\n"
          "Start N ranks of PROGRAM on this host and wait for all of them.\n"
          "\n"
          "Options:\n"
          "  -n N          number of ranks to start, 1 to %d (required).\n"
          "  --timeout S   if the job is still running after S seconds (decimals allowed),\n"
          "                send SIGTERM to every rank, SIGKILL 2 s later, and exit with 124.\n"
          "  --grace S     once a rank has failed, give the others S seconds to finish on\n"
          "                their own before SIGTERM (then SIGKILL 2 s later). Default 30,\n"
          "                or the value of COLLIE_RUN_GRACE.\n"
          "  --tag-output  prefix every line the ranks write to stdout and stderr with\n"
          "                \"[RANK] \". Without it the ranks write to collie-run's own\n"
          "                stdout and stderr directly.\n"
          "  --bind        bind rank i to the i-th CPU of collie-run's own affinity mask\n"
          "                (round robin when ranks outnumber its CPUs), as mpirun\n"
          "                --bind-to core does. Without it the scheduler places the ranks.\n"
          "  -h, --help    print this help and exit.\n"
          "  --            end of options: what follows is the program and its arguments.\n"
          "\n"
          "Each rank runs in its own process group with these variables set:\n"
          "  COLLIE_RANK, COLLIE_NRANKS, COLLIE_LOCAL_RANK, COLLIE_LOCAL_SIZE,\n"
          "  COLLIE_ROOT_ADDR (127.0.0.1:PORT, a port picked by the kernel) and COLLIE_JOB_ID.\n"
          "Rank 0 also inherits the socket listening on that port; its fd number is in\n"
          "COLLIE_ROOT_LISTEN_FD. Only rank 0 keeps stdin, and only when it is not a terminal.\n"
          "\n"
          "SIGINT and SIGTERM sent to collie-run are forwarded to every rank; a second\n"
          "SIGINT kills the ranks with SIGKILL. If collie-run itself is killed, so are the ranks.\n"
          "\n"
          "Exit status: 0 when every rank exits with 0; otherwise the status of the first rank\n"
          "to fail (128+N when signal N killed it; a rank killed by a signal up to 0.2 s after\n"
          "another exited with an error counts as the first); 124 after --timeout; 127 when\n"
          "PROGRAM cannot be found; 2 for a usage error; 1 when collie-run itself cannot start\n"
          "the job.\n",
          CR_MAX_RANKS);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("collie-run: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\n\n", stderr);
  usage(stderr);
  return CR_EXIT_USAGE;
}

/* Seconds as a plain decimal number; rejects trailing junk, NaN, infinities and
 * negatives, so that a typo never silently means "no timeout". */
static bool parse_seconds(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v < 0 || v > CR_MAX_SECONDS) return false;
  *out = v;
  return true;
}

static bool parse_nranks(const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 1 || v > CR_MAX_RANKS) return false;
  *out = (int)v;
  return true;
}

int cr_parse_options(int argc, char **argv, struct cr_options *opt) {
  enum { OPT_TIMEOUT = 256, OPT_GRACE, OPT_TAG, OPT_BIND };
  static const struct option longopts[] = {
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"grace", required_argument, NULL, OPT_GRACE},
      {"tag-output", no_argument, NULL, OPT_TAG},
      {"bind", no_argument, NULL, OPT_BIND},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  memset(opt, 0, sizeof *opt);
  opt->grace_s = CR_DEFAULT_GRACE_S;

  const char *env_grace = getenv("COLLIE_RUN_GRACE");
  if (env_grace && *env_grace && !parse_seconds(env_grace, &opt->grace_s))
    return usage_error("COLLIE_RUN_GRACE='%s' is not a number of seconds.", env_grace);

  /* "+" stops at the first non-option, so the program's own flags are left alone;
   * ":" makes a missing value come back as ':' rather than '?'. */
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+:n:h", longopts, NULL)) != -1) {
    const char *arg = optarg;
    switch (c) {
    case 'n':
      if (!parse_nranks(arg, &opt->nranks))
        return usage_error("-n needs a whole number of ranks from 1 to %d, not '%s'.", CR_MAX_RANKS, arg);
      break;
    case OPT_TIMEOUT:
      if (!parse_seconds(arg, &opt->timeout_s) || opt->timeout_s <= 0)
        return usage_error("--timeout needs a positive number of seconds, not '%s'.", arg);
      break;
    case OPT_GRACE:
      if (!parse_seconds(arg, &opt->grace_s))
        return usage_error("--grace needs a number of seconds, not '%s'.", arg);
      break;
    case OPT_TAG:
      opt->tag_output = true;
      break;
    case OPT_BIND:
      opt->bind = true;
      break;
    case 'h':
      usage(stdout);
      return 0;
    case ':':
      return usage_error("option '%s' needs a value.", argv[optind - 1]);
    default:
      /* getopt reports short options through optopt and long ones only via argv. */
      if (optopt && optopt < 256) {
        char name[3] = {'-', (char)optopt, 0};
        return usage_error("unknown option '%s'.", name);
      }
      return usage_error("unknown option '%s'.", argv[optind - 1]);
    }
  }
  if (opt->nranks == 0) return usage_error("the number of ranks (-n N) is required.");
  if (optind >= argc) return usage_error("no program to run was given.");
  opt->argv = argv + optind;
  return -1;
}
