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
 *   fault_rank split                    every rank splits into one communicator (run with a
 *                                       COLLIE_PORT_RANGE too small for it): the split must fail
 *                                       on every rank within 5 s, with a sentence that says its
 *                                       new rank 0 could not listen
 *   fault_rank one-thread-destroy       the two ranks of collie_comm_init_all destroyed one
 *                                       after the other from one thread: the first waits
 *                                       until COLLIE_EXEC_TIMEOUT (its log says why: the test
 *                                       checks), the second returns at once; both succeed
 *   fault_rank zero-count               rank 1 calls an all-to-all with count 0 (which completes
 *                                       at once), the others with 2, then all an all-reduce
 *                                       (run with COLLIE_ALGO=ring: the all-to-all in shared
 *                                       memory, the all-reduce as messages): every rank must
 *                                       fail with COLLIE_ERR_MISMATCH within 5 s, naming the
 *                                       round rank 1 never reached
 *   fault_rank late-root                (2 ranks, COLLIE_EXEC_TIMEOUT=2) rank 1 reduces 8 bytes
 *                                       to rank 0 in shared memory (it returns at once,
 *                                       comparing its call with the root's later) and calls
 *                                       collie_comm_synchronize while rank 0 sleeps 6 s: the
 *                                       synchronize must fail with COLLIE_ERR_TIMEOUT within
 *                                       5 s, naming rank 0's pid; rank 0's reduce then fails
 *   fault_rank cross-wait               an all-reduce pending on two communicators (the world,
 *                                       and a split of it), waited for in opposite orders by
 *                                       ranks 0 and 1 (run with COLLIE_TRANSPORT=tcp): both
 *                                       must complete, with the right sums, within 5 s
 *   fault_rank cross-test               the same, each rank looping on collie_test instead of
 *                                       waiting
 *   fault_rank cross-blocking           blocking calls that are not waits, in opposite orders:
 *                                       an all-reduce of 1 MiB pending on each of two
 *                                       communicators, rank 0 synchronizes the first and then
 *                                       the second, the others the other way round; then one
 *                                       pending on a copy of the world while the ranks split off
 *                                       another communicator, which rank 0 destroys before it
 *                                       waits for the all-reduce, the others after; then rank 0
 *                                       creates a communicator from a unique id before such a
 *                                       wait, the others after: all within 5 s with the right
 *                                       sums (each call moves the other communicators while it
 *                                       waits)
 *   fault_rank late-rank                the last rank is busy outside collie (sleeps) for
 *                                       COLLIE_EXEC_TIMEOUT + 2 s before the all-reduce the
 *                                       others wait in: every other rank must fail with
 *                                       COLLIE_ERR_TIMEOUT, naming it by its pid as not waiting
 *                                       in collie (the stall report asked it, or asked a rank
 *                                       that waits for it)
 *   fault_rank late-chain               (3 ranks) rank 0 receives from rank 1, which is busy
 *                                       outside collie (sleeps) past rank 0's first stall report
 *                                       and then receives from rank 2, busy past rank 0's
 *                                       timeout: rank 0 must fail with COLLIE_ERR_TIMEOUT naming
 *                                       rank 2 by its pid (rank 1's first answer, that it had not
 *                                       reached the operation, is stale by the timeout)
 *   fault_rank long-chain               rank r receives from rank r+1, and the last rank is busy
 *                                       outside collie past rank 0's timeout: rank 0 must fail
 *                                       with COLLIE_ERR_TIMEOUT naming the last rank by its pid
 *                                       as not waiting in collie (with 5 ranks and a timeout of
 *                                       4 s the answers once reached 2 ranks deep)
 *   fault_rank cross-wait-busy          cross-wait after 8 other communicators were used
 *   fault_rank sync-abort               20 times: a thread synchronizes a communicator that
 *                                       another aborts and then drops (the wait of its
 *                                       request): the synchronize must return an
 *                                       error, not read unmapped segments
 *   fault_rank unwaited-destroy         40 communicators, each destroyed with an all-reduce
 *                                       nobody waited for: their shared segments must be
 *                                       unmapped at once, and the late waits succeed
 *   fault_rank unmatched-send           rank 0 sends rank 1 a small message it never receives
 *                                       (the send completes at once), then both all-reduce:
 *                                       both destroys must return COLLIE_ERR_MISMATCH naming the
 *                                       message that was never received
 *   fault_rank dead-in-destroy VICTIM   after an all-reduce the victim exits without destroying
 *                                       (_exit) while the others are in collie_comm_destroy:
 *                                       theirs must end within 5 s, not after
 *                                       COLLIE_EXEC_TIMEOUT (the script checks that their logs
 *                                       name the victim)
 *   fault_rank uneven-destroy           three threads: rank 0 completes an allreduce of 0
 *                                       elements and destroys; the others learn that it did
 *   fault_rank two-threads              two threads of one rank call collectives (or
 *                                       collie_comm_split) on one communicator at once:
 *                                       refused on every rank
 *   fault_rank stale-handles            requests and communicators used after they were
 *                                       freed (waited twice, destroyed after abort, ...) are
 *                                       refused; two threads waiting for one request;
 *                                       an abort during a destroy is safe
 *   fault_rank signal-abort             a signal handler aborts a communicator in use
 *   fault_rank early-destroy            rank 1 destroys after one all-reduce while the others call a
 *                                       second (as a rank that gives up after an error would): each
 *                                       must fail (in either) within 5 s with COLLIE_ERR_REMOTE naming
 *                                       rank 1
 *   fault_rank frozen-relay             3 ranks over TCP: rank 0 (which passes failure
 *                                       notices on) stops itself for 4 s, rank 2 aborts, and
 *                                       rank 1, in a receive from rank 2, must fail within
 *                                       3.5 s saying that rank 2 aborted
 *   fault_rank p2p-left                 3 ranks, two communicators split off one: on the first,
 *                                       rank 1 sends rank 0 two small messages and destroys;
 *                                       rank 0 (after waiting for the goodbye to arrive) must
 *                                       still receive both, and its third receive from rank 1
 *                                       must fail within 5 s with COLLIE_ERR_REMOTE naming rank
 *                                       1 and "destroyed". On the second, rank 0 sends rank 1
 *                                       1 MiB messages that rank 1 never receives (it
 *                                       destroys): the first that cannot complete into buffers
 *                                       must fail alike. Rank 1's destroys end within 5 s
 *
 * Ranks come from COLLIE_RANK/COLLIE_NRANKS/COLLIE_ROOT_ADDR (collie_comm_init_env). Every
 * outcome is printed as one line; the exit status says pass (0) or fail (1). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
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
    /* "ready" only once the child's pid is in the file: the test reads it then, and a
     * child not yet scheduled failed the test once under load ("the victim's child is not
     * running"). */
    int written[2];
    if (pipe(written) != 0) return 1;
    pid_t child = fork();
    if (child == 0) {
      close(written[0]);
      FILE *f = fopen(child_pid_file, "w");
      if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
      }
      close(written[1]); /* the parent's read returns */
      sleep(30);
      _exit(0);
    }
    close(written[1]);
    char c;
    while (child > 0 && read(written[0], &c, 1) < 0 && errno == EINTR) {
    }
    close(written[0]);
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
    /* ... and rank 1, asked what it waits for, said it was not in collie (busy elsewhere) */
    ok = r == COLLIE_ERR_TIMEOUT && strstr(msg, "rank 0 timed out") && strstr(msg, "rank 1") && strstr(msg, "recv") &&
         strstr(msg, "is not waiting without progress in collie") && dt < 5;
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

static int one_thread_destroy(void) {
  collie_comm_t *comms[2];
  collie_result_t r = collie_comm_init_all(comms, 2);
  if (r) return fail("init_all", r, NULL);
  double t0 = now_s();
  collie_result_t r0 = collie_comm_destroy(comms[0]);
  double t1 = now_s();
  collie_result_t r1 = collie_comm_destroy(comms[1]);
  double t2 = now_s();
  printf("destroy of rank 0: %s after %.1f s; of rank 1: %s after %.1f s\n", collie_get_error_string(r0), t1 - t0,
         collie_get_error_string(r1), t2 - t1);
  return r0 || r1 || t2 - t1 > 1;
}

static int zero_count(void) {
  collie_comm_t *comm;
  int rank, n;
  if (init_rank(&comm, &rank)) return 1;
  collie_comm_size(comm, &n);
  int32_t send[64] = {0}, recv[64];
  float one = 1, sum;
  double t0 = now_s();
  collie_result_t r = collie_alltoall(send, recv, rank == 1 ? 0 : 2, COLLIE_INT32, comm);
  if (!r) r = collie_allreduce(&one, &sum, 1, COLLIE_FLOAT32, COLLIE_SUM, comm);
  double dt = now_s() - t0;
  const char *msg = collie_get_last_error(comm);
  printf("rank %d: %s after %.1f s: %s\n", rank, collie_get_error_string(r), dt, msg);
  bool ok = n <= 32 && r == COLLIE_ERR_MISMATCH && dt < 5 && strstr(msg, "rank 1 ") && strstr(msg, "without reaching");
  collie_comm_destroy(comm);
  return ok ? 0 : 1;
}

static int late_root(void) {
  collie_comm_t *comm;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  int64_t me = (int64_t)getpid(), pids[2] = {0, 0};
  collie_result_t r = collie_allgather(&me, pids, 1, COLLIE_INT64, comm);
  if (r) return fail("allgather of pids", r, comm);
  float x = 1, y = 0;
  if (rank == 0) sleep(6);
  double t0 = now_s();
  r = collie_reduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, 0, comm);
  if (!r && rank == 1) r = collie_comm_synchronize(comm);
  const double dt = now_s() - t0;
  const char *msg = collie_get_last_error(comm);
  printf("rank %d: %s after %.1f s: %s\n", rank, collie_get_error_string(r), dt, msg);
  char pid[48];
  snprintf(pid, sizeof(pid), "(pid %lld on host", (long long)pids[0]);
  const bool ok = rank == 0 ? r != COLLIE_SUCCESS : r == COLLIE_ERR_TIMEOUT && dt < 5 && strstr(msg, pid);
  collie_comm_destroy(comm);
  return ok ? 0 : 1;
}

/* collie_wait, or a loop of collie_test (by_test) as programs that poll do. */
static collie_result_t wait_or_test(collie_request_t *q, bool by_test) {
  if (!by_test) return collie_wait(q);
  int done = 0;
  collie_result_t r;
  while (!(r = collie_test(q, &done)) && !done) {
  }
  return r;
}

static int cross_blocking(void) {
  collie_comm_t *world, *dup, *other;
  int rank, n;
  if (init_rank(&world, &rank)) return 1;
  collie_comm_size(world, &n);
  collie_result_t r = collie_comm_split(world, 0, rank, &dup);
  if (r) return fail("split", r, world);
  enum { COUNT = 1 << 18 };
  float *a = malloc(COUNT * sizeof(float)), *b = malloc(COUNT * sizeof(float)), *c = malloc(COUNT * sizeof(float));
  if (!a || !b || !c) return 2;
  for (int i = 0; i < COUNT; i++) a[i] = 1;
  collie_request_t *qw, *qd;
  double t0 = now_s();
  /* synchronize, in opposite orders */
  if ((r = collie_iallreduce(a, b, COUNT, COLLIE_FLOAT32, COLLIE_SUM, world, &qw)) ||
      (r = collie_iallreduce(a, c, COUNT, COLLIE_FLOAT32, COLLIE_SUM, dup, &qd)))
    return fail("iallreduce", r, world);
  collie_result_t s1 = collie_comm_synchronize(rank == 0 ? world : dup);
  collie_result_t s2 = collie_comm_synchronize(rank == 0 ? dup : world);
  if (!s1 && !s2) s1 = collie_wait(qw), s2 = collie_wait(qd);
  double dt1 = now_s() - t0;
  int wrong = 0;
  for (int i = 0; i < COUNT; i++) wrong += b[i] != (float)n || c[i] != (float)n;
  /* destroy and wait, in opposite orders */
  t0 = now_s();
  if ((r = collie_iallreduce(a, b, COUNT, COLLIE_FLOAT32, COLLIE_SUM, dup, &qd))) return fail("iallreduce", r, world);
  if ((r = collie_comm_split(world, 0, rank, &other))) return fail("split with an all-reduce in flight", r, world);
  collie_result_t rd, rw;
  if (rank == 0) {
    rd = collie_comm_destroy(other);
    rw = collie_wait(qd);
  } else {
    rw = collie_wait(qd);
    rd = collie_comm_destroy(other);
  }
  double dt2 = now_s() - t0;
  for (int i = 0; i < COUNT; i++) wrong += b[i] != (float)n;
  /* create a communicator from a unique id and wait, in opposite orders */
  collie_unique_id_t id;
  if (rank == 0 && (r = collie_get_unique_id(&id))) return fail("collie_get_unique_id", r, world);
  if ((r = collie_broadcast(&id, &id, sizeof(id), COLLIE_UINT8, 0, world))) return fail("broadcast of the id", r, world);
  t0 = now_s();
  if ((r = collie_iallreduce(a, c, COUNT, COLLIE_FLOAT32, COLLIE_SUM, dup, &qd))) return fail("iallreduce", r, world);
  collie_result_t ri;
  if (rank == 0) {
    ri = collie_comm_init_rank(&other, n, id, rank);
    rw = rw ? rw : collie_wait(qd);
  } else {
    rw = rw ? rw : collie_wait(qd);
    ri = collie_comm_init_rank(&other, n, id, rank);
  }
  double dt3 = now_s() - t0;
  for (int i = 0; i < COUNT; i++) wrong += c[i] != (float)n;
  if (!ri) collie_comm_destroy(other);
  printf("rank %d: synchronizes %s and %s after %.2f s; destroy %s, wait %s after %.2f s; creation %s after %.2f s; "
         "%d wrong sums\n",
         rank, collie_get_error_string(s1), collie_get_error_string(s2), dt1, collie_get_error_string(rd),
         collie_get_error_string(rw), dt2, collie_get_error_string(ri), dt3, wrong);
  free(a);
  free(b);
  free(c);
  collie_comm_destroy(dup);
  collie_comm_destroy(world);
  return s1 || s2 || rd || rw || ri || wrong || dt1 > 5 || dt2 > 5 || dt3 > 5;
}

/* The pid of the last of comm's n ranks, which the others' sentences must name. */
static collie_result_t pid_of_last(collie_comm_t *comm, int n, int64_t *pid) {
  int64_t me = (int64_t)getpid(), *all = calloc((size_t)n, sizeof(int64_t));
  collie_result_t r = all ? collie_allgather(&me, all, 1, COLLIE_INT64, comm) : COLLIE_ERR_SYSTEM;
  *pid = r ? 0 : all[n - 1];
  free(all);
  return r;
}

static int late_rank(void) {
  collie_comm_t *comm;
  int rank, n;
  if (init_rank(&comm, &rank)) return 1;
  collie_comm_size(comm, &n);
  int64_t late;
  collie_result_t r = pid_of_last(comm, n, &late);
  if (r) return fail("allgather of pids", r, comm);
  float x = 1, y = 0;
  if (rank == n - 1) {
    const char *t = getenv("COLLIE_EXEC_TIMEOUT");
    sleep((unsigned)(t ? atoi(t) : 0) + 2);
  }
  r = collie_allreduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, comm);
  const char *msg = collie_get_last_error(comm);
  printf("rank %d: %s: %s\n", rank, collie_get_error_string(r), msg);
  char pid[48];
  snprintf(pid, sizeof(pid), "(pid %lld on host", (long long)late);
  const bool ok = rank == n - 1 ? r != COLLIE_SUCCESS
                                : r == COLLIE_ERR_TIMEOUT && strstr(msg, pid) &&
                                      strstr(msg, "is not waiting without progress in collie");
  collie_comm_destroy(comm);
  return ok ? 0 : 1;
}

static int late_chain(void) {
  collie_comm_t *comm;
  int rank, n;
  if (init_rank(&comm, &rank)) return 1;
  collie_comm_size(comm, &n);
  int64_t last;
  collie_result_t r = n == 3 ? pid_of_last(comm, n, &last) : COLLIE_ERR_INVALID_ARGUMENT;
  if (r) return fail("allgather of pids (3 ranks)", r, comm);
  const char *t = getenv("COLLIE_EXEC_TIMEOUT");
  const unsigned timeout = t ? (unsigned)atoi(t) : 0;
  int x = rank;
  double t0 = now_s();
  if (rank == 0) {
    r = collie_recv(&x, 1, COLLIE_INT32, 1, comm);
  } else if (rank == 1) {
    /* past rank 0's first stall report (half the timeout), short of its timeout */
    usleep(timeout * 625000u);
    r = collie_recv(&x, 1, COLLIE_INT32, 2, comm);
  } else {
    sleep(timeout + 3);
    r = collie_send(&x, 1, COLLIE_INT32, 1, comm);
  }
  const double dt = now_s() - t0;
  const char *msg = collie_get_last_error(comm);
  printf("rank %d: %s after %.1f s: %s\n", rank, collie_get_error_string(r), dt, msg);
  char pid[48];
  snprintf(pid, sizeof(pid), "(pid %lld on host", (long long)last);
  const bool ok = rank ? r != COLLIE_SUCCESS
                       : r == COLLIE_ERR_TIMEOUT && strstr(msg, "rank 0 timed out") && strstr(msg, pid) &&
                             dt < timeout + 2;
  collie_comm_destroy(comm);
  return ok ? 0 : 1;
}

static int long_chain(void) {
  collie_comm_t *comm;
  int rank, n;
  const char *t = getenv("COLLIE_EXEC_TIMEOUT");
  const unsigned timeout = t ? (unsigned)atoi(t) : 0;
  /* rank 0's timeout first: each rank's own sentence would name only its own part of the
   * chain (the report interval stays 2 s) */
  const char *me_env = getenv("COLLIE_RANK");
  if (me_env && atoi(me_env) > 0) {
    char later[16];
    snprintf(later, sizeof(later), "%u", 2 * timeout);
    setenv("COLLIE_EXEC_TIMEOUT", later, 1);
  }
  if (init_rank(&comm, &rank)) return 1;
  collie_comm_size(comm, &n);
  int64_t last;
  collie_result_t r = pid_of_last(comm, n, &last);
  if (r) return fail("allgather of pids", r, comm);
  int x = rank;
  double t0 = now_s();
  if (rank < n - 1) {
    r = collie_recv(&x, 1, COLLIE_INT32, rank + 1, comm);
  } else {
    sleep(timeout + 3);
    r = collie_send(&x, 1, COLLIE_INT32, rank - 1, comm);
  }
  const double dt = now_s() - t0;
  const char *msg = collie_get_last_error(comm);
  printf("rank %d: %s after %.1f s: %s\n", rank, collie_get_error_string(r), dt, msg);
  char pid[48];
  snprintf(pid, sizeof(pid), "(pid %lld on host", (long long)last);
  /* the last rank's own answer: "rank 4 (pid ... on host ...) is not waiting ...", wherever
   * the sentence names that pid */
  bool answered = false;
  for (const char *at = strstr(msg, pid); at && !answered; at = strstr(at + 1, pid)) {
    const char *close = strchr(at, ')');
    answered = close && !strncmp(close, ") is not waiting without progress in collie", 43);
  }
  const bool ok = rank ? r != COLLIE_SUCCESS
                       : r == COLLIE_ERR_TIMEOUT && strstr(msg, "rank 0 timed out") && answered && dt < timeout + 2;
  collie_comm_destroy(comm);
  return ok ? 0 : 1;
}

static int cross_wait(bool by_test, int fillers) {
  collie_comm_t *world, *split = NULL, *filler[8];
  int rank, n;
  if (init_rank(&world, &rank)) return 1;
  collie_comm_size(world, &n);
  /* Communicators used before, idle now: they must not shut the two below out of this
   * thread's list of communicators to move (progress_others.c, 8 places). */
  for (int i = 0; i < fillers; i++) {
    collie_request_t *q;
    collie_result_t r = collie_comm_split(world, 0, rank, &filler[i]);
    if (!r) r = collie_ibarrier(filler[i], &q);
    if (!r) r = collie_wait(q);
    if (r) return fail("filler", r, world);
  }
  collie_result_t r = collie_comm_split(world, 0, rank, &split);
  if (r) return fail("split", r, world);
  /* After the fillers, both pending operations go on new communicators: the world was in
   * the list before them (collie_comm_split posts on it). */
  collie_comm_t *first = world;
  if (fillers && (r = collie_comm_split(world, 0, rank, &first))) return fail("split", r, world);
  enum { COUNT = 1000 };
  static float a[COUNT], b[COUNT], ra[COUNT], rb[COUNT];
  for (int i = 0; i < COUNT; i++) a[i] = 1, b[i] = 2;
  collie_request_t *qa, *qb;
  double t0 = now_s();
  if ((r = collie_iallreduce(a, ra, COUNT, COLLIE_FLOAT32, COLLIE_SUM, first, &qa)) ||
      (r = collie_iallreduce(b, rb, COUNT, COLLIE_FLOAT32, COLLIE_SUM, split, &qb)))
    return fail("iallreduce", r, world);
  collie_result_t r1 = wait_or_test(rank == 0 ? qb : qa, by_test), r2 = wait_or_test(rank == 0 ? qa : qb, by_test);
  double dt = now_s() - t0;
  int wrong = 0;
  for (int i = 0; i < COUNT; i++) wrong += ra[i] != (float)n || rb[i] != (float)(2 * n);
  printf("rank %d: waits returned %s and %s after %.2f s, %d wrong sums\n", rank, collie_get_error_string(r1),
         collie_get_error_string(r2), dt, wrong);
  collie_comm_destroy(split);
  if (first != world) collie_comm_destroy(first);
  for (int i = 0; i < fillers; i++) collie_comm_destroy(filler[i]);
  collie_comm_destroy(world);
  return r1 || r2 || wrong || dt > 5;
}

/* sync-abort: a thread inside collie_comm_synchronize while another aborts the
 * communicator and then drops its last reference (the wait of its only request). */
static collie_comm_t *sync_comm;
static collie_result_t sync_result;
static void *synchronizer(void *unused) {
  (void)unused;
  sync_result = collie_comm_synchronize(sync_comm);
  return NULL;
}

static int sync_abort(void) {
  collie_comm_t *world, *busy[8];
  int rank, n, bad = 0;
  if (init_rank(&world, &rank)) return 1;
  collie_comm_size(world, &n);
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  /* Eight communicators with a receive pending until the end fill this thread's list of
   * communicators to move (progress_others.c): it holds no reference to the aborted one. */
  int32_t got[8], one = 1;
  collie_request_t *pending[8];
  for (int i = 0; i < 8; i++) {
    collie_result_t r = collie_comm_split(world, 0, rank, &busy[i]);
    if (!r) r = collie_irecv(&got[i], 1, COLLIE_INT32, right, busy[i], &pending[i]);
    if (r) return fail("split or irecv", r, world);
  }
  for (int it = 0; it < 20; it++) {
    collie_request_t *q;
    int32_t never;
    collie_result_t r = collie_comm_split(world, 0, rank, &sync_comm);
    if (!r) r = collie_irecv(&never, 1, COLLIE_INT32, right, sync_comm, &q); /* nobody sends it */
    if (r) return fail("split or irecv", r, world);
    pthread_t t;
    if (pthread_create(&t, NULL, synchronizer, NULL)) return 1;
    usleep(20000); /* the thread sleeps in its wait by now */
    collie_comm_abort(sync_comm);
    /* ABORTED, or REMOTE where the other rank's abort arrived first */
    bad += collie_wait(q) == COLLIE_SUCCESS;
    pthread_join(t, NULL);
    bad += sync_result == COLLIE_SUCCESS;
    if ((r = collie_barrier(world))) return fail("barrier", r, world);
  }
  for (int i = 0; i < 8; i++) {
    collie_result_t r = collie_send(&one, 1, COLLIE_INT32, left, busy[i]);
    if (!r) r = collie_wait(pending[i]);
    if (!r) r = collie_comm_destroy(busy[i]);
    if (r) return fail("send, wait or destroy", r, world);
  }
  printf("rank %d: 20 aborts while another thread synchronized: %d unexpected results\n", rank, bad);
  collie_comm_destroy(world);
  return bad != 0;
}

/* Mappings of shared segments in this process (/proc/self/maps lines naming collie). */
static int collie_mappings(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f)) n += strstr(line, "collie") != NULL;
  fclose(f);
  return n;
}

static int unwaited_destroy(void) {
  collie_comm_t *world;
  int rank;
  if (init_rank(&world, &rank)) return 1;
  enum { COMMS = 40, COUNT = 1 << 14 };
  static int32_t a[COUNT], b[COUNT];
  static collie_request_t *reqs[COMMS];
  const int before = collie_mappings();
  for (int i = 0; i < COMMS; i++) {
    collie_comm_t *c;
    collie_result_t r = collie_comm_split(world, 0, rank, &c);
    if (r) return fail("split", r, world);
    if ((r = collie_iallreduce(a, b, COUNT, COLLIE_INT32, COLLIE_SUM, c, &reqs[i]))) return fail("iallreduce", r, c);
    if ((r = collie_comm_destroy(c))) return fail("destroy", r, NULL);
  }
  const int after = collie_mappings();
  int bad = 0;
  for (int i = 0; i < COMMS; i++) bad += collie_wait(reqs[i]) != COLLIE_SUCCESS;
  printf("rank %d: %d mappings of shared segments before %d communicators destroyed with a request pending, "
         "%d after; %d of the late waits failed\n",
         rank, before, COMMS, after, bad);
  collie_comm_destroy(world);
  return before < 0 || after > before + 2 || bad;
}

static int unmatched_send(void) {
  collie_comm_t *comm;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  int32_t x = 7, one = 1, sum = 0;
  collie_result_t r = rank == 0 ? collie_send(&x, 1, COLLIE_INT32, 1, comm) : COLLIE_SUCCESS;
  if (!r) r = collie_allreduce(&one, &sum, 1, COLLIE_INT32, COLLIE_SUM, comm);
  if (r) return fail("send or allreduce", r, comm);
  r = collie_comm_destroy(comm);
  const char *msg = collie_get_last_error(NULL);
  printf("rank %d: destroy returned %s: %s\n", rank, collie_get_error_string(r), msg);
  return !(r == COLLIE_ERR_MISMATCH && strstr(msg, "1 message(s)") && strstr(msg, "never received"));
}

static int split_fails(void) {
  collie_comm_t *comm, *child = NULL;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  double t0 = now_s();
  collie_result_t r = collie_comm_split(comm, 0, rank, &child);
  double dt = now_s() - t0;
  const char *msg = collie_get_last_error(comm);
  printf("rank %d: split returned %s after %.1f s: %s\n", rank, collie_get_error_string(r), dt, r ? msg : "");
  bool ok = r != COLLIE_SUCCESS && dt < 5 && strstr(msg, "could not listen for the new communicator");
  if (child) collie_comm_destroy(child);
  collie_comm_destroy(comm);
  return ok ? 0 : 1;
}

static int dead_in_destroy(int victim) {
  collie_comm_t *comm;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  int one = 1, sum = 0;
  collie_result_t r = collie_allreduce(&one, &sum, 1, COLLIE_INT32, COLLIE_SUM, comm);
  if (r) return fail("allreduce", r, comm);
  if (rank == victim) {
    usleep(500000); /* the others are in their destroy by now */
    printf("rank %d: exits without destroying\n", rank);
    fflush(stdout);
    _exit(0);
  }
  double t0 = now_s();
  r = collie_comm_destroy(comm);
  double dt = now_s() - t0;
  printf("rank %d: destroy returned %s after %.1f s\n", rank, collie_get_error_string(r), dt);
  return dt < 5 ? 0 : 1;
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

/* `call` must return `code` with a sentence (comm's last error, or the thread's when comm
 * is NULL) that contains `word`. */
#define EXPECT_CODE(call, code, errcomm, word)                                                             \
  do {                                                                                                     \
    collie_result_t r_ = (call);                                                                           \
    const char *m_ = collie_get_last_error(errcomm);                                                       \
    if (r_ != (code) || !strstr(m_, word)) {                                                               \
      fprintf(stderr, "rank %d: %s returned %s (%s), expected %s with a sentence\n", rank, #call,           \
              collie_get_error_string(r_), m_, collie_get_error_string(code));                            \
      a->rc = 1;                                                                                           \
    }                                                                                                      \
  } while (0)
#define EXPECT_BAD(call) EXPECT_CODE(call, COLLIE_ERR_INVALID_ARGUMENT, comm, "rank")

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
  /* Displacements whose blocks wrap around the address space (one wrote 4 bytes before the
   * receive buffer and returned success). */
  size_t wrap[2] = {0, SIZE_MAX / 4};
  EXPECT_BAD(collie_allgatherv(buf, 4, out, counts, wrap, COLLIE_FLOAT32, comm));
  EXPECT_BAD(collie_alltoallv(buf, counts, displs, out, counts, wrap, COLLIE_FLOAT32, comm));
  EXPECT_BAD(collie_alltoallv(buf, counts, wrap, out, counts, displs, COLLIE_FLOAT32, comm));
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
    /* The aborted root tells us: our pending receive fails, saying so (it said that rank 0
     * "died or closed its connection without destroying the communicator"). */
    collie_result_t r = collie_recv(&x, 1, COLLIE_INT32, 0, a->comm);
    printf("rank 1: %s: %s\n", collie_get_error_string(r), collie_get_last_error(a->comm));
    a->rc = !(r == COLLIE_ERR_REMOTE && strstr(collie_get_last_error(a->comm), "rank 0 (pid ") &&
              strstr(collie_get_last_error(a->comm), ") aborted its communicator"));
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

/* Rank 0 calls allreduce with count 0 (complete at once), ranks 1 and 2 with count 4, as
 * when the last batch is empty on one rank only; then rank 0 destroys its communicator.
 * Ranks 1 and 2 must learn that rank 0 destroyed it (they were told it "died or closed
 * its connection without destroying the communicator"). Rank 0's exec timeout is 2 s,
 * theirs 4 s (uneven_destroy): their own timeouts must not come first. */
static void *uneven_destroy_thread(void *p) {
  targ_t *a = p;
  int rank;
  collie_comm_rank(a->comm, &rank);
  float in[4] = {1, 2, 3, 4}, out[4];
  double t0 = now_s();
  collie_result_t r = collie_allreduce(in, out, rank == 0 ? 0 : 4, COLLIE_FLOAT32, COLLIE_SUM, a->comm);
  if (rank == 0) {
    collie_result_t d = collie_comm_destroy(a->comm);
    printf("rank 0: allreduce of 0 elements %s, destroy %s after %.1f s\n", collie_get_error_string(r),
           collie_get_error_string(d), now_s() - t0);
    a->rc = r || d || now_s() - t0 > 10;
    return NULL;
  }
  const char *msg = collie_get_last_error(a->comm);
  printf("rank %d: %s after %.1f s: %s\n", rank, collie_get_error_string(r), now_s() - t0, msg);
  a->rc = !(r == COLLIE_ERR_REMOTE && strstr(msg, "rank 0 destroyed its communicator") && !strstr(msg, "died") &&
            now_s() - t0 < 10);
  collie_comm_destroy(a->comm);
  return NULL;
}

/* Two threads of rank 0 on one communicator: thread A is inside a blocking allreduce
 * (rank 1 joins late), thread B calls another. Every call must fail with
 * COLLIE_ERR_INVALID_USAGE naming the overlap, on both ranks and at once: the ranks cannot
 * pair two threads' collectives, and same-size calls were paired crosswise into wrong sums
 * without an error. Then, on a new pair of communicators, collectives handed from one
 * thread to the next (never at once) still work. */
typedef struct {
  collie_comm_t *comm;
  collie_result_t r;
  float out;
  int color; /* split_call */
} call_t;

static void *allreduce_call(void *p) {
  call_t *c = p;
  float in = 1;
  c->r = collie_allreduce(&in, &c->out, 1, COLLIE_FLOAT32, COLLIE_SUM, c->comm);
  return NULL;
}

/* Rank 1 makes `call` with ca 300 ms late; rank 0 makes it from two threads, with ca and,
 * 100 ms later (ca's call is then waiting for rank 1), with cb. */
static void overlapping_calls(int rank, void *(*call)(void *), void *ca, void *cb) {
  if (rank == 1) {
    usleep(300000);
    call(ca);
    return;
  }
  pthread_t ta, tb;
  pthread_create(&ta, NULL, call, ca);
  usleep(100000);
  pthread_create(&tb, NULL, call, cb);
  pthread_join(tb, NULL);
  pthread_join(ta, NULL);
}

static void *two_threads_thread(void *p) {
  targ_t *a = p;
  int rank;
  collie_comm_rank(a->comm, &rank);
  double t0 = now_s();
  call_t ca = {a->comm, 0, 0, 0}, cb = {a->comm, 0, 0, 0};
  overlapping_calls(rank, allreduce_call, &ca, &cb);
  const char *msg = collie_get_last_error(a->comm);
  if (rank == 1) {
    printf("rank 1: %s after %.1f s: %s\n", collie_get_error_string(ca.r), now_s() - t0, msg);
    a->rc = !(ca.r == COLLIE_ERR_INVALID_USAGE && strstr(msg, "another thread") && now_s() - t0 < 5);
  } else {
    printf("rank 0: thread A %s, thread B %s: %s\n", collie_get_error_string(ca.r), collie_get_error_string(cb.r), msg);
    a->rc = !(ca.r == COLLIE_ERR_INVALID_USAGE && cb.r == COLLIE_ERR_INVALID_USAGE && strstr(msg, "another thread") &&
              strstr(msg, "allreduce #1") && now_s() - t0 < 5);
  }
  collie_comm_destroy(a->comm);
  return NULL;
}

static void *handoff_thread(void *p) {
  targ_t *a = p;
  for (int i = 0; i < 4 && !a->rc; i++) { /* each call from a new thread, one after the other */
    call_t c = {a->comm, 0, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, allreduce_call, &c);
    pthread_join(t, NULL);
    if (c.r || c.out != 2.0f) {
      printf("handoff call %d: %s, %g: %s\n", i, collie_get_error_string(c.r), (double)c.out,
             collie_get_last_error(a->comm));
      a->rc = 1;
    }
  }
  collie_comm_destroy(a->comm);
  return NULL;
}

/* Handles used after they were freed, as MPI users do (MPI sets a waited request and a
 * freed communicator to a null handle; collie cannot change the caller's variable): each
 * must be refused with COLLIE_ERR_INVALID_USAGE. They read freed memory (and could wait
 * for whichever request reused it). */
#define EXPECT_USAGE(call) EXPECT_CODE(call, COLLIE_ERR_INVALID_USAGE, NULL, "already")

static void *stale_handles_thread(void *p) {
  targ_t *a = p;
  collie_comm_t *comm = a->comm;
  int rank, n, done = 0;
  collie_comm_rank(comm, &rank);
  collie_comm_size(comm, &n);
  float x = 1, y = 0;
  collie_request_t *req;
  if (collie_iallreduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, comm, &req) || collie_wait(req)) a->rc = 1;
  EXPECT_USAGE(collie_wait(req));
  EXPECT_USAGE(collie_test(req, &done));
  if (collie_isend(&x, 1, COLLIE_FLOAT32, (rank + 1) % n, comm, &req)) a->rc = 1;
  collie_request_t *rreq;
  if (collie_irecv(&y, 1, COLLIE_FLOAT32, (rank + n - 1) % n, comm, &rreq) || collie_wait(rreq)) a->rc = 1;
  while (!a->rc && !done)
    if (collie_test(req, &done)) a->rc = 1;
  EXPECT_USAGE(collie_test(req, &done));
  EXPECT_USAGE(collie_wait(req));
  if (collie_comm_destroy(comm)) a->rc = 1;
  EXPECT_USAGE(collie_comm_destroy(comm));
  EXPECT_USAGE(collie_allreduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, comm));
  EXPECT_USAGE(collie_comm_abort(comm));
  return NULL;
}

/* Two threads of rank 0 wait for the same receive at once, 50 times: exactly one must
 * complete it, the other get COLLIE_ERR_INVALID_USAGE. Both completed it, each releasing
 * the request and the communicator (heap-use-after-free under ASan). */
static collie_request_t *shared_req;
static void *wait_shared(void *p) {
  *(collie_result_t *)p = collie_wait(shared_req);
  return NULL;
}

static void *two_waiters_thread(void *p) {
  targ_t *a = p;
  int rank;
  collie_comm_rank(a->comm, &rank);
  float x = 1, y = 0;
  for (int it = 0; it < 50 && !a->rc; it++) {
    if (rank == 1) {
      usleep(200);
      a->rc = collie_send(&x, 1, COLLIE_FLOAT32, 0, a->comm) != COLLIE_SUCCESS;
      continue;
    }
    if (collie_irecv(&y, 1, COLLIE_FLOAT32, 1, a->comm, &shared_req)) a->rc = 1;
    collie_result_t r[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, wait_shared, &r[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    if (!((r[0] == COLLIE_SUCCESS && r[1] == COLLIE_ERR_INVALID_USAGE) ||
          (r[1] == COLLIE_SUCCESS && r[0] == COLLIE_ERR_INVALID_USAGE))) {
      printf("two waiters, repetition %d: %s and %s\n", it, collie_get_error_string(r[0]), collie_get_error_string(r[1]));
      a->rc = 1;
    }
  }
  collie_comm_destroy(a->comm);
  return NULL;
}

/* collie_comm_abort, then collie_comm_destroy (a cleanup path that destroys every
 * communicator it created): the destroy must be refused, not free it again. */
static void *abort_then_destroy_thread(void *p) {
  targ_t *a = p;
  collie_comm_t *comm = a->comm;
  int rank;
  collie_comm_rank(comm, &rank);
  if (collie_comm_abort(comm)) a->rc = 1;
  EXPECT_USAGE(collie_comm_destroy(comm));
  EXPECT_USAGE(collie_barrier(comm));
  return NULL;
}

/* Rank 0 destroys with a receive pending that rank 1 never matches (rank 1 destroys 1 s
 * late): the destroy waits for it; meanwhile the main thread aborts rank 0's communicator
 * (a watchdog ending a stuck shutdown). Both tore it down and dropped the handle: the
 * destroy then used freed memory. The receive's request is then waited for: aborted. */
static collie_comm_t *late_comms[2];
static void *late_destroy_thread(void *p) {
  targ_t *a = p;
  int rank, x = 0;
  collie_comm_rank(a->comm, &rank);
  collie_request_t *req = NULL;
  if (rank == 1) sleep(1);
  else if (collie_irecv(&x, 1, COLLIE_INT32, 1, a->comm, &req)) a->rc = 1;
  double t0 = now_s();
  collie_result_t r = collie_comm_destroy(a->comm);
  printf("rank %d: destroy %s after %.1f s\n", rank, collie_get_error_string(r), now_s() - t0);
  if (r != COLLIE_SUCCESS || (rank == 0 && now_s() - t0 > 0.9)) a->rc = 1;
  if (req && collie_wait(req) != COLLIE_ERR_ABORTED) a->rc = 1;
  return NULL;
}

/* A signal handler aborts rank 0's communicator while rank 0 loops all-reduces with rank 1
 * (as a SIGALRM watchdog or a SIGINT handler would). The handler often interrupts rank 0
 * holding the communicator's lock: the abort waited for it forever (hung 9 times in 12),
 * or tore the communicator down under the interrupted call (SIGSEGV); and the signal could
 * land on collie's own threads, whose state the abort then freed under them. Every
 * repetition must end: rank 0 with COLLIE_ERR_ABORTED (or COLLIE_ERR_INVALID_USAGE for the
 * freed handle), rank 1 with an error, the handler having run on rank 0's thread (the
 * others block SIGUSR1). */
static collie_comm_t *sig_comms[2];
static _Atomic(pthread_t) sig_thread;
static _Atomic int sig_on_rank0;
static void abort_handler(int sig) {
  (void)sig;
  sig_on_rank0 = pthread_equal(pthread_self(), sig_thread);
  collie_comm_abort(sig_comms[0]);
}

static void *sig_loop_thread(void *p) {
  targ_t *a = p;
  int rank;
  collie_comm_rank(a->comm, &rank);
  sigset_t usr1; /* blocked by the creating thread: rank 0 takes it */
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  if (rank == 0) {
    sig_thread = pthread_self();
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
  }
  float x[64] = {0}, y[64];
  collie_result_t r;
  long n = 0;
  while (!(r = collie_allreduce(x, y, 64, COLLIE_FLOAT32, COLLIE_SUM, a->comm))) n++;
  /* Rank 0: the interrupted call fails as aborted, or, when the signal came between two
   * calls, the next call finds its handle freed. */
  a->rc = rank == 0 ? r != COLLIE_ERR_ABORTED && r != COLLIE_ERR_INVALID_USAGE : r == COLLIE_SUCCESS;
  if (a->rc) printf("rank %d: %s after %ld all-reduces: %s\n", rank, collie_get_error_string(r), n,
                    collie_get_last_error(NULL));
  if (rank == 1) collie_comm_destroy(a->comm);
  return NULL;
}

enum { REPS = 40 }; /* before the fix, a run of 12 hung about one time in two */

static int signal_abort(void) {
  struct sigaction sa = {0};
  sa.sa_handler = abort_handler;
  sigaction(SIGUSR1, &sa, NULL);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL); /* this thread: never the handler's */
  int rc = 0;
  for (int rep = 0; rep < REPS && !rc; rep++) {
    if (collie_comm_init_all(sig_comms, 2)) return 1;
    pthread_t th[2];
    targ_t args[2] = {{sig_comms[0], 0}, {sig_comms[1], 0}};
    sig_thread = (pthread_t)0;
    sig_on_rank0 = 0;
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, sig_loop_thread, &args[i]);
    usleep((useconds_t)(2000 + (rep * 7919) % 40000));
    kill(getpid(), SIGUSR1); /* to the process: any thread that does not block it */
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    rc = args[0].rc | args[1].rc | !sig_on_rank0;
    if (!sig_on_rank0) printf("repetition %d: the handler ran on a thread other than rank 0's\n", rep);
  }
  printf("signal-abort: %s\n", rc ? "FAILED" : "every repetition ended");
  return rc;
}

/* The same with collie_comm_split: rank 0's thread A splits (rank 1 joins late), thread
 * B splits meanwhile. Two threads splitting one communicator at once had their exchanges
 * paired crosswise and got communicators of the wrong ranks (size 1 instead of 2) without
 * an error. */
static void *split_call(void *p) {
  call_t *c = p;
  collie_comm_t *nc = NULL;
  c->r = collie_comm_split(c->comm, c->color, 0, &nc);
  if (nc) collie_comm_destroy(nc);
  return NULL;
}

static void *two_splits_thread(void *p) {
  targ_t *a = p;
  int rank;
  collie_comm_rank(a->comm, &rank);
  call_t ca = {a->comm, 0, 0, 0}, cb = {a->comm, 0, 0, 1};
  overlapping_calls(rank, split_call, &ca, &cb);
  if (rank == 1) a->rc = ca.r != COLLIE_ERR_INVALID_USAGE;
  else
    a->rc = ca.r != COLLIE_ERR_INVALID_USAGE || cb.r != COLLIE_ERR_INVALID_USAGE ||
            !strstr(collie_get_last_error(a->comm), "inside collie_comm_split");
  if (a->rc) printf("rank %d: splits from two threads: %s, %s: %s\n", rank, collie_get_error_string(ca.r),
                    collie_get_error_string(cb.r), collie_get_last_error(a->comm));
  collie_comm_destroy(a->comm);
  return NULL;
}

static int threads(int n, void *(*fn)(void *));
static int threads_on(collie_comm_t **comms, int n, void *(*fn)(void *), collie_comm_t *abort_after, int abort_us);

static int stale_handles(void) {
  int rc = threads(2, stale_handles_thread) | threads(2, abort_then_destroy_thread) | threads(2, two_waiters_thread);
  if (collie_comm_init_all(late_comms, 2)) return 1;
  return rc | threads_on(late_comms, 2, late_destroy_thread, late_comms[0], 300000);
}

static int two_threads(void) {
  return threads(2, two_threads_thread) | threads(2, handoff_thread) | threads(2, two_splits_thread);
}

/* Runs fn for each of n ranks, one thread each; `abort_after` (if any) is aborted by the
 * calling thread abort_us microseconds after they start. */
static int threads_on(collie_comm_t **comms, int n, void *(*fn)(void *), collie_comm_t *abort_after, int abort_us) {
  pthread_t th[3];
  targ_t args[3];
  for (int i = 0; i < n; i++) args[i] = (targ_t){comms[i], 0};
  for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, fn, &args[i]);
  int rc = 0;
  if (abort_after) {
    usleep((useconds_t)abort_us);
    rc = collie_comm_abort(abort_after) != COLLIE_SUCCESS;
  }
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    rc |= args[i].rc;
  }
  return rc;
}

/* uneven-destroy's ranks: created one per thread, rank 0 with a 2 s exec timeout and the
 * others with 4 s. */
typedef struct {
  collie_unique_id_t id;
  int rank;
  collie_comm_t *comm;
} make_arg_t;

static void *make_rank(void *p) {
  make_arg_t *m = p;
  collie_config_t cfg = COLLIE_CONFIG_INIT;
  cfg.exec_timeout_ms = m->rank == 0 ? 2000 : 4000;
  if (collie_comm_init_rank_config(&m->comm, 3, m->id, m->rank, &cfg)) m->comm = NULL;
  return NULL;
}

static int uneven_destroy(void) {
  make_arg_t m[3];
  collie_comm_t *comms[3];
  pthread_t th[3];
  if (collie_get_unique_id(&m[0].id)) return 1;
  for (int i = 0; i < 3; i++) {
    m[i].id = m[0].id;
    m[i].rank = i;
    pthread_create(&th[i], NULL, make_rank, &m[i]);
  }
  int made = 1;
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    comms[i] = m[i].comm;
    made &= comms[i] != NULL;
  }
  if (!made) return fail("init", COLLIE_ERR_INTERNAL, NULL);
  return threads_on(comms, 3, uneven_destroy_thread, NULL, 0);
}

static int threads(int n, void *(*fn)(void *)) {
  collie_comm_t *comms[3];
  collie_result_t r = collie_comm_init_all(comms, n);
  if (r) return fail("init_all", r, NULL);
  return threads_on(comms, n, fn, NULL, 0);
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

/* frozen-relay: rank 0, which passes failure notices on, stops itself (a child resumes it
 * after 4 s); rank 2 aborts; rank 1, waiting to receive from rank 2 over TCP, must fail
 * before rank 0 is back with a sentence that says rank 2 aborted (its last words on the
 * connection), not that rank 2 "closed its connection". */
static int frozen_relay(void) {
  collie_comm_t *comm;
  int rank;
  if (init_rank(&comm, &rank)) return 1;
  collie_result_t r = collie_barrier(comm);
  if (r) return fail("barrier", r, comm);
  if (rank == 0) {
    const pid_t me = getpid(), child = fork();
    if (child == 0) {
      sleep(4);
      kill(me, SIGCONT);
      _exit(0);
    }
    raise(SIGSTOP);
    collie_comm_abort(comm); /* the others have gone */
    printf("rank 0: resumed\n");
    return 0;
  }
  if (rank == 2) {
    usleep(1000 * 1000); /* rank 0 is stopped by then, rank 1 waits */
    collie_comm_abort(comm);
    printf("rank 2: aborted\n");
    return 0;
  }
  float x[4];
  const double t0 = now_s();
  r = collie_recv(x, 4, COLLIE_FLOAT32, 2, comm);
  const double dt = now_s() - t0;
  const char *e = collie_get_last_error(comm);
  printf("rank 1: the receive returned %s after %.1f s: %s\n", collie_get_error_string(r), dt, e);
  const bool said = strstr(e, "rank 2 ") && strstr(e, "aborted its communicator");
  collie_comm_abort(comm);
  return r && said && dt < 3.5 ? 0 : 1;
}

/* Whether the communicator's last error names rank 1 as the one that destroyed. */
static bool names_departed_1(const collie_comm_t *comm) {
  const char *e = collie_get_last_error(comm);
  return strstr(e, "rank 1 ") && strstr(e, "destroyed its communicator");
}

/* p2p-left, first communicator: a receive rank 1 never sends fails; the two it did send
 * arrive although its goodbye got here first. */
static int p2p_left_recv(collie_comm_t *comm, int rank) {
  float small[16], more[1000];
  for (int i = 0; i < 16; i++) small[i] = (float)i;
  for (int i = 0; i < 1000; i++) more[i] = (float)(2 * i);
  if (rank == 1) {
    collie_result_t r = collie_send(small, 16, COLLIE_FLOAT32, 0, comm);
    if (!r) r = collie_send(more, 1000, COLLIE_FLOAT32, 0, comm);
    if (r) return fail("rank 1's sends", r, comm);
    double t0 = now_s();
    r = collie_comm_destroy(comm);
    double dt = now_s() - t0;
    printf("rank 1: destroy after two sends returned %s after %.1f s\n", collie_get_error_string(r), dt);
    return r == COLLIE_SUCCESS && dt < 5 ? 0 : 1;
  }
  int bad = 0;
  if (rank == 0) {
    /* The goodbye (relayed by rank 0's watchdog) lands while the messages still wait
     * unread in the ring or the socket: they must count as sent, not as missing. */
    usleep(500 * 1000);
    float got[1000] = {0};
    collie_result_t r = collie_recv(got, 16, COLLIE_FLOAT32, 1, comm);
    if (r || got[15] != 15.0f) bad |= fail("rank 0's first receive (sent before rank 1 destroyed)", r ? r : COLLIE_ERR_INTERNAL, comm);
    r = collie_recv(got, 1000, COLLIE_FLOAT32, 1, comm);
    if (r || got[999] != 1998.0f) bad |= fail("rank 0's second receive (sent before rank 1 destroyed)", r ? r : COLLIE_ERR_INTERNAL, comm);
    double t0 = now_s();
    r = collie_recv(got, 16, COLLIE_FLOAT32, 1, comm);
    double dt = now_s() - t0;
    printf("rank 0: a receive rank 1 never sent returned %s after %.1f s: %s\n", collie_get_error_string(r), dt,
           collie_get_last_error(comm));
    if (r != COLLIE_ERR_REMOTE || !names_departed_1(comm) || dt >= 5 ||
        !strstr(collie_get_last_error(comm), "after sending it 2 point-to-point messages"))
      bad = 1;
  }
  collie_comm_destroy(comm);
  return bad;
}

/* p2p-left, second communicator: a send that rank 1 never receives fails. */
static int p2p_left_send(collie_comm_t *comm, int rank) {
  if (rank == 1) {
    double t0 = now_s();
    collie_result_t r = collie_comm_destroy(comm);
    double dt = now_s() - t0;
    printf("rank 1: destroy without receiving returned %s after %.1f s\n", collie_get_error_string(r), dt);
    return r == COLLIE_SUCCESS && dt < 5 ? 0 : 1;
  }
  int bad = 0;
  if (rank == 0) {
    /* 1 MiB sends until one cannot complete without rank 1: those the socket buffers (or
     * the shared-memory ring) take complete unreceived, however large the host makes
     * them, and are not what this checks. 64 MiB outlasts any buffer. */
    const size_t count = (size_t)1 << 18;
    float *big = calloc(count, sizeof(float));
    if (!big) return fail("calloc", COLLIE_ERR_SYSTEM, comm);
    double t0 = now_s();
    collie_result_t r = COLLIE_SUCCESS;
    int sent = 0;
    while (!r && sent < 64) {
      r = collie_send(big, count, COLLIE_FLOAT32, 1, comm);
      sent += !r;
    }
    double dt = now_s() - t0;
    free(big);
    printf("rank 0: 1 MiB sends rank 1 never received: %d completed (into buffers), then %s after %.1f s: %s\n",
           sent, collie_get_error_string(r), dt, collie_get_last_error(comm));
    bad = r != COLLIE_ERR_REMOTE || !names_departed_1(comm) || dt >= 5;
  }
  collie_comm_destroy(comm);
  return bad;
}

static int p2p_left(void) {
  collie_comm_t *world, *first, *second;
  int rank;
  if (init_rank(&world, &rank)) return 1;
  collie_result_t r = collie_comm_split(world, 0, rank, &first);
  if (!r) r = collie_comm_split(world, 0, rank, &second);
  if (r) return fail("collie_comm_split", r, world);
  int bad = p2p_left_recv(first, rank);
  bad |= p2p_left_send(second, rank);
  /* The parent was untouched: it still works on every rank. */
  float x = 1, y = 0;
  r = collie_allreduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, world);
  if (r || y != 3.0f) bad |= fail("the all-reduce on the parent communicator", r ? r : COLLIE_ERR_INTERNAL, world);
  collie_comm_destroy(world);
  return bad;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 3 && !strcmp(argv[1], "loop"))
    return loop(atoi(argv[2]), argc < 4                         ? EXCHANGE
                               : !strcmp(argv[3], "allreduce") ? ALLREDUCE
                               : !strcmp(argv[3], "broadcast") ? BROADCAST
                                                               : EXCHANGE);
  if (argc == 2 && !strcmp(argv[1], "exec-timeout")) return exec_timeout(false);
  if (argc == 2 && !strcmp(argv[1], "late-rank")) return late_rank();
  if (argc == 2 && !strcmp(argv[1], "late-chain")) return late_chain();
  if (argc == 2 && !strcmp(argv[1], "long-chain")) return long_chain();
  if (argc == 2 && !strcmp(argv[1], "late-root")) return late_root();
  if (argc == 2 && !strcmp(argv[1], "cross-blocking")) return cross_blocking();
  if (argc == 2 && !strcmp(argv[1], "test-timeout")) return exec_timeout(true);
  if (argc == 2 && !strcmp(argv[1], "connect-timeout")) return connect_timeout();
  if (argc == 2 && !strcmp(argv[1], "join")) return join();
  if (argc == 2 && !strcmp(argv[1], "slow-destroy")) return slow_destroy();
  if (argc == 3 && !strcmp(argv[1], "dead-in-destroy")) return dead_in_destroy(atoi(argv[2]));
  if (argc == 2 && !strcmp(argv[1], "split")) return split_fails();
  if (argc == 2 && !strcmp(argv[1], "cross-wait")) return cross_wait(false, 0);
  if (argc == 2 && !strcmp(argv[1], "cross-test")) return cross_wait(true, 0);
  if (argc == 2 && !strcmp(argv[1], "cross-wait-busy")) return cross_wait(false, 8);
  if (argc == 2 && !strcmp(argv[1], "unwaited-destroy")) return unwaited_destroy();
  if (argc == 2 && !strcmp(argv[1], "sync-abort")) return sync_abort();
  if (argc == 2 && !strcmp(argv[1], "unmatched-send")) return unmatched_send();
  if (argc == 2 && !strcmp(argv[1], "zero-count")) return zero_count();
  if (argc == 2 && !strcmp(argv[1], "one-thread-destroy")) return one_thread_destroy();
  if (argc == 2 && !strcmp(argv[1], "early-destroy")) return early_destroy();
  if (argc == 2 && !strcmp(argv[1], "frozen-relay")) return frozen_relay();
  if (argc == 2 && !strcmp(argv[1], "p2p-left")) return p2p_left();
  if (argc == 2 && !strcmp(argv[1], "bad-args")) return threads(2, bad_args_thread);
  if (argc == 2 && !strcmp(argv[1], "abort")) return threads(2, abort_thread);
  if (argc == 2 && !strcmp(argv[1], "shm-timeout")) return threads(3, shm_timeout_thread);
  if (argc == 2 && !strcmp(argv[1], "uneven-destroy")) return uneven_destroy();
  if (argc == 2 && !strcmp(argv[1], "two-threads")) return two_threads();
  if (argc == 2 && !strcmp(argv[1], "stale-handles")) return stale_handles();
  if (argc == 2 && !strcmp(argv[1], "signal-abort")) return signal_abort();
  fprintf(stderr, "usage: fault_rank loop VICTIM [allreduce|broadcast] | exec-timeout | test-timeout | connect-timeout | join | bad-args | abort | slow-destroy | early-destroy | frozen-relay | p2p-left | shm-timeout | uneven-destroy | two-threads | stale-handles | signal-abort | dead-in-destroy VICTIM | split | zero-count | cross-wait | cross-test | late-rank | late-chain | long-chain | late-root | cross-blocking | cross-wait-busy | unwaited-destroy | sync-abort | one-thread-destroy | unmatched-send\n");
  return 2;
}
