/* Point to point: a send or a receive is a one-step schedule. */
#include <stdint.h>
#include <stdlib.h>

#include "coll/post.h"
#include "core/error.h"
#include "core/progress_others.h"

static collie_result_t post_p2p(bool is_send, void *buf, size_t count, collie_datatype_t dt, int peer,
                                collie_comm_t *comm, collie_request_t **req, bool internal) {
  const char *fn = is_send ? "collie_send" : "collie_recv";
  collie_result_t res = collie_comm_check(comm, fn);
  if (res) return res;
  size_t bytes;
  res = collie_check_count(comm, fn, count, dt, &bytes);
  if (res) return res;
  if (peer < 0 || peer >= comm->nranks)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: peer %d is not in 0..%d", fn,
                        comm->rank, peer, comm->nranks - 1);
  if (!buf && count)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: buffer is NULL but count is %zu", fn,
                        comm->rank, count);
  if (!req) return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: request is NULL", fn, comm->rank);
  collie_frame_t *frame = collie_frame_take();
  collie_sched_t *s = malloc(sizeof(*s));
  if (!s) return collie_comm_fail_no_memory(comm, fn, "its schedule");
  collie_sched_init(s, comm->nranks, comm->rank, collie_datatype_size(dt));
  if (is_send) collie_sched_send(s, peer, collie_ref(COLLIE_BUF_SEND, 0), bytes, COLLIE_NODEPS);
  else collie_sched_recv(s, peer, collie_ref(COLLIE_BUF_RECV, 0), bytes, COLLIE_NODEPS);
  collie_op_t *op = s->failed ? NULL
                              : collie_op_create(comm, s, true, is_send ? buf : NULL, is_send ? NULL : buf,
                                                 is_send ? COLLIE_COLL_SEND : COLLIE_COLL_RECV, count, dt,
                                                 COLLIE_SUM, -1, frame);
  if (!op) {
    collie_sched_free(s);
    free(s);
    return collie_comm_fail_no_memory(comm, fn, "its operation");
  }
  op->internal = internal;
  res = collie_post(comm, op, req);
  if (!res && !frame) collie_others_note(comm); /* may stay pending while this thread waits elsewhere */
  return res;
}

collie_result_t collie_isend(const void *buf, size_t count, collie_datatype_t dt, int peer, collie_comm_t *comm,
                             collie_request_t **req) {
  return post_p2p(true, (void *)(uintptr_t)buf, count, dt, peer, comm, req, false);
}

collie_result_t collie_irecv(void *buf, size_t count, collie_datatype_t dt, int peer, collie_comm_t *comm,
                             collie_request_t **req) {
  return post_p2p(false, buf, count, dt, peer, comm, req, false);
}

collie_result_t collie_p2p_internal(bool send, void *buf, size_t bytes, int peer, collie_comm_t *comm,
                                    collie_request_t **req) {
  return post_p2p(send, buf, bytes, COLLIE_UINT8, peer, comm, req, true);
}

collie_result_t collie_send(const void *buf, size_t count, collie_datatype_t dt, int peer, collie_comm_t *comm) {
  COLLIE_BLOCKING(collie_isend(buf, count, dt, peer, comm, &req));
}

collie_result_t collie_recv(void *buf, size_t count, collie_datatype_t dt, int peer, collie_comm_t *comm) {
  COLLIE_BLOCKING(collie_irecv(buf, count, dt, peer, comm, &req));
}
