/* The driver every *_perf binary runs: parse flags, start or join the ranks, describe the
 * job, then one row per datatype x op x root x size, in nccl-tests' order. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/hostid.h"
#include "perf.h"

/* Flags that are library settings become environment variables before the first collie
 * call, which is when the library reads them; -p children inherit them. */
static void apply_env(const perf_opts_t *o) {
  if (o->timeout_s > 0) {
    char s[32];
    snprintf(s, sizeof s, "%.0f", ceil(o->timeout_s));
    setenv("COLLIE_EXEC_TIMEOUT", s, 1);
  }
  if (o->algo) setenv("COLLIE_ALGO", o->algo, 1);
}

/* Host name and pid of every rank, for the header, and the host identity the library
 * uses to count hosts (COLLIE_HOST_ID if set, else host name, boot id and /dev/shm): ranks
 * of one host name in different containers or COLLIE_HOST_ID groups talk over TCP. */
static void gather_info(collie_comm_t *comm, int rank, perf_info_t *in) {
  struct perf_rank_info me = {0};
  me.pid = (int32_t)getpid();
  if (gethostname(me.host, sizeof me.host - 1)) snprintf(me.host, sizeof me.host, "unknown");
  collie_host_id(me.host_id, sizeof me.host_id);
  in->ranks = calloc((size_t)in->nranks, sizeof *in->ranks);
  if (!in->ranks) perf_die(comm, rank, "allocating the rank table", COLLIE_ERR_SYSTEM);
  collie_result_t res = collie_allgather(&me, in->ranks, sizeof me, COLLIE_UINT8, comm);
  if (res) perf_die(comm, rank, "collie_allgather of the host names", res);
  in->hosts = 0;
  for (int r = 0; r < in->nranks; r++) {
    int seen = 0;
    for (int q = 0; q < r && !seen; q++) seen = !strcmp(in->ranks[q].host_id, in->ranks[r].host_id);
    in->hosts += !seen;
  }
  int v = 0;
  collie_get_version(&v);
  snprintf(in->version, sizeof in->version, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  /* What the library will use: shared memory within one host unless told otherwise. */
  const char *t = getenv("COLLIE_TRANSPORT");
  in->transport = t && *t && strcmp(t, "auto") ? t : in->hosts > 1 ? "shm+tcp" : "shm";
  const char *a = in->opts->algo ? in->opts->algo : getenv("COLLIE_ALGO");
  in->algo = a && *a ? a : "auto";
}

static size_t next_size(const perf_opts_t *o, size_t s) {
  size_t n = o->step_factor > 1 ? (size_t)((double)s * o->step_factor) : s + o->step_bytes;
  return n > s ? n : s + 1; /* always progress, even from 0 */
}

typedef struct {
  perf_row_t *v;
  size_t n, cap;
} rows_t;

static perf_row_t *rows_push(rows_t *rows, collie_comm_t *comm, int rank) {
  if (rows->n == rows->cap) {
    size_t cap = rows->cap ? 2 * rows->cap : 64;
    perf_row_t *v = realloc(rows->v, cap * sizeof *v);
    if (!v) perf_die(comm, rank, "allocating the result table", COLLIE_ERR_SYSTEM);
    rows->v = v;
    rows->cap = cap;
  }
  return &rows->v[rows->n++];
}

int perf_main(int argc, char **argv, const perf_coll_t *coll) {
  perf_info_t in = {.coll = coll};
  snprintf(in.prog, sizeof in.prog, "%s_perf", coll->name);
  perf_opts_t o;
  int rc = perf_parse_args(argc, argv, in.prog, &o);
  if (rc >= 0) return rc;
  in.opts = &o;
  apply_env(&o);
  if (o.local_ranks > 0 && !perf_is_spawned_child()) {
    if (coll->rooted && o.root != PERF_ROOT_ALL && o.root >= o.local_ranks) {
      fprintf(stderr, "%s: -r %d, but -p starts only %d ranks\n", in.prog, o.root, o.local_ranks);
      return PERF_EXIT_USAGE;
    }
    return perf_spawn_local(o.local_ranks, argv);
  }

  collie_comm_t *comm = NULL;
  collie_result_t res = perf_comm_init(&comm);
  if (res) perf_die(NULL, -1, "creating the communicator", res);
  int rank, nranks;
  collie_comm_rank(comm, &rank);
  collie_comm_size(comm, &nranks);
  in.nranks = nranks;
  if (coll->rooted && o.root != PERF_ROOT_ALL && o.root >= nranks) {
    if (rank == 0) fprintf(stderr, "%s: -r %d, but there are only %d ranks\n", in.prog, o.root, nranks);
    collie_comm_destroy(comm);
    return PERF_EXIT_USAGE;
  }
  gather_info(comm, rank, &in);
  FILE *out = stdout;
  if (rank == 0) perf_print_header(out, &in);

  perf_ctx_t c = {.comm = comm, .rank = rank, .nranks = nranks};
  size_t *arrays = calloc(4 * (size_t)nranks, sizeof *arrays);
  if (!arrays) perf_die(comm, rank, "allocating count arrays", COLLIE_ERR_SYSTEM);
  c.counts = arrays, c.displs = arrays + nranks, c.counts2 = arrays + 2 * nranks, c.displs2 = arrays + 3 * nranks;
  int nops = coll->reduces ? o.nops : 1;
  int root_lo = !coll->rooted ? -1 : o.root == PERF_ROOT_ALL ? 0 : o.root;
  int root_hi = !coll->rooted ? -1 : o.root == PERF_ROOT_ALL ? nranks - 1 : o.root;
  perf_bufs_t bufs = {0};
  rows_t rows = {0};
  long long wrong = 0;
  double bw_sum = 0;
  int bw_n = 0;
  for (int d = 0; d < o.ndtypes; d++) {
    for (int p = 0; p < nops; p++) {
      for (int root = root_lo; root <= root_hi; root++) {
        for (size_t size = o.min_bytes; size <= o.max_bytes; size = next_size(&o, size)) {
          c.dt = o.dtypes[d];
          c.esz = collie_datatype_size(c.dt);
          c.op = coll->reduces ? (int)o.ops[p] : PERF_OP_NONE;
          c.root = root;
          coll->setup(&c, size);
          perf_row_t *row = rows_push(&rows, comm, rank);
          perf_bench_row(coll, &o, &c, &bufs, row);
          for (int ip = 0; ip < 2; ip++) {
            if (row->m[ip].wrong > 0) wrong += row->m[ip].wrong;
            bw_sum += row->m[ip].busbw;
            bw_n++;
          }
          if (rank == 0) perf_print_row(out, &in, row);
        }
      }
    }
  }
  double avg_bw = bw_n ? bw_sum / bw_n : 0;
  int status = wrong ? PERF_EXIT_WRONG : PERF_EXIT_OK;
  if (rank == 0) {
    perf_print_footer(out, &in, wrong, avg_bw);
    if (o.json_path && perf_write_json(o.json_path, &in, rows.v, rows.n, wrong, avg_bw)) {
      fprintf(stderr, "%s: cannot write %s: %s\n", in.prog, o.json_path, strerror(errno));
      if (!status) status = PERF_EXIT_FAILURE;
    }
  }
  perf_bufs_free(&bufs);
  free(rows.v);
  free(arrays);
  free(in.ranks);
  res = collie_comm_destroy(comm);
  if (res && !status) {
    fprintf(stderr, "rank %d: collie_comm_destroy failed: %s\n", rank, collie_get_error_string(res));
    status = PERF_EXIT_FAILURE;
  }
  return status;
}
