/* mpi_coll_bench: times MPI collectives the way collie's perf suite (tools/perf) times
 * collie's, so the two can be set side by side (bench/compare/run.py runs both).
 *
 *   mpirun -n N mpi_coll_bench -c allreduce -b 8 -e 64M -f 2 -n 20 -w 5 [-B SEC] [-l LABEL]
 *
 * Same definitions as docs/perf.md (nccl-tests'):
 *   collective      size                      count               bus factor
 *   allreduce       the buffer                its elements        2(n-1)/n
 *   allgather       the gathered total        one rank's part     (n-1)/n
 *   reduce_scatter  the whole input           one rank's part     (n-1)/n
 *   alltoall        one rank's whole buffer   one block           (n-1)/n
 *   broadcast       the buffer                its elements        1
 *   reduce          the buffer                its elements        1
 * A size not divisible by the rank count is rounded down (rows of size 0 are skipped).
 * float32 data, MPI_SUM for the reductions, root 0 for broadcast and reduce (reduce is not
 * in run.py's tables, whose collectives are the issue's; it is here to set collie's
 * reduce_perf beside MPI_Reduce by hand).
 *
 * Per size: -w warm-up operations, two MPI_Barriers, -n timed operations; the time is the wall
 * time over them divided by -n, averaged over ranks (collie's default -a 1), reported by
 * rank 0 as one JSON line per size on stdout. Buffers are page aligned and touched first.
 *
 * The one departure, for implementations that collapse when ranks outnumber cores (MPICH
 * busy-polls): with -B SEC, the first warm-up operation is timed (max over ranks) and, when
 * -w + -n operations would take longer than SEC, the counts shrink to fit (at least 2 timed
 * operations); the JSON line then says "capped": true with the counts used. -B 0 = never.
 *
 * After timing, one more operation on known inputs is checked (outside the timed region),
 * so a mistake in this program's buffer sizes cannot pass unnoticed. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, BROADCAST, ALLTOALL, REDUCE, NCOLLS };
enum { WARM_CONNECTIONS = 32 }; /* small all-reduces before the first size */
static const char *names[] = {"allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall", "reduce"};

static int rank, nranks;

static void die(const char *msg) {
  if (rank == 0) fprintf(stderr, "mpi_coll_bench: %s\n", msg);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end || v < 0) die("bad size (use e.g. 8, 64K, 64M)");
  return (size_t)v;
}

static void *alloc_touched(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 4096, bytes ? bytes : 64)) die("out of memory");
  memset(p, 0, bytes ? bytes : 64);
  return p;
}

/* Small integers: exact float sums in any order, no NaN or denormal slow paths. */
static void fill(float *x, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((int)((i * 7 + (size_t)seed * 13) % 7) - 3);
}

typedef struct {
  int coll;
  size_t count;      /* elements, as nccl-tests defines count */
  size_t size_bytes; /* as nccl-tests defines size */
  size_t send_elems, recv_elems;
  double factor;
} shape_t;

static shape_t shape_for(int coll, size_t bytes) {
  shape_t s = {coll, 0, 0, 0, 0, 1.0};
  size_t n = (size_t)nranks, esz = sizeof(float);
  switch (coll) {
    case ALLREDUCE:
      s.count = s.send_elems = s.recv_elems = bytes / esz;
      s.size_bytes = s.count * esz;
      s.factor = 2.0 * (double)(n - 1) / (double)n;
      break;
    case BROADCAST:
    case REDUCE:
      s.count = s.send_elems = s.recv_elems = bytes / esz;
      s.size_bytes = s.count * esz;
      s.factor = 1.0;
      break;
    case ALLGATHER:
      s.count = s.send_elems = bytes / esz / n;
      s.recv_elems = s.count * n;
      s.size_bytes = s.recv_elems * esz;
      s.factor = (double)(n - 1) / (double)n;
      break;
    case REDUCE_SCATTER:
      s.count = s.recv_elems = bytes / esz / n;
      s.send_elems = s.count * n;
      s.size_bytes = s.send_elems * esz;
      s.factor = (double)(n - 1) / (double)n;
      break;
    case ALLTOALL:
      s.count = bytes / esz / n;
      s.send_elems = s.recv_elems = s.count * n;
      s.size_bytes = s.send_elems * esz;
      s.factor = (double)(n - 1) / (double)n;
      break;
  }
  return s;
}

static void run_once(const shape_t *s, float *send, float *recv) {
  int c = (int)s->count, rc = MPI_SUCCESS;
  switch (s->coll) {
    case ALLREDUCE: rc = MPI_Allreduce(send, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: rc = MPI_Allgather(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER: rc = MPI_Reduce_scatter_block(send, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case BROADCAST: rc = MPI_Bcast(recv, c, MPI_FLOAT, 0, MPI_COMM_WORLD); break; /* MPI_Bcast is in place */
    case ALLTOALL: rc = MPI_Alltoall(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCE: rc = MPI_Reduce(send, recv, c, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
  }
  if (rc != MPI_SUCCESS) die("an MPI collective failed");
}

/* Inputs: rank r's element i is (r + 1) * (i % 5 + 1), so every expectation is exact. */
static float val(int r, size_t i) { return (float)((r + 1) * (int)(i % 5 + 1)); }

static long check(const shape_t *s, float *send, float *recv) {
  size_t n = (size_t)nranks, c = s->count;
  for (size_t i = 0; i < s->send_elems; i++) send[i] = val(rank, i);
  if (s->coll == BROADCAST)
    for (size_t i = 0; i < c; i++) recv[i] = rank == 0 ? val(0, i) : -1.0f;
  else
    for (size_t i = 0; i < s->recv_elems; i++) recv[i] = -1.0f;
  run_once(s, send, recv);
  long wrong = 0;
  float tri = (float)(n * (n + 1) / 2);
  const size_t checked = s->coll == REDUCE && rank != 0 ? 0 : s->recv_elems; /* reduce: the root's only */
  for (size_t i = 0; i < checked; i++) {
    float want = 0;
    switch (s->coll) {
      case ALLREDUCE:
      case REDUCE: want = tri * (float)(i % 5 + 1); break;
      case BROADCAST: want = val(0, i); break;
      case ALLGATHER: want = val((int)(i / c), i % c); break;
      case REDUCE_SCATTER: want = tri * (float)((rank * c + i) % 5 + 1); break;
      case ALLTOALL: want = val((int)(i / c), (size_t)rank * c + i % c); break; /* block rank of sender i/c */
    }
    if (recv[i] != want) wrong++;
  }
  long total = 0;
  MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  return total;
}

static double now(void) { return MPI_Wtime(); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  int coll = -1, iters = 20, warmup = 5, do_check = 1;
  size_t minb = 8, maxb = 64u << 20;
  double factor = 2, budget = 0;
  const char *label = "mpi";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--nocheck")) { do_check = 0; continue; }
    if (!v) die("usage: mpi_coll_bench -c COLL [-b MIN] [-e MAX] [-f F] [-n N] [-w W] [-B SEC] [-l LABEL] [--nocheck]");
    if (!strcmp(a, "-c")) {
      for (int k = 0; k < NCOLLS; k++)
        if (!strcmp(v, names[k])) coll = k;
      if (coll < 0) die("-c wants allreduce, allgather, reduce_scatter, broadcast, alltoall or reduce");
    } else if (!strcmp(a, "-b")) minb = parse_size(v);
    else if (!strcmp(a, "-e")) maxb = parse_size(v);
    else if (!strcmp(a, "-f")) factor = atof(v);
    else if (!strcmp(a, "-n")) iters = atoi(v);
    else if (!strcmp(a, "-w")) warmup = atoi(v);
    else if (!strcmp(a, "-B")) budget = atof(v);
    else if (!strcmp(a, "-l")) label = v;
    else die("unknown flag");
    i++;
  }
  if (coll < 0) die("-c COLL is required");
  if (factor < 1.01 || iters < 1 || warmup < 0 || minb > maxb) die("bad -f, -n, -w or -b/-e");

  /* Largest buffers once, touched, reused for every size (as tools/perf does). */
  shape_t big = shape_for(coll, maxb);
  size_t cap = big.send_elems > big.recv_elems ? big.send_elems : big.recv_elems;
  float *send = alloc_touched(cap * sizeof(float)), *recv = alloc_touched(cap * sizeof(float));

  /* Connections and lazily built state are set up here, not in the first measurement.
   * Open MPI's shared-memory transport switches a pair to its fast boxes only after 16
   * messages (btl_vader_fbox_threshold): with 2 operations here its first size read 0.89 us
   * for a 2-rank 8 B all-reduce against 0.20 after 100 (2-rank, median of 5), so 32. */
  for (int i = 0; i < WARM_CONNECTIONS; i++) MPI_Allreduce(MPI_IN_PLACE, send, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);

  for (double b = (double)minb; b <= (double)maxb * 1.0000001; b *= factor) {
    shape_t s = shape_for(coll, (size_t)b);
    if (s.size_bytes == 0) continue;
    fill(send, s.send_elems, rank);
    fill(recv, s.recv_elems, rank);

    int w = warmup, n = iters, capped = 0, used_w = 0; /* used_w: timed warm-ups */
    if (budget > 0) {
      /* Time one warm-up operation; all ranks adopt the slowest rank's figure. */
      double t0 = now();
      run_once(&s, send, recv);
      double t1 = now() - t0, tmax;
      MPI_Allreduce(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      w = warmup > 0 ? warmup - 1 : 0;
      if (tmax * (double)(1 + w + n) > budget && w > 0) {
        /* A first operation may pay one-time costs: look at a second one before capping. */
        t0 = now();
        run_once(&s, send, recv);
        t1 = now() - t0;
        MPI_Allreduce(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        w--;
        used_w++;
      }
      if (tmax * (double)(1 + used_w + w + n) > budget) {
        capped = 1; /* the budget covers every operation at this size, warm-ups included */
        int fit = (int)(budget / (tmax > 1e-9 ? tmax : 1e-9)) - 1 - used_w;
        w = w < 1 ? w : 1;
        n = fit - w < n ? fit - w : n;
        if (n < 2) n = 2;
      }
    }
    for (int i = 0; i < w; i++) run_once(&s, send, recv);
    MPI_Barrier(MPI_COMM_WORLD); /* everyone starts the clock together; two, as tools/perf */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    for (int i = 0; i < n; i++) run_once(&s, send, recv);
    double t = (now() - t0) * 1e6 / n, sum = 0;
    MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    long wrong = do_check ? check(&s, send, recv) : -1;
    if (rank == 0) {
      double us = sum / nranks;
      double algbw = us > 0 ? (double)s.size_bytes / 1e3 / us : 0;
      printf("{\"impl\": \"%s\", \"collective\": \"%s\", \"nranks\": %d, \"size\": %zu, \"count\": %zu, "
             "\"time_us\": %.6g, \"algbw\": %.6g, \"busbw\": %.6g, \"iters\": %d, \"warmup_iters\": %d, "
             "\"capped\": %s, \"wrong\": %ld}\n",
             label, names[coll], nranks, s.size_bytes, s.count, us, algbw, algbw * s.factor, n,
             budget > 0 ? w + 1 + used_w : w, capped ? "true" : "false", wrong);
      fflush(stdout);
      if (wrong > 0) fprintf(stderr, "mpi_coll_bench: %s size %zu: %ld wrong elements\n", names[coll], s.size_bytes, wrong);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
