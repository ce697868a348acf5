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
 * them first would only cost memory traffic (COLLIE_STREAM_BYTES). The ranks of a host
 * share its caches and the threshold holds for 2 of them: with n on the host it is 2/n of
 * it, down to half from 4 ranks on (16M: 8M; a 4-rank 8 MiB all-to-all took 15% less
 * time). Not lower: on 8 ranks, streaming from 4 MiB gained nothing (docs/tuning.md). */
static inline bool collie_coll_streams(const collie_comm_t *comm, uint64_t bytes) {
  if (!comm->stream_bytes) return false;
  const uint64_t share = comm->nlocal >= 4 ? 4 : comm->nlocal > 2 ? (uint64_t)comm->nlocal : 2;
  const uint64_t threshold = comm->stream_bytes / share * 2;
  return bytes >= (threshold ? threshold : 1);
}

collie_result_t collie_coll_post(collie_comm_t *comm, collie_coll_args_t *args, const collie_coll_call_t *call,
                                 collie_request_t **req);
/* A call made of several collectives (collie_comm_split) holds comm as one blocking
 * collective does: another thread's collective meanwhile fails the communicator. Fails
 * like a collective on a failed communicator; *claimed says whether to unclaim. */
collie_result_t collie_coll_claim(collie_comm_t *comm, const char *fn, bool *claimed);
void collie_coll_unclaim(collie_comm_t *comm, bool claimed);
/* A collective with nothing to move on any rank: a completed request. */
collie_result_t collie_coll_done(collie_comm_t *comm, const collie_coll_call_t *call, collie_request_t **req);

#endif
