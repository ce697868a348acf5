/* One rank of a failure scenario; the scripts beside it start, kill and judge the ranks.
 *
 *   fault_rank loop VICTIM [allreduce|broadcast]
 *                                       exchange (or all-reduce, or broadcast from rank 0) 1 MiB
 *                                       until an error; pass if the error is COLLIE_ERR_REMOTE
 *                                       and its sentence names "rank VICTIM". With
 *                                       FAULT_FORK_CHILD=FILE in its environment the victim
 *                                       first forks a child that writes its pid to FILE and
 *                                       sleeps 30 s (as a data-loader worker would live on)
 *   fault_rank exec-timeout             rank 0 waits for a message rank 1 never sends
 *   fault_rank test-timeout             the same, rank 0 polling collie_test (which leaves
 *                                       progress to a progress thread when there is one)
 *   fault_rank connect-timeout          join a root that does not exist
 *   fault_rank join                     create the communicator, barrier, destroy
 *   fault_rank bad-args                 two threads: every bad argument is refused, comm still works
 *   fault_rank abort                    two threads: abort with an operation pending
 *   fault_rank slow-destroy             rank 1 destroys late: rank 0's destroy is bounded
 *   fault_rank early-destroy            rank 1 destroys after one all-reduce while the others call a
 *                                       second (as a rank that gives up after an error would): each
 *                                       must fail (in either) within 5 s with COLLIE_ERR_REMOTE naming
 *                                       rank 1
 *
 * Ranks come from COLLIE_RANK/COLLIE_NRANKS/COLLIE_ROOT_ADDR (collie_comm_init_env). Every
 * outcome is printed as one line; the exit status says pass (0) or fail (1). */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collie.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, collie_result_t r, const collie_comm_t *comm) {
  fprintf(stderr, "fault_rank: %s failed: %s: %s\n", what, collie_get_error_string(r), collie_get_last_error(comm));
  return 1;
}

enum { EXCHANGE, ALLREDUCE, BROADCAST };

static int loop(int victim, int mode) {
  collie_comm_t *comm;
  collie_result_t r = collie_comm_init_env(&comm);
  if (r) return fail("init", r, NULL);
  int rank, n;
  collie_comm_rank(comm, &rank);
  collie_comm_size(comm, &n);
  size_t count = 1 << 18;
  float *a = calloc(count, sizeof(float)), *b = calloc(count, sizeof(float));
  const char *child_pid_file = getenv("FAULT_FORK_CHILD");
  if (child_pid_file && rank == victim) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      FILE *f = fopen(child_pid_file, "w");
      if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
      }
      sleep(30);
      _exit(0);
    }
  }
  printf("rank %d ready\n", rank);
  fflush(stdout);
  double t_err = 0;
  for (long it = 0;; it++) {
    if (mode == ALLREDUCE) {
      r = collie_allreduce(a, b, count, COLLIE_FLOAT32, COLLIE_SUM, comm);
    } else if (mode == BROADCAST) {
      r = collie_broadcast(a, b, count, COLLIE_FLOAT32, 0, comm);
    } else {
      collie_group_start();
      collie_send(a, count, COLLIE_FLOAT32, (rank + 1) % n, comm);
      collie_recv(b, count, COLLIE_FLOAT32, (rank + n - 1) % n, comm);
      r = collie_group_end();
    }
    if (r) {
      t_err = now_s();
      break;
    }
  }
  const char *msg = collie_get_last_error(comm);
  char want[32];
  snprintf(want, sizeof(want), "rank %d", victim);
  /* The next call fails at once with the same error. */
  collie_result_t again = collie_barrier(comm);
  double t_next = now_s() - t_err;
  printf("rank %d: error %s: %s\n", rank, collie_get_error_string(r), msg);
  int ok = r == COLLIE_ERR_REMOTE && strstr(msg, want) && again == COLLIE_ERR_REMOTE && t_next < 1.0;
  if (!ok) fprintf(stderr, "rank %d: expected COLLIE_ERR_REMOTE naming %s (next call: %s after %.2f s)\n", rank, want,
                   collie_get_error_string(again), t_next);
  double t0 = now_s();
  collie_comm_destroy(comm);
  free(a);
  free(b);
  if (now_s() - t0 > 5) {
    fprintf(stderr, "rank %d: destroy after the failure took %.1f s\n", rank, now_s() - t0);
    ok = 0;
  }
  return ok ? 0 : 1;
}

/* The receive's request, polled with collie_test when by_test. */
static collie_result_t recv_from_1(int *x, collie_comm_t *comm, bool by_test) {
  if (!by_test) return collie_recv(x, 1, COLLIE_INT32, 1, comm);
  collie_request_t *req;
  collie_result_t r = collie_irecv(x, 1, COLLIE_INT32, 1, comm, &req);
  if (r) return r;
  int done = 0;
  double t0 = now_s();
  while (!done) {
    r = collie_test(req, &done);
    if (!done && now_s() - t0 > 20) return COLLIE_SUCCESS; /* hung: judged by the caller */
    if (!done) usleep(1000);
  }
  return r;
}

/* The communicator from the launcher's environment, and this rank; 0, or 1 after saying why. */
static int init_rank(collie_comm_t **comm, int *rank) {
  collie_result_t r = collie_comm_init_env(comm);
  if (r) return fail("init", r, NULL);
  collie_comm_rank(*comm, rank);
  return 0;
}

static int exec_timeout(bool by_test) {
  collie_comm_t *comm;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  collie_result_t r;
  int x = 0, ok;
  double t0 = now_s();
  if (rank == 0) {
    r = recv_from_1(&x, comm, by_test);
    double dt = now_s() - t0;
    const char *msg = collie_get_last_error(comm);
    printf("rank 0: %s after %.1f s: %s\n", collie_get_error_string(r), dt, msg);
    /* rank 0's own verdict: rank 1 times out later (in its barrier) and would tell it too */
    ok = r == COLLIE_ERR_TIMEOUT && strstr(msg, "rank 0 timed out") && strstr(msg, "rank 1") && strstr(msg, "recv") &&
         dt < 5;
  } else {
    /* Busy elsewhere past the timeout, then try to talk: rank 0's verdict reaches us. */
    sleep(4);
    r = collie_barrier(comm);
    printf("rank 1: %s: %s\n", collie_get_error_string(r), collie_get_last_error(comm));
    ok = r == COLLIE_ERR_TIMEOUT && strstr(collie_get_last_error(comm), "timed out");
  }
  collie_comm_destroy(comm);
  return ok ? 0 : 1;
}

static int connect_timeout(void) {
  collie_comm_t *comm = NULL;
  double t0 = now_s();
  collie_result_t r = collie_comm_init_env(&comm);
  double dt = now_s() - t0;
  printf("connect: %s after %.1f s: %s\n", collie_get_error_string(r), dt, collie_get_last_error(NULL));
  return r == COLLIE_ERR_TIMEOUT && comm == NULL && dt < 10 && strstr(collie_get_last_error(NULL), "rank 0") ? 0 : 1;
}

static int slow_destroy(void) {
  collie_comm_t *comm;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  collie_result_t r;
  if (rank == 1) sleep(6);
  double t0 = now_s();
  r = collie_comm_destroy(comm);
  double dt = now_s() - t0;
  printf("rank %d: destroy returned %s after %.1f s\n", rank, collie_get_error_string(r), dt);
  return dt < 5 ? 0 : 1; /* COLLIE_EXEC_TIMEOUT=2 bounds it */
}

static int join(void) {
  collie_comm_t *comm;
  collie_result_t r = collie_comm_init_env(&comm);
  if (r) return fail("init", r, NULL);
  r = collie_barrier(comm);
  if (r) return fail("barrier", r, comm);
  r = collie_comm_destroy(comm);
  if (r) return fail("destroy", r, NULL);
  printf("joined\n");
  return 0;
}

typedef struct {
  collie_comm_t *comm;
  int rc;
} targ_t;

#define EXPECT_BAD(call)                                                                                 \
  do {                                                                                                   \
    collie_result_t r_ = (call);                                                                         \
    const char *m_ = collie_get_last_error(comm);                                                        \
    if (r_ != COLLIE_ERR_INVALID_ARGUMENT || !strstr(m_, "rank")) {                                      \
      fprintf(stderr, "rank %d: %s returned %s (%s), expected an invalid-argument sentence\n", rank, #call, \
              collie_get_error_string(r_), m_);                                                          \
      a->rc = 1;                                                                                         \
    }                                                                                                    \
  } while (0)

static void *bad_args_thread(void *p) {
  targ_t *a = p;
  collie_comm_t *comm = a->comm;
  int rank, n;
  collie_comm_rank(comm, &rank);
  collie_comm_size(comm, &n);
  float buf[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[16];
  size_t counts[2] = {4, 4}, displs[2] = {0, 4};
  collie_request_t *req;
  EXPECT_BAD(collie_allreduce(NULL, out, 4, COLLIE_FLOAT32, COLLIE_SUM, comm));
  EXPECT_BAD(collie_allreduce(buf, out, 4, (collie_datatype_t)42, COLLIE_SUM, comm));
  EXPECT_BAD(collie_allreduce(buf, out, 4, COLLIE_FLOAT32, (collie_redop_t)9, comm));
  EXPECT_BAD(collie_allreduce(buf, out, SIZE_MAX / 2, COLLIE_FLOAT32, COLLIE_SUM, comm));
  EXPECT_BAD(collie_broadcast(buf, out, 4, COLLIE_FLOAT32, n, comm));
  EXPECT_BAD(collie_reduce(buf, out, 4, COLLIE_FLOAT32, COLLIE_SUM, -1, comm));
  EXPECT_BAD(collie_allgatherv(buf, 4, out, NULL, displs, COLLIE_FLOAT32, comm));
  EXPECT_BAD(collie_allgatherv(buf, 3, out, counts, displs, COLLIE_FLOAT32, comm));
  EXPECT_BAD(collie_reduce_scatterv(buf, out, NULL, COLLIE_FLOAT32, COLLIE_SUM, comm));
  EXPECT_BAD(collie_alltoallv(buf, counts, NULL, out, counts, displs, COLLIE_FLOAT32, comm));
  EXPECT_BAD(collie_send(buf, 4, COLLIE_FLOAT32, n + 3, comm));
  EXPECT_BAD(collie_recv(NULL, 4, COLLIE_FLOAT32, 0, comm));
  EXPECT_BAD(collie_iallreduce(buf, out, 4, COLLIE_FLOAT32, COLLIE_SUM, comm, NULL));
  /* Buffers that overlap without being the in-place form. */
  EXPECT_BAD(collie_allreduce(out, out + 1, 4, COLLIE_FLOAT32, COLLIE_SUM, comm));
  EXPECT_BAD(collie_alltoall(out + 2, out, 2, COLLIE_FLOAT32, comm));
  EXPECT_BAD(collie_allgather(out + 2 * rank + 1, out, 2, COLLIE_FLOAT32, comm));
  EXPECT_BAD(collie_reduce_scatter(out, out + 2 * rank + 1, 2, COLLIE_FLOAT32, COLLIE_SUM, comm));
  EXPECT_BAD(collie_broadcast(out, out + 3, 4, COLLIE_FLOAT32, rank, comm));
  EXPECT_BAD(collie_alltoallv(out, counts, displs, out + 1, counts, displs, COLLIE_FLOAT32, comm));
  (void)req;
  /* Still usable: a real allreduce. */
  collie_result_t r = collie_allreduce(buf, out, 8, COLLIE_FLOAT32, COLLIE_SUM, comm);
  if (r || out[7] != 8.0f * (float)n) {
    fprintf(stderr, "rank %d: allreduce after bad arguments: %s, out[7]=%g\n", rank, collie_get_error_string(r),
            (double)out[7]);
    a->rc = 1;
  }
  if (collie_comm_destroy(comm)) a->rc = 1;
  return NULL;
}

static void *abort_thread(void *p) {
  targ_t *a = p;
  int rank, x = 0;
  collie_comm_rank(a->comm, &rank);
  collie_request_t *req;
  if (rank == 0) {
    collie_irecv(&x, 1, COLLIE_INT32, 1, a->comm, &req); /* rank 1 never sends */
    usleep(200000);
    double t0 = now_s();
    collie_result_t ra = collie_comm_abort(a->comm);
    double dt = now_s() - t0;
    collie_result_t rw = collie_wait(req);
    printf("rank 0: abort %s in %.3f s, pending recv: %s\n", collie_get_error_string(ra), dt,
           collie_get_error_string(rw));
    a->rc = !(ra == COLLIE_SUCCESS && rw == COLLIE_ERR_ABORTED && dt < 2);
  } else {
    /* The aborted root's connection drops: our pending receive fails, naming it. */
    collie_result_t r = collie_recv(&x, 1, COLLIE_INT32, 0, a->comm);
    printf("rank 1: %s: %s\n", collie_get_error_string(r), collie_get_last_error(a->comm));
    a->rc = !(r == COLLIE_ERR_REMOTE && strstr(collie_get_last_error(a->comm), "rank 0"));
    collie_comm_destroy(a->comm);
  }
  return NULL;
}

/* Three ranks on one host run allreduce in shared memory (algorithm shm); rank 2 arrives
 * after the exec timeout. Ranks 0 and 1 must time out naming rank 2 and the collective. */
static void *shm_timeout_thread(void *p) {
  targ_t *a = p;
  int rank;
  collie_comm_rank(a->comm, &rank);
  float in[4] = {1, 2, 3, 4}, out[4];
  if (rank == 2) sleep(4);
  double t0 = now_s();
  collie_result_t r = collie_allreduce(in, out, 4, COLLIE_FLOAT32, COLLIE_SUM, a->comm);
  double dt = now_s() - t0;
  const char *msg = collie_get_last_error(a->comm);
  printf("rank %d: %s after %.1f s: %s\n", rank, collie_get_error_string(r), dt, msg);
  if (rank == 2) a->rc = r != COLLIE_ERR_TIMEOUT;
  else
    a->rc = !(r == COLLIE_ERR_TIMEOUT && strstr(msg, "allreduce") && strstr(msg, "shared memory") &&
              strstr(msg, "rank 2") && dt < 10);
  collie_comm_destroy(a->comm);
  return NULL;
}

static int threads(int n, void *(*fn)(void *)) {
  collie_comm_t *comms[3];
  collie_result_t r = collie_comm_init_all(comms, n);
  if (r) return fail("init_all", r, NULL);
  pthread_t th[3];
  targ_t args[3];
  for (int i = 0; i < n; i++) args[i] = (targ_t){comms[i], 0};
  for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, fn, &args[i]);
  int rc = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    rc |= args[i].rc;
  }
  return rc;
}

static int early_destroy(void) {
  collie_comm_t *comm;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  collie_result_t r;
  float x = 1, y = 0;
  double t0 = now_s();
  r = collie_allreduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, comm);
  if (rank != 1) {
    /* The failure may end this rank's first all-reduce already, if another rank reached
     * its second one first: the communicator fails on every rank at once. */
    if (!r) r = collie_allreduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, comm);
    double dt = now_s() - t0;
    printf("rank %d: the all-reduces returned %s after %.1f s: %s\n", rank, collie_get_error_string(r), dt,
           collie_get_last_error(comm));
    bool named = strstr(collie_get_last_error(comm), "rank 1 ") && strstr(collie_get_last_error(comm), "destroyed");
    collie_comm_destroy(comm);
    return r == COLLIE_ERR_REMOTE && named && dt < 5 ? 0 : 1;
  }
  if (r) return fail("first allreduce", r, comm);
  t0 = now_s();
  r = collie_comm_destroy(comm);
  double dt = now_s() - t0;
  printf("rank 1: destroy returned %s after %.1f s\n", collie_get_error_string(r), dt);
  return dt < 5 ? 0 : 1;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 3 && !strcmp(argv[1], "loop"))
    return loop(atoi(argv[2]), argc < 4                         ? EXCHANGE
                               : !strcmp(argv[3], "allreduce") ? ALLREDUCE
                               : !strcmp(argv[3], "broadcast") ? BROADCAST
                                                               : EXCHANGE);
  if (argc == 2 && !strcmp(argv[1], "exec-timeout")) return exec_timeout(false);
  if (argc == 2 && !strcmp(argv[1], "test-timeout")) return exec_timeout(true);
  if (argc == 2 && !strcmp(argv[1], "connect-timeout")) return connect_timeout();
  if (argc == 2 && !strcmp(argv[1], "join")) return join();
  if (argc == 2 && !strcmp(argv[1], "slow-destroy")) return slow_destroy();
  if (argc == 2 && !strcmp(argv[1], "early-destroy")) return early_destroy();
  if (argc == 2 && !strcmp(argv[1], "bad-args")) return threads(2, bad_args_thread);
  if (argc == 2 && !strcmp(argv[1], "abort")) return threads(2, abort_thread);
  if (argc == 2 && !strcmp(argv[1], "shm-timeout")) return threads(3, shm_timeout_thread);
  fprintf(stderr, "usage: fault_rank loop VICTIM [allreduce|broadcast] | exec-timeout | test-timeout | connect-timeout | join | bad-args | abort | slow-destroy | early-destroy | shm-timeout\n");
  return 2;
}
