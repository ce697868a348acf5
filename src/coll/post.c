/* Posting and finishing operations (see post.h), and the group calls. */
#include "coll/post.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

typedef struct {
  int depth;
  collie_result_t first_error; /* a call inside the group that failed at once */
  char first_msg[1024];
  collie_request_t **reqs;
  int n, cap;
} group_t;

static _Thread_local group_t group;
static _Thread_local collie_frame_t *offered; /* see collie_frame_offer */

collie_result_t collie_check_count(collie_comm_t *comm, const char *fn, size_t count, collie_datatype_t dt,
                                   size_t *bytes) {
  size_t esz = collie_datatype_size(dt);
  if (!esz)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT,
                        "%s on rank %d: datatype %d is not a collie datatype (0..%d)", fn, comm ? comm->rank : -1,
                        (int)dt, COLLIE_NUM_DATATYPES - 1);
  size_t twice; /* count * esz * 2 must fit: a multiply, not a division (small calls) */
  if (__builtin_mul_overflow(count, esz * 2, &twice))
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT,
                        "%s on rank %d: count %zu of %s overflows the address space", fn, comm ? comm->rank : -1,
                        count, collie_datatype_name(dt));
  *bytes = count * esz;
  return COLLIE_SUCCESS;
}

collie_result_t collie_post_locked(collie_comm_t *comm, collie_op_t *op, collie_request_t **req, bool *kick) {
  *kick = false;
  /* Failed since the call's checks: by a peer, or aborted (from another thread, or from a
   * signal handler on this one) and maybe torn down. Not posted: posting may start sends
   * on transports an abort has closed. */
  int failed = atomic_load_explicit(&comm->failed, memory_order_acquire);
  collie_result_t res = failed ? collie_error(comm, (collie_result_t)failed, "%s", comm->fail_msg)
                               : collie_op_post(comm, op, req);
  if (res) {
    op->temp = NULL; /* not taken: the caller still owns it and gives it back */
    collie_op_discard(op);
    return res;
  }
  /* A blocking call's caller waits next and moves the data itself (wait.c): no need to
   * wake the progress thread, a system call per call. */
  if (comm->has_progress_thread && !(*req)->in_frame) *kick = comm->progress_asleep; /* see progress_main */
  else if (op->native && comm->ops == op) collie_progress(comm);
  return res;
}

collie_result_t collie_post(collie_comm_t *comm, collie_op_t *op, collie_request_t **req) {
  bool kick;
  collie_lock(&comm->lock);
  collie_result_t res = collie_post_locked(comm, op, req, &kick);
  collie_unlock(&comm->lock);
  if (kick) collie_progress_kick(comm);
  if (res) collie_comm_end_abort(comm);
  return res;
}

bool collie_in_group(void) { return group.depth > 0; }

void collie_frame_offer(collie_frame_t *frame) { offered = group.depth > 0 ? NULL : frame; }

collie_frame_t *collie_frame_take(void) {
  collie_frame_t *f = offered;
  offered = NULL;
  return f;
}

collie_result_t collie_finish(collie_request_t *req) {
  if (group.depth > 0) {
    if (group.n == group.cap) {
      int cap = group.cap ? group.cap * 2 : 16;
      collie_request_t **r = realloc(group.reqs, sizeof(*r) * (size_t)cap);
      if (!r) { /* waited for now, it could wait for a call of this group still to come */
        collie_comm_fail_no_memory(req->comm, "a blocking call between collie_group_start and collie_group_end",
                                   "the list of the group's requests");
        return collie_group_error(collie_wait(req));
      }
      group.reqs = r;
      group.cap = cap;
    }
    group.reqs[group.n++] = req;
    return COLLIE_SUCCESS;
  }
  return collie_wait(req);
}

collie_result_t collie_group_error(collie_result_t res) {
  if (res && group.depth > 0 && !group.first_error) {
    group.first_error = res;
    snprintf(group.first_msg, sizeof(group.first_msg), "%s", collie_get_last_error(NULL));
  }
  return res;
}

collie_result_t collie_group_start(void) {
  group.depth++;
  return COLLIE_SUCCESS;
}

collie_result_t collie_group_end(void) {
  if (group.depth <= 0)
    return collie_error(NULL, COLLIE_ERR_INVALID_USAGE, "collie_group_end without a matching collie_group_start");
  if (--group.depth > 0) return COLLIE_SUCCESS;
  /* Everything was posted as it was called; now wait for all of it. The first error wins,
   * but every request is still waited for so that none is leaked. */
  collie_result_t res = group.first_error;
  char first[1024];
  snprintf(first, sizeof(first), "%s", group.first_msg);
  group.first_error = COLLIE_SUCCESS;
  for (int i = 0; i < group.n; i++) {
    collie_result_t r = collie_wait(group.reqs[i]);
    if (r && !res) {
      res = r;
      snprintf(first, sizeof(first), "%s", collie_get_last_error(NULL));
    }
  }
  group.n = 0;
  free(group.reqs);
  group.reqs = NULL;
  group.cap = 0;
  if (res) collie_set_thread_error(first);
  return res;
}
