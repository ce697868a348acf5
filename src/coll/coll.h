/* The collective layer's shared step: algorithm choice, schedule, post. */
#ifndef COLLIE_COLL_H
#define COLLIE_COLL_H

#include "algo/algo.h"
#include "coll/post.h"

typedef struct {
  const char *fn;          /* the API name, for error sentences */
  const void *sendbuf;
  void *recvbuf;
  collie_datatype_t dt;
  collie_redop_t op;       /* COLLIE_SUM for data-movement collectives */
  int root;                /* -1 when not rooted */
  size_t bytes;            /* the size the cost model weighs */
  uint64_t sig_count;      /* count carried in the fingerprint */
  char *avg_buf;           /* AVG: the result region divided once at the end */
  size_t avg_count;
  void *temp;              /* the in-place alltoall(v) input copy (collie_scratch_take): the operation gives it back */
} collie_coll_call_t;

/* Whether a collective whose receive buffer (or an in-place copy of its input) has this
 * many bytes writes it with streaming stores: larger than the caches, reading it into
 * them first would only cost memory traffic (COLLIE_STREAM_BYTES, scaled to the host's
 * ranks at creation: comm_init.c). */
static inline bool collie_coll_streams(const collie_comm_t *comm, uint64_t bytes) {
  return comm->stream_bytes && bytes >= comm->stream_bytes;
}

collie_result_t collie_coll_post(collie_comm_t *comm, collie_coll_args_t *args, const collie_coll_call_t *call,
                                 collie_request_t **req);
/* The schedule of an operation without steps (a shared-memory collective's). */
collie_sched_t *collie_coll_no_steps(void);
/* A call made of several collectives (collie_comm_split) holds comm as one blocking
 * collective does: another thread's collective meanwhile fails the communicator. Fails
 * like a collective on a failed communicator; *claimed says whether to unclaim. */
collie_result_t collie_coll_claim(collie_comm_t *comm, const char *fn, bool *claimed);
void collie_coll_unclaim(collie_comm_t *comm, bool claimed);
/* Under comm->lock: a blocking collective outside a group (posted as req) holds comm for
 * this thread until its wait ends (collie_request_wait lets go). */
void collie_coll_hold(collie_comm_t *comm, collie_request_t *req);
/* A collective with nothing to move on any rank: a completed request, or one that completes
 * when the operations issued before it have. */
collie_result_t collie_coll_done(collie_comm_t *comm, collie_coll_t coll, const collie_coll_call_t *call,
                                 collie_request_t **req);

#endif
