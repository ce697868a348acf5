/* The command line: a superset of nccl-tests' and hccl-test's flags, so that commands
 * written for either work here. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "perf.h"

void perf_usage(FILE *f, const char *prog) {
  fprintf(f,
          "usage: %s [options]\n"
          "Times one collie collective over a range of sizes and checks its results, like\n"
          "nccl-tests and hccl-test. Run it under collie-run, mpirun, mpiexec or srun, or alone\n"
          "with -p N to start N local ranks.\n"
          "  -b, --minbytes SIZE     smallest size (default 32M; K, M, G suffixes)\n"
          "  -e, --maxbytes SIZE     largest size (default 32M)\n"
          "  -f, --stepfactor F      multiply the size by F between rows (default 2)\n"
          "  -i, --stepbytes SIZE    add SIZE between rows instead of multiplying\n"
          "  -n, --iters N           timed iterations per row (default 20)\n"
          "  -w, --warmup_iters N    untimed iterations before them (default 5)\n"
          "  -c, --check N           correctness checks per row (default 1; 0: none)\n"
          "  -d, --datatype T        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16\n"
          "                          float32 float64, a comma list, or all (default float32)\n"
          "  -o, --op OP             sum prod max min avg, a comma list, or all (default sum)\n"
          "  -r, --root R            root rank, or all (default 0)\n"
          "  -p, --procs N           start N local ranks (no launcher needed)\n"
          "  -a, --average 0-3       time reported: 0 rank 0, 1 mean, 2 min, 3 max over ranks\n"
          "                          (default 1)\n"
          "  -z, --nonblocking 0/1   1: i-variants and collie_wait instead of blocking calls\n"
          "  -m, --agg_iters N       operations started between two clock readings (default 1)\n"
          "  -R, --register 0/1      1: send and receive buffers from collie_mem_alloc, which\n"
          "                          the other local ranks read directly (default 0: malloc)\n"
          "  -T, --timeout SEC       an operation making no progress for SEC fails\n"
          "                          (sets COLLIE_EXEC_TIMEOUT)\n"
          "  -J, --json FILE         also write the results as JSON to FILE\n"
          "  -A, --algo SPEC         force algorithms, as COLLIE_ALGO (e.g. ring)\n"
          "      --format FMT        nccl (default), hccl or csv\n"
          "  -h, --help              this text\n"
          "Exit status: 0 ok, 1 wrong results, 2 bad usage, 3 a collie call or a rank failed.\n",
          prog);
}

/* "64M" -> 67108864. Accepts K, M, G (powers of 1024) and an optional trailing B. */
static int parse_size(const char *s, size_t *out) {
  if (!s || !*s || *s == '-') return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end || (shift && v > (ULLONG_MAX >> shift))) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  if (!s || !*s) return -1;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* nccl-tests' names for the types it shares with collie. */
static const struct { const char *alias; collie_datatype_t dt; } dt_aliases[] = {
    {"char", COLLIE_INT8}, {"int", COLLIE_INT32}, {"half", COLLIE_FLOAT16}, {"fp16", COLLIE_FLOAT16},
    {"bf16", COLLIE_BFLOAT16}, {"float", COLLIE_FLOAT32}, {"fp32", COLLIE_FLOAT32},
    {"double", COLLIE_FLOAT64}, {"fp64", COLLIE_FLOAT64},
};

static int parse_dtype(const char *s, collie_datatype_t *out) {
  for (int d = 0; d < COLLIE_NUM_DATATYPES; d++)
    if (!strcasecmp(s, collie_datatype_name((collie_datatype_t)d))) return *out = (collie_datatype_t)d, 0;
  for (size_t i = 0; i < sizeof dt_aliases / sizeof dt_aliases[0]; i++)
    if (!strcasecmp(s, dt_aliases[i].alias)) return *out = dt_aliases[i].dt, 0;
  return -1;
}

static int parse_op(const char *s, collie_redop_t *out) {
  for (int o = 0; o < COLLIE_NUM_OPS; o++)
    if (!strcasecmp(s, collie_redop_name((collie_redop_t)o))) return *out = (collie_redop_t)o, 0;
  return -1;
}

/* "all" or a comma list; duplicates are kept, as the user asked for them. */
static int parse_dtypes(const char *s, perf_opts_t *o) {
  o->ndtypes = 0;
  if (!strcasecmp(s, "all")) {
    for (int d = 0; d < COLLIE_NUM_DATATYPES; d++) o->dtypes[o->ndtypes++] = (collie_datatype_t)d;
    return 0;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (o->ndtypes == COLLIE_NUM_DATATYPES || parse_dtype(t, &o->dtypes[o->ndtypes++])) return -1;
  return o->ndtypes ? 0 : -1;
}

static int parse_ops(const char *s, perf_opts_t *o) {
  o->nops = 0;
  if (!strcasecmp(s, "all")) {
    for (int p = 0; p < COLLIE_NUM_OPS; p++) o->ops[o->nops++] = (collie_redop_t)p;
    return 0;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
    if (o->nops == COLLIE_NUM_OPS || parse_op(t, &o->ops[o->nops++])) return -1;
  return o->nops ? 0 : -1;
}

static void set_defaults(perf_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->min_bytes = o->max_bytes = 32u << 20; /* nccl-tests' default */
  o->step_factor = 2;
  o->step_bytes = 1u << 20;
  o->iters = 20;
  o->warmup = 5;
  o->check_iters = 1;
  o->agg = 1;
  o->average = PERF_AVG_MEAN;
  o->dtypes[0] = COLLIE_FLOAT32;
  o->ndtypes = 1;
  o->ops[0] = COLLIE_SUM;
  o->nops = 1;
  o->format = PERF_FMT_NCCL;
}

enum { OPT_FORMAT = 256 };

int perf_parse_args(int argc, char **argv, const char *prog, perf_opts_t *o) {
  static const struct option longs[] = {
      {"minbytes", required_argument, 0, 'b'},  {"maxbytes", required_argument, 0, 'e'},
      {"stepfactor", required_argument, 0, 'f'}, {"stepbytes", required_argument, 0, 'i'},
      {"iters", required_argument, 0, 'n'},     {"warmup_iters", required_argument, 0, 'w'},
      {"check", required_argument, 0, 'c'},     {"datatype", required_argument, 0, 'd'},
      {"op", required_argument, 0, 'o'},        {"root", required_argument, 0, 'r'},
      {"procs", required_argument, 0, 'p'},     {"average", required_argument, 0, 'a'},
      {"nonblocking", required_argument, 0, 'z'}, {"agg_iters", required_argument, 0, 'm'},
      {"timeout", required_argument, 0, 'T'},   {"json", required_argument, 0, 'J'},
      {"algo", required_argument, 0, 'A'},      {"format", required_argument, 0, OPT_FORMAT},
      {"register", required_argument, 0, 'R'},
      {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
  set_defaults(o);
  optind = 1;
  int c, v;
  const char *bad = NULL;
  while (!bad && (c = getopt_long(argc, argv, "b:e:f:i:n:w:c:d:o:r:p:a:z:m:T:J:A:R:h", longs, NULL)) != -1) {
    switch (c) {
      case 'b': if (parse_size(optarg, &o->min_bytes)) bad = "-b wants a size such as 8, 1K or 64M"; break;
      case 'e': if (parse_size(optarg, &o->max_bytes)) bad = "-e wants a size such as 8, 1K or 64M"; break;
      case 'f': {
        char *end;
        o->step_factor = strtod(optarg, &end);
        if (*end || end == optarg || !(o->step_factor > 1.0) || o->step_factor > 1e6) bad = "-f wants a factor > 1";
        break;
      }
      case 'i':
        if (parse_size(optarg, &o->step_bytes) || !o->step_bytes) bad = "-i wants a size > 0";
        o->step_factor = 0; /* the last of -f and -i wins */
        break;
      case 'n': if (parse_int(optarg, 1, INT_MAX, &o->iters)) bad = "-n wants a number >= 1"; break;
      case 'w': if (parse_int(optarg, 0, INT_MAX, &o->warmup)) bad = "-w wants a number >= 0"; break;
      case 'c': if (parse_int(optarg, 0, INT_MAX, &o->check_iters)) bad = "-c wants a number >= 0"; break;
      case 'd': if (parse_dtypes(optarg, o)) bad = "-d wants a datatype, a comma list of them, or all"; break;
      case 'o': if (parse_ops(optarg, o)) bad = "-o wants sum, prod, max, min, avg, a comma list, or all"; break;
      case 'r':
        if (!strcasecmp(optarg, "all")) o->root = PERF_ROOT_ALL;
        else if (parse_int(optarg, 0, INT_MAX, &o->root)) bad = "-r wants a rank or all";
        break;
      case 'p': if (parse_int(optarg, 1, 4096, &o->local_ranks)) bad = "-p wants a number of ranks, 1 to 4096"; break;
      case 'a': if (parse_int(optarg, 0, 3, &v)) bad = "-a wants 0, 1, 2 or 3"; else o->average = (perf_avg_t)v; break;
      case 'z': if (parse_int(optarg, 0, 1, &o->nonblocking)) bad = "-z wants 0 or 1"; break;
      case 'R': if (parse_int(optarg, 0, 1, &o->registered)) bad = "-R wants 0 or 1"; break;
      case 'm': if (parse_int(optarg, 1, 1 << 20, &o->agg)) bad = "-m wants a number >= 1"; break;
      case 'T': {
        char *end;
        o->timeout_s = strtod(optarg, &end);
        if (*end || end == optarg || !(o->timeout_s > 0) || o->timeout_s > 1e7) bad = "-T wants seconds > 0";
        break;
      }
      case 'J': o->json_path = optarg; break;
      case 'A': o->algo = optarg; if (!*optarg) bad = "-A wants an algorithm spec"; break;
      case OPT_FORMAT:
        if (!strcmp(optarg, "nccl")) o->format = PERF_FMT_NCCL;
        else if (!strcmp(optarg, "hccl")) o->format = PERF_FMT_HCCL;
        else if (!strcmp(optarg, "csv")) o->format = PERF_FMT_CSV;
        else bad = "--format wants nccl, hccl or csv";
        break;
      case 'h': perf_usage(stdout, prog); return 0;
      default: bad = ""; break; /* getopt has said what was wrong */
    }
  }
  if (!bad && optind < argc) {
    fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
    bad = "";
  }
  if (!bad && o->min_bytes > o->max_bytes) bad = "-b is larger than -e";
  if (bad) {
    if (*bad) fprintf(stderr, "%s: %s\n", prog, bad);
    perf_usage(stderr, prog);
    return PERF_EXIT_USAGE;
  }
  return -1;
}
