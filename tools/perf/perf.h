/* collie perf tests: the frame shared by every *_perf binary.
 *
 * A binary is one small file that describes its collective (perf_coll_t: how a size in
 * bytes becomes counts, how to start the call, what the result must be) and calls
 * perf_main. Everything else lives in the frame, one purpose per file:
 *   perf_args.c    command line (nccl-tests' and hccl-test's flags) and usage
 *   perf_launch.c  -p N: fork+exec N local ranks and supervise them; communicator set-up
 *   perf_data.c    input values and expected results that are exact in every datatype
 *   perf_bench.c   one table row: buffers, warm-up, timed loop, correctness checks
 *   perf_output.c  nccl-tests, hccl-test and CSV layouts
 *   perf_json.c    -J: the results as JSON
 *   perf_main.c    the driver: sizes x datatypes x ops x roots
 * Only the public API (collie.h) is used, so these tools also show how to use it. */
#ifndef COLLIE_PERF_H
#define COLLIE_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collie.h"

/* Exit statuses: what scripts and tests look at. */
#define PERF_EXIT_OK 0
#define PERF_EXIT_WRONG 1   /* a correctness check found wrong elements */
#define PERF_EXIT_USAGE 2   /* bad command line */
#define PERF_EXIT_FAILURE 3 /* a collie call failed, or a rank could not start */

/* The "op" of collectives that reduce nothing (printed "none"). */
#define PERF_OP_NONE (-1)
/* -r all */
#define PERF_ROOT_ALL (-1)

typedef enum { PERF_FMT_NCCL, PERF_FMT_HCCL, PERF_FMT_CSV } perf_format_t;
typedef enum { PERF_AVG_RANK0, PERF_AVG_MEAN, PERF_AVG_MIN, PERF_AVG_MAX } perf_avg_t;

typedef struct {
  size_t min_bytes, max_bytes;
  double step_factor; /* > 1: multiply; otherwise add step_bytes */
  size_t step_bytes;
  int iters, warmup, check_iters, agg;
  int nonblocking; /* -z 1: i-variants and collie_wait */
  int registered;  /* -R 1: send and receive buffers from collie_mem_alloc */
  perf_avg_t average;
  collie_datatype_t dtypes[COLLIE_NUM_DATATYPES];
  int ndtypes;
  collie_redop_t ops[COLLIE_NUM_OPS];
  int nops;
  int root;         /* PERF_ROOT_ALL or a rank */
  int local_ranks;  /* -p; 0 when not given */
  double timeout_s; /* -T; 0 when not given */
  const char *json_path, *algo;
  perf_format_t format;
} perf_opts_t;

/* Fills *o from argv. Returns -1 when the test should run, else the status to exit
 * with at once (0 after -h, PERF_EXIT_USAGE after a bad flag; usage already printed). */
int perf_parse_args(int argc, char **argv, const char *prog, perf_opts_t *o);
void perf_usage(FILE *f, const char *prog);

/* Requests of the nonblocking mode (-z 1), waited for together. */
typedef struct {
  collie_request_t **r;
  int n, cap;
} perf_reqs_t;
collie_result_t perf_reqs_add(perf_reqs_t *q, collie_request_t *req);

/* One table row's parameters on this rank. setup() fills the counts; everything in
 * elements unless named bytes. */
typedef struct {
  collie_comm_t *comm;
  int rank, nranks;
  collie_datatype_t dt;
  size_t esz;
  int op; /* a collie_redop_t, or PERF_OP_NONE */
  int root;
  uint64_t seed; /* of the data being generated (perf_data.c) */

  size_t count;                   /* the "count" column (nccl-tests' per-call count) */
  size_t send_elems, recv_elems;  /* extents of this rank's send and receive buffers */
  size_t send_ip_off, recv_ip_off; /* in place: where send and recv start inside recvbuf */
  size_t check_elems;             /* result elements this rank verifies (0: it has none) */
  size_t size_bytes;              /* the "size" column */
  double bw_bytes;                /* the bytes algbw divides by the time */
  size_t *counts, *displs, *counts2, *displs2; /* nranks each, for the v-variants */
} perf_ctx_t;

typedef struct {
  const char *name; /* "all_reduce": the binary is name + "_perf" */
  int reduces;      /* takes a reduction op */
  int rooted;       /* takes a root */
  double (*bus_factor)(int nranks);
  void (*setup)(perf_ctx_t *c, size_t bytes);
  /* Starts one operation. q == NULL: blocking call; otherwise i-variants whose requests
   * go into q. */
  collie_result_t (*start)(perf_ctx_t *c, const void *send, void *recv, perf_reqs_t *q);
  /* Writes the check_elems elements this rank must find at its recv pointer, given
   * that every rank r filled its send buffer with perf_gen(c, r, 0, send_elems). */
  void (*expect)(perf_ctx_t *c, void *out);
} perf_coll_t;

int perf_main(int argc, char **argv, const perf_coll_t *coll);

/* One measurement: out-of-place or in-place. */
typedef struct {
  double time_us, algbw, busbw; /* GB/s = 1e9 bytes per second */
  long long wrong;              /* wrong elements over all ranks and checks; -1: not checked */
} perf_meas_t;

/* One table row. */
typedef struct {
  size_t size, count;
  collie_datatype_t dt;
  int op, root;
  perf_meas_t m[2]; /* [0] out of place, [1] in place */
} perf_row_t;

/* Buffers, grown as the sizes grow and reused from row to row. */
typedef struct {
  void *send, *recv, *expect;
  size_t cap, expect_cap; /* bytes */
  int registered;         /* send and recv came from collie_mem_alloc */
} perf_bufs_t;

/* perf_bench.c: measures and checks both placements of the row c describes. */
void perf_bench_row(const perf_coll_t *coll, const perf_opts_t *o, perf_ctx_t *c, perf_bufs_t *b, perf_row_t *row);
void perf_bufs_free(perf_bufs_t *b);

/* What the header says about the job (gathered from every rank by perf_main). */
typedef struct {
  const perf_coll_t *coll;
  const perf_opts_t *opts;
  char prog[64], version[32];
  const char *transport, *algo;
  int nranks, hosts;
  struct perf_rank_info { int32_t pid; char host[60]; char host_id[128]; } *ranks; /* host_id: the library's */
} perf_info_t;

/* perf_output.c: what rank 0 prints, in the layout of o->format. */
void perf_print_header(FILE *f, const perf_info_t *info);
void perf_print_row(FILE *f, const perf_info_t *info, const perf_row_t *row);
void perf_print_footer(FILE *f, const perf_info_t *info, long long wrong, double avg_busbw);
const char *perf_op_name(int op);
/* perf_json.c: returns 0, or -1 with errno set. */
int perf_write_json(const char *path, const perf_info_t *info, const perf_row_t *rows, size_t nrows,
                    long long wrong, double avg_busbw);

/* Bus bandwidth factors (nccl-tests' PERFORMANCE.md). */
double perf_factor_one(int nranks);
double perf_factor_gather(int nranks);    /* (n-1)/n */
double perf_factor_allreduce(int nranks); /* 2(n-1)/n */

/* perf_data.c: element idx of rank's input, for n consecutive idx from first. */
void perf_gen(const perf_ctx_t *c, int rank, size_t first, size_t n, void *out);
/* The reduction over all ranks of perf_gen(c, r, first + k), as collie computes it. */
void perf_gen_reduced(const perf_ctx_t *c, size_t first, size_t n, void *out);
/* A well-mixed 64-bit hash, for seeds. */
uint64_t perf_mix(uint64_t x);
/* Number of elements of got that differ (bitwise) from want. */
size_t perf_count_wrong(const void *got, const void *want, size_t n, size_t esz);
static inline void *perf_at(const perf_ctx_t *c, void *base, size_t elems) {
  return (char *)base + elems * c->esz;
}
/* v-variants: splits total into nranks uneven parts (rank k's share grows with k, and
 * rotates with shift), in counts[] with contiguous displs[]. */
void perf_uneven_split(size_t total, int nranks, int shift, size_t *counts, size_t *displs);

/* perf_launch.c */
int perf_spawn_local(int nranks, char **argv); /* returns the status to exit with */
int perf_is_spawned_child(void);
collie_result_t perf_comm_init(collie_comm_t **comm);

/* A collie call failed: say so on stderr, abort the communicator so that peers fail
 * fast instead of waiting for their timeout, and exit. */
_Noreturn void perf_die(collie_comm_t *comm, int rank, const char *what, collie_result_t res);

#endif
