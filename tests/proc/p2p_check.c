/* The foundation check, written only against API.md: ring exchanges of several sizes
 * (grouped send/recv and isend/irecv), barrier, split, destroy.
 *
 *   p2p_check [--threads N] [--sizes a,b,c] [--iters K] [--signal-storm]
 *
 * Without --threads the ranks come from the launcher (collie-run, mpirun, mpiexec, srun,
 * or COLLIE_RANK/COLLIE_NRANKS/COLLIE_ROOT_ADDR); with it, N ranks run as threads of this
 * process (collie_comm_init_all). Exit status 0 only if every check passed.
 *
 * --signal-storm does to the library what a profiler (SIGPROF) or a timer (SIGALRM) does
 * to a program whose handlers were installed without SA_RESTART: from before the
 * communicator is created to the exit, both fire every 20 to 500 us (chosen per process),
 * so any blocking call (connect, accept, poll, futex, nanosleep) may return EINTR. The
 * library must neither fail, nor lose data, nor hang. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collie.h"
#include "signal_storm.h"

static size_t sizes[16] = {0, 1, 4099, 1 << 20, 64 << 20};
static int nsizes = 5, iters = 1;
#define CHECK(call)                                                                                   \
  do {                                                                                                \
    collie_result_t r_ = (call);                                                                      \
    if (r_ != COLLIE_SUCCESS) {                                                                       \
      fprintf(stderr, "p2p_check: rank %d: %s failed: %s: %s\n", rank, #call, collie_get_error_string(r_), \
              collie_get_last_error(comm));                                                           \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

static uint8_t pattern(int src, size_t i, int iter) { return (uint8_t)(src * 31 + i * 7 + (i >> 12) + iter); }

static int check_buf(int rank, const uint8_t *b, size_t n, int src, int iter, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern(src, i, iter)) {
      fprintf(stderr, "p2p_check: rank %d: %s: byte %zu of %zu from rank %d is %u, expected %u\n", rank, what, i, n,
              src, b[i], pattern(src, i, iter));
      return 1;
    }
  return 0;
}

static int run(collie_comm_t *comm) {
  int rank = -1, n = 0;
  CHECK(collie_comm_rank(comm, &rank));
  CHECK(collie_comm_size(comm, &n));
  int right = (rank + 1) % n, left = (rank + n - 1) % n;
  size_t max = 0;
  for (int i = 0; i < nsizes; i++) max = sizes[i] > max ? sizes[i] : max;
  uint8_t *sb = malloc(max + 1), *rb = malloc(max + 1);
  if (!sb || !rb) return 1;
  for (int it = 0; it < iters; it++)
    for (int s = 0; s < nsizes; s++) {
      size_t sz = sizes[s];
      for (size_t i = 0; i < sz; i++) sb[i] = pattern(rank, i, it);
      memset(rb, 0xEE, sz);
      /* grouped blocking calls */
      CHECK(collie_group_start());
      CHECK(collie_send(sb, sz, COLLIE_UINT8, right, comm));
      CHECK(collie_recv(rb, sz, COLLIE_UINT8, left, comm));
      CHECK(collie_group_end());
      if (check_buf(rank, rb, sz, left, it, "group ring")) return 1;
      /* nonblocking, waited in reverse order */
      memset(rb, 0xEE, sz);
      collie_request_t *rq[2];
      CHECK(collie_irecv(rb, sz, COLLIE_UINT8, right, comm, &rq[0]));
      CHECK(collie_isend(sb, sz, COLLIE_UINT8, left, comm, &rq[1]));
      CHECK(collie_wait(rq[1]));
      int done = 0;
      while (!done) CHECK(collie_test(rq[0], &done));
      if (check_buf(rank, rb, sz, right, it, "isend/irecv reverse ring")) return 1;
    }
  CHECK(collie_barrier(comm));
  /* split into evens and odds, ordered by descending key, and exchange inside */
  collie_comm_t *sub = NULL;
  CHECK(collie_comm_split(comm, rank % 2, n - rank, &sub));
  int srank, ssize;
  CHECK(collie_comm_rank(sub, &srank));
  CHECK(collie_comm_size(sub, &ssize));
  int expect_size = (n + 1 - rank % 2) / 2;
  int expect_rank = (n - 1 - rank) / 2;
  if (ssize != expect_size || srank != expect_rank) {
    fprintf(stderr, "p2p_check: rank %d: split gave rank %d of %d, expected %d of %d\n", rank, srank, ssize,
            expect_rank, expect_size);
    return 1;
  }
  int token = rank, got = -1;
  CHECK(collie_group_start());
  CHECK(collie_send(&token, 1, COLLIE_INT32, (srank + 1) % ssize, sub));
  CHECK(collie_recv(&got, 1, COLLIE_INT32, (srank + ssize - 1) % ssize, sub));
  CHECK(collie_group_end());
  /* keys descend with the parent rank, so sub rank s is parent rank top - 2s */
  int top = (n - 1) - ((n - 1 - rank) % 2);
  int expect_from = top - 2 * ((srank + ssize - 1) % ssize);
  if (ssize > 1 && got != expect_from) {
    fprintf(stderr, "p2p_check: rank %d: split ring got %d, expected %d\n", rank, got, expect_from);
    return 1;
  }
  CHECK(collie_barrier(sub));
  CHECK(collie_comm_destroy(sub));
  collie_comm_t *none = (collie_comm_t *)1;
  CHECK(collie_comm_split(comm, rank == 0 ? 0 : COLLIE_SPLIT_NOCOLOR, 0, &none));
  if ((rank == 0) != (none != NULL)) {
    fprintf(stderr, "p2p_check: rank %d: NOCOLOR split returned %p\n", rank, (void *)none);
    return 1;
  }
  if (none) CHECK(collie_comm_destroy(none));
  /* Inside a group, as NCCL allows communicator creation there: the split itself
   * completes before it returns (it once read its all-gather's answer before the group's
   * end had waited for it). */
  collie_comm_t *grouped = NULL;
  CHECK(collie_group_start());
  CHECK(collie_comm_split(comm, rank % 2, rank, &grouped));
  CHECK(collie_group_end());
  CHECK(collie_comm_rank(grouped, &srank));
  CHECK(collie_comm_size(grouped, &ssize));
  if (ssize != expect_size || srank != rank / 2) {
    fprintf(stderr, "p2p_check: rank %d: split in a group gave rank %d of %d, expected %d of %d\n", rank, srank,
            ssize, rank / 2, expect_size);
    return 1;
  }
  CHECK(collie_barrier(grouped));
  CHECK(collie_comm_destroy(grouped));
  CHECK(collie_barrier(comm));
  free(sb);
  free(rb);
  if (signal_storm_on())
    printf("p2p_check: rank %d of %d OK under a signal storm (%lu signals so far)\n", rank, n,
           signal_storm_count());
  else
    printf("p2p_check: rank %d of %d OK\n", rank, n);
  return 0;
}

typedef struct {
  collie_comm_t *comm;
  int rc;
} thread_arg_t;

static void *thread_main(void *p) {
  thread_arg_t *a = p;
  a->rc = run(a->comm);
  if (collie_comm_destroy(a->comm) != COLLIE_SUCCESS) a->rc = 1;
  return NULL;
}

int main(int argc, char **argv) {
  int threads = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--signal-storm")) signal_storm_start();
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
      nsizes = 0;
      for (char *t = strtok(argv[++i], ","); t && nsizes < 16; t = strtok(NULL, ",")) sizes[nsizes++] = strtoull(t, NULL, 0);
    } else {
      fprintf(stderr, "usage: p2p_check [--threads N] [--sizes a,b,c] [--iters K] [--signal-storm]\n");
      return 2;
    }
  }
  if (threads > 0) {
    collie_comm_t **comms = calloc((size_t)threads, sizeof(*comms));
    collie_result_t r = collie_comm_init_all(comms, threads);
    if (r) {
      fprintf(stderr, "p2p_check: collie_comm_init_all failed: %s\n", collie_get_last_error(NULL));
      return 1;
    }
    pthread_t *th = calloc((size_t)threads, sizeof(pthread_t));
    thread_arg_t *args = calloc((size_t)threads, sizeof(thread_arg_t));
    for (int i = 0; i < threads; i++) {
      args[i].comm = comms[i];
      pthread_create(&th[i], NULL, thread_main, &args[i]);
    }
    int rc = 0;
    for (int i = 0; i < threads; i++) {
      pthread_join(th[i], NULL);
      rc |= args[i].rc;
    }
    free(th);
    free(args);
    free(comms);
    return rc;
  }
  collie_comm_t *comm = NULL;
  int rank = -1;
  CHECK(collie_comm_init_env(&comm));
  int rc = run(comm);
  if (collie_comm_destroy(comm) != COLLIE_SUCCESS) rc = 1;
  return rc;
}
