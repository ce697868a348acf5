/* Posting operations from the API layer: argument checks shared by every call, and the
 * "post, then wait (or defer to group end)" step of blocking calls. */
#ifndef COLLIE_POST_H
#define COLLIE_POST_H

#include "sched/executor.h"

/* Posts op under the comm lock; on failure discards it. A shared-memory collective that
 * heads the queue starts at once (its first round published while the lock is held
 * anyway), unless a progress thread runs it (a nonblocking call's with one). */
collie_result_t collie_post(collie_comm_t *comm, collie_op_t *op, collie_request_t **req);
/* The same, with comm->lock already held. *kick: the progress thread sleeps for want of
 * work, and the caller wakes it (collie_progress_kick) once it has let go of the lock,
 * which the woken thread wants first. */
collie_result_t collie_post_locked(collie_comm_t *comm, collie_op_t *op, collie_request_t **req, bool *kick);
/* Blocking calls offer their stack frame (collie_frame_t) before calling their i-variant,
 * and withdraw it (NULL) after; outside a group only, where the request cannot outlive the
 * call. The posting path takes it (NULL when none is offered): at most one operation per
 * offer. */
void collie_frame_offer(collie_frame_t *frame);
collie_frame_t *collie_frame_take(void);
/* Whether this thread is between collie_group_start and collie_group_end. */
bool collie_in_group(void);
/* The body of a blocking call: `call`, its i-variant, posts into `req` (declared here),
 * with the request (and a shared-memory collective's operation) in this frame when
 * outside a group; then waits, or hands the request to the group. */
#define COLLIE_BLOCKING(call)                   \
  collie_request_t *req;                        \
  collie_frame_t frame;                         \
  collie_frame_offer(&frame);                   \
  collie_result_t res = (call);                 \
  collie_frame_offer(NULL);                     \
  return res ? collie_group_error(res) : collie_finish(req)
/* Blocking calls: wait now, or (between group start and end) hand the request to the group. */
collie_result_t collie_finish(collie_request_t *req);
/* A call inside a group failed before posting: group end reports it. Returns res. */
collie_result_t collie_group_error(collie_result_t res);
/* Checks a datatype and that count elements of it fit in a size_t; fills *bytes. */
collie_result_t collie_check_count(collie_comm_t *comm, const char *fn, size_t count, collie_datatype_t dt,
                                   size_t *bytes);
/* A send or receive of `bytes` that collie itself posts (the measurement of
 * process_vm_readv, a split's new id), like collie_isend or collie_irecv: it counts as none
 * of the user's point-to-point messages in error sentences (collie_check_departed). */
collie_result_t collie_p2p_internal(bool send, void *buf, size_t bytes, int peer, collie_comm_t *comm,
                                    collie_request_t **req);

#endif
