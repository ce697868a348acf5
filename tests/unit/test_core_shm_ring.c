/* The shared-memory ring with the smallest geometry (2 slots of 4096 bytes): messages whose
 * sizes straddle the slot boundaries, one at a time and 32 in flight each way, so that the
 * ring wraps thousands of times. Two ranks in this process (collie_comm_init_all), one
 * thread each; every byte is checked. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collie.h"
#include "core/comm.h"
#include "core/params.h"
#include "core_unit.h"
#include "transport/shm.h"

#define SLOT 4096
#define INFLIGHT 32
#define ROUNDS 4

static const size_t boundary_sizes[] = {0,    1,        SLOT - 1,     SLOT,     SLOT + 1, 2 * SLOT,
                                        2 * SLOT + 1, 3 * SLOT + 5, 1 << 20, (1 << 20) + 1, 63, 3 * SLOT - 1};
#define NBOUNDARY (sizeof(boundary_sizes) / sizeof(boundary_sizes[0]))

static uint8_t pattern(int src, int msg, int round, size_t i) {
  return (uint8_t)(src * 101 + msg * 13 + round * 7 + i * 31 + (i >> 8) * 3 + (i >> 12));
}

static void fill(uint8_t *b, size_t n, int src, int msg, int round) {
  for (size_t i = 0; i < n; i++) b[i] = pattern(src, msg, round, i);
}

/* 0 if equal; otherwise reports the first bad byte. */
static int verify(int rank, const uint8_t *b, size_t n, int src, int msg, int round, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern(src, msg, round, i)) {
      fprintf(stderr, "rank %d: %s: message %d (%zu bytes, round %d) byte %zu is %u, expected %u\n", rank, what, msg,
              n, round, i, b[i], pattern(src, msg, round, i));
      return 1;
    }
  return 0;
}

/* Sizes of the messages in flight: the boundary sizes, then sizes walking around the slot
 * multiples (k*SLOT-1, k*SLOT, k*SLOT+1, ...), different for every message and round. */
static size_t inflight_size(int msg, int round) {
  if (msg < (int)NBOUNDARY && round == 0) return boundary_sizes[msg];
  size_t k = (size_t)(msg * 7 + round * 11) % 97 + 1;
  return k * SLOT + (size_t)((msg + round) % 3) - 1;
}

typedef struct {
  collie_comm_t *comm;
  int rc;
  uint64_t bytes; /* received */
  char err[512];
} rank_arg_t;

#define TRY(call)                                                                                        \
  do {                                                                                                   \
    collie_result_t r_ = (call);                                                                         \
    if (r_ != COLLIE_SUCCESS) {                                                                          \
      snprintf(a->err, sizeof(a->err), "rank %d: %s: %s: %s", rank, #call, collie_get_error_string(r_), \
               collie_get_last_error(a->comm));                                                         \
      a->rc = 1;                                                                                         \
      goto out;                                                                                          \
    }                                                                                                    \
  } while (0)

static void *rank_main(void *p) {
  rank_arg_t *a = p;
  int rank = -1;
  uint8_t *sb[INFLIGHT] = {0}, *rb[INFLIGHT] = {0};
  size_t cap = (1 << 20) + 64 * SLOT;
  for (int m = 0; m < INFLIGHT; m++) {
    sb[m] = malloc(cap);
    rb[m] = malloc(cap);
    if (!sb[m] || !rb[m]) {
      a->rc = 1;
      snprintf(a->err, sizeof(a->err), "out of memory");
      goto out;
    }
  }
  TRY(collie_comm_rank(a->comm, &rank));
  int peer = 1 - rank;

  /* One message at a time, both directions at once (grouped), then as isend/irecv. */
  for (int m = 0; m < (int)NBOUNDARY; m++) {
    size_t n = boundary_sizes[m];
    fill(sb[0], n, rank, m, 100);
    memset(rb[0], 0xEE, n + 1);
    TRY(collie_group_start());
    TRY(collie_send(sb[0], n, COLLIE_UINT8, peer, a->comm));
    TRY(collie_recv(rb[0], n, COLLIE_UINT8, peer, a->comm));
    TRY(collie_group_end());
    if (verify(rank, rb[0], n, peer, m, 100, "grouped send/recv")) a->rc = 1;
    if (rb[0][n] != 0xEE) {
      fprintf(stderr, "rank %d: a %zu-byte receive wrote past its end\n", rank, n);
      a->rc = 1;
    }
    a->bytes += n;
  }
  /* Element sizes other than 1: 1025 int32 and 513 float64 straddle a slot too. */
  {
    int32_t *s32 = (int32_t *)sb[1], *r32 = (int32_t *)rb[1];
    double *s64 = (double *)sb[2], *r64 = (double *)rb[2];
    for (int i = 0; i < 1025; i++) s32[i] = rank * 100000 + i;
    for (int i = 0; i < 513; i++) s64[i] = rank + i * 0.5;
    collie_request_t *rq[4];
    TRY(collie_irecv(r32, 1025, COLLIE_INT32, peer, a->comm, &rq[0]));
    TRY(collie_irecv(r64, 513, COLLIE_FLOAT64, peer, a->comm, &rq[1]));
    TRY(collie_isend(s32, 1025, COLLIE_INT32, peer, a->comm, &rq[2]));
    TRY(collie_isend(s64, 513, COLLIE_FLOAT64, peer, a->comm, &rq[3]));
    for (int i = 3; i >= 0; i--) TRY(collie_wait(rq[i]));
    for (int i = 0; i < 1025; i++)
      if (r32[i] != peer * 100000 + i) {
        fprintf(stderr, "rank %d: int32 element %d is %d\n", rank, i, r32[i]);
        a->rc = 1;
        break;
      }
    for (int i = 0; i < 513; i++)
      if (r64[i] != peer + i * 0.5) {
        fprintf(stderr, "rank %d: float64 element %d is %g\n", rank, i, r64[i]);
        a->rc = 1;
        break;
      }
  }

  /* 32 sends and 32 receives in flight before anything is waited on. */
  for (int round = 0; round < ROUNDS; round++) {
    collie_request_t *sreq[INFLIGHT], *rreq[INFLIGHT];
    for (int m = 0; m < INFLIGHT; m++) {
      fill(sb[m], inflight_size(m, round), rank, m, round);
      memset(rb[m], 0xEE, inflight_size(m, round) + 1);
    }
    for (int m = 0; m < INFLIGHT; m++)
      TRY(collie_isend(sb[m], inflight_size(m, round), COLLIE_UINT8, peer, a->comm, &sreq[m]));
    for (int m = 0; m < INFLIGHT; m++)
      TRY(collie_irecv(rb[m], inflight_size(m, round), COLLIE_UINT8, peer, a->comm, &rreq[m]));
    /* Wait in an order the queues do not have: receives from the last, sends by test(). */
    for (int m = INFLIGHT - 1; m >= 0; m--) TRY(collie_wait(rreq[m]));
    for (int m = 0; m < INFLIGHT; m++) {
      int done = 0;
      while (!done) TRY(collie_test(sreq[m], &done));
    }
    for (int m = 0; m < INFLIGHT; m++) {
      size_t n = inflight_size(m, round);
      if (verify(rank, rb[m], n, peer, m, round, "in flight")) a->rc = 1;
      if (rb[m][n] != 0xEE) {
        fprintf(stderr, "rank %d: in-flight message %d wrote past its end\n", rank, m);
        a->rc = 1;
      }
      a->bytes += n;
    }
  }
  TRY(collie_barrier(a->comm));
out:
  for (int m = 0; m < INFLIGHT; m++) {
    free(sb[m]);
    free(rb[m]);
  }
  /* Every rank destroys its own communicator, concurrently with the others. */
  collie_result_t d = collie_comm_destroy(a->comm);
  if (d != COLLIE_SUCCESS && !a->rc) {
    snprintf(a->err, sizeof(a->err), "rank %d: collie_comm_destroy: %s", rank, collie_get_error_string(d));
    a->rc = 1;
  }
  return NULL;
}

int main(void) {
  setenv("COLLIE_SHM_SLOT_SIZE", "4096", 1);
  setenv("COLLIE_SHM_NSLOTS", "2", 1);
  unsetenv("COLLIE_TRANSPORT");
  unsetenv("COLLIE_HOST_ID");
  collie_params_reload();
  EXPECT(collie_param_int(COLLIE_P_SHM_SLOT_SIZE) == SLOT);
  EXPECT(collie_param_int(COLLIE_P_SHM_NSLOTS) == 2);

  collie_comm_t *comms[2] = {NULL, NULL};
  collie_result_t r = collie_comm_init_all(comms, 2);
  EXPECTF(r == COLLIE_SUCCESS, "collie_comm_init_all: %s", collie_get_last_error(NULL));
  if (r != COLLIE_SUCCESS) return unit_summary("test_core_shm_ring");

  /* The peers really talk through a ring of that geometry. */
  for (int i = 0; i < 2; i++) {
    const collie_comm_t *c = comms[i];
    EXPECTF(c->peers[1 - i].tp == &collie_transport_shm, "rank %d reaches its peer through '%s', not shm", i,
            c->peers[1 - i].tp ? c->peers[1 - i].tp->name : "(none)");
    EXPECTF(c->shm && c->shm->slot_size == SLOT && c->shm->nslots == 2, "rank %d: ring of %llu slots of %llu bytes",
            i, c->shm ? (unsigned long long)c->shm->nslots : 0ull,
            c->shm ? (unsigned long long)c->shm->slot_size : 0ull);
  }

  rank_arg_t args[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    memset(&args[i], 0, sizeof(args[i]));
    args[i].comm = comms[i];
    pthread_create(&th[i], NULL, rank_main, &args[i]);
  }
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    EXPECTF(args[i].rc == 0, "rank %d failed: %s", i, args[i].err[0] ? args[i].err : "(see above)");
  }
  uint64_t slots = args[0].bytes / SLOT;
  printf("test_core_shm_ring: %llu bytes each way, at least %llu slots: the 2-slot ring wrapped %llu times\n",
         (unsigned long long)args[0].bytes, (unsigned long long)slots, (unsigned long long)slots / 2);
  EXPECTF(slots / 2 >= 2000, "the ring wrapped only %llu times", (unsigned long long)slots / 2);
  return unit_summary("test_core_shm_ring");
}
