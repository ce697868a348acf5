/* The executor: runs one rank's schedule of an operation over the transports.
 *
 * Posting an operation appends its transfers to the peers' queues in schedule order (this
 * keeps messages matched across operations) and starts every step whose dependencies are
 * done; completions start their successors. Local steps (copy, reduce) run as soon as
 * they are ready. Everything happens under the communicator's lock, from collie_progress. */
#ifndef COLLIE_EXECUTOR_H
#define COLLIE_EXECUTOR_H

#include <string.h>

#include "algo/algo.h"
#include "core/comm.h"
#include "sched/sched.h"

typedef struct collie_request collie_request_t;

typedef struct collie_op {
  struct collie_op *next;
  collie_comm_t *comm;
  collie_coll_t coll;
  uint64_t seq;
  uint64_t count;          /* signature count carried in headers */
  uint64_t counts_hash;    /* carried in headers too (wire.h) */
  collie_datatype_t dt;
  collie_redop_t redop;
  int root;
  collie_sched_t *sched;
  bool owns_sched;
  int *sched_users;        /* a cached schedule: its users counter, released at the end */
  char *bufs[COLLIE_NUM_BUFS];
  char *scratch;
  void *temp;              /* owned by the op, from collie_scratch_take: an in-place alltoall(v)'s input copy */
  /* AVG: the region divided once everything else is done */
  char *avg_buf;
  size_t avg_count;
  uint32_t *pending;       /* per step: dependencies not yet done */
  uint32_t *succ_first;    /* CSR successor lists */
  uint32_t *succ;
  uint32_t *work;          /* worklist of steps whose dependencies are done */
  collie_xfer_t *xfers;    /* per step (communication steps only) */
  uint32_t remaining;
  collie_reduce_fn_t reduce;
  collie_result_t result;
  bool steps_done;
  /* The receive buffer is larger than the caches: receives and local copies write it with
   * streaming stores (core/copy.h), which skip reading it into the cache first. */
  bool stream;
  /* The receive buffer is at least half that large: the shared-memory collectives' copies
   * out of staging time both kinds of stores and keep the cheaper (shm_native.c). */
  bool stream_timed;
  /* A ready copy whose bytes a ready send carries too: the send writes them to the copy's
   * destination on its way (collie_xfer_t.tee); the copy then moves only the rest. */
  collie_xfer_t *tee_send;
  uint32_t tee_copy;
  collie_request_t *req;
  bool internal;           /* a send or receive collie posted itself (collie_p2p_internal) */
  /* Algorithm "shm" (algo/shm_native.c): no schedule, but rounds over the shared areas. */
  bool native;
  bool nat_small, nat_in_place, nat_checked;
  bool nat_inline; /* one round staged in the area's inline lines (transport/shm.h) */
  bool nat_drain_streams; /* this round's copies out of staging stream (shm_native.c, drain) */
  uint8_t nat_inl_lines; /* how many: the first, and further ones for more than 40 bytes */
  bool nat_may_direct, nat_direct, nat_unstaged; /* the single-copy path (shm_direct.c) */
  uint8_t nat_phase;
  uint64_t nat_base, nat_round, nat_end; /* the communicator's rounds: first, current, end */
  uint64_t nat_fence; /* every other rank's `done` it needs before staging: the area's other layout */
  uint64_t nat_nrounds;
  size_t nat_count, nat_piece, nat_esz;  /* elements per block; per block and round; bytes */
  int nat_wait, nat_wait_flag;           /* what it waits for, for timeout sentences */
  struct collie_frame *frame;            /* the blocking call's frame it lives in, or NULL (malloc) */
} collie_op_t;

/* A send or receive of the user's (not collie_p2p_internal's). */
static inline bool collie_user_p2p(const collie_op_t *op) {
  return (op->coll == COLLIE_COLL_SEND || op->coll == COLLIE_COLL_RECV) && !op->internal;
}

/* request->magic: a request the user waits for (or tests) again after collie_wait or a
 * collie_test that said done freed it is recognised while it waits in a quarantine
 * (core/wait.c). */
enum { COLLIE_REQ_LIVE = 0x72657175, COLLIE_REQ_DEAD = 0x66726565 };

struct collie_request {
  _Atomic uint32_t magic;
  collie_comm_t *comm;
  _Atomic int done;
  collie_result_t result;
  collie_coll_t coll;      /* with seq: "allreduce #17", for error sentences */
  uint64_t seq;
  bool in_frame;           /* on a blocking call's stack: not freed */
  bool claimed;            /* its blocking collective set comm->coll_thread, which the wait clears */
};

/* A blocking call outside a group waits for its operation before it returns, so its
 * request, and its operation when that has no steps (a shared-memory collective), can
 * live on the caller's stack: a small collective then costs no malloc and no free. */
typedef struct collie_frame {
  collie_request_t req;
  collie_op_t op;
  uint32_t op_tail[4]; /* a step-less operation's successor index (collie_op_create) */
} collie_frame_t;

/* "allreduce #17" (collectives) or "send" (point to point), for sentences. */
const char *collie_request_what(const collie_request_t *req, char *buf, size_t len);

/* Creates an operation for `sched` with the given buffers; takes ownership of sched when
 * owns_sched. The header fields (coll, count, dt, redop, root) are the fingerprint. */
collie_op_t *collie_op_create(collie_comm_t *comm, collie_sched_t *sched, bool owns_sched, const void *sendbuf,
                              void *recvbuf, collie_coll_t coll, uint64_t count, collie_datatype_t dt,
                              collie_redop_t redop, int root, collie_frame_t *frame);
/* Posts the operation (under comm->lock): it now belongs to the communicator. A request is
 * returned for the caller to wait on. */
collie_result_t collie_op_post(collie_comm_t *comm, collie_op_t *op, collie_request_t **req);
/* Posts a shared-memory collective that the fast lane (coll/fast_lane.c) numbered (seq) and
 * staged (round g) already, in its frame's request (under comm->lock). */
void collie_op_adopt(collie_comm_t *comm, collie_op_t *op, collie_request_t **req, uint64_t seq, uint64_t g);
/* Frees an operation that was never posted. */
void collie_op_discard(collie_op_t *op);

/* A buffer of at least `need` bytes from the communicator's spare (reused from call to
 * call: a fresh 64 MiB malloc is an mmap whose page faults cost more than the copy into
 * it), or NULL when out of memory. Give it back with collie_scratch_give (NULL: nothing). */
char *collie_scratch_take(collie_comm_t *comm, size_t need);
void collie_scratch_give(collie_comm_t *comm, char *p);
/* Frees the communicator's spare scratch buffer (at destroy). */
void collie_comm_free_scratch(collie_comm_t *comm);

/* One pass over every active peer (under comm->lock). >0 when something moved. */
int collie_progress(collie_comm_t *comm);
/* Under comm->lock: when `peer` has destroyed its communicator (peer->gone) and this
 * rank's oldest pending receive from it (or send to it) is one it can never match, fails
 * the communicator with a sentence naming both and returns true. */
bool collie_check_departed(collie_comm_t *comm, collie_peer_t *peer);
/* Fails every posted operation with the communicator's failure (under comm->lock). */
void collie_fail_all_ops(collie_comm_t *comm);

/* Waits for a request (drives progress, honours the exec timeout, never spins without
 * yielding); frees it and returns its result. */
collie_result_t collie_request_wait(collie_request_t *req);
/* The transfer of (message-based) op that waits at the head of a peer's queue, its
 * dependencies done, and that peer in *peer; NULL if none. */
const collie_xfer_t *collie_op_waited_xfer(const collie_comm_t *comm, const collie_op_t *op, int *peer);
/* The same, passing over rank `avoid`'s transfer when another peer's waits too (-1: none).
 * Asked by `avoid` what this rank waits for, "for you" explains nothing: two ranks of one
 * operation can each wait for the other's message while both wait, behind it, for a third
 * (a hierarchical all-gatherv forwarding a frozen rank's block: fault campaign). */
const collie_xfer_t *collie_op_waited_xfer_avoiding(const collie_comm_t *comm, const collie_op_t *op, int avoid,
                                                   int *peer);
/* Describes what the oldest operation is waiting for, for timeout sentences. */
/* Under comm->lock: whether comm has work a wait must see through: an operation, or (with
 * none left) a small reduce's comparison with its root's call (shm_native.c). */
bool collie_comm_pending(const collie_comm_t *comm);
void collie_describe_wait(collie_comm_t *comm, char *buf, size_t len);
/* The same, naming the transfer collie_op_waited_xfer_avoiding picks. */
void collie_describe_wait_avoiding(collie_comm_t *comm, int avoid, char *buf, size_t len);

/* The fingerprint of collective op as rank `rank` calls it: what the shared-memory
 * collectives compare and a stall report carries (bootstrap/stall.c). Inline: the
 * shared-memory collectives write it in every first round. */
static inline void collie_op_fingerprint(const collie_op_t *op, int rank, collie_wire_hdr_t *h) {
  memset(h, 0, sizeof(*h));
  h->magic = COLLIE_WIRE_MAGIC;
  h->coll = (uint8_t)op->coll;
  h->dtype = (uint8_t)op->dt;
  h->redop = (uint8_t)op->redop;
  h->root = op->root;
  h->src_rank = rank;
  h->seq = op->seq;
  h->count = op->count;
  h->counts_hash = op->counts_hash;
}

#endif
