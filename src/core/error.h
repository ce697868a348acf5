/* Errors: every function returns a collie_result_t; a failing call leaves a sentence in
 * the communicator's last error (and the thread's) that names the rank, the peer, the
 * operation and what to do. */
#ifndef COLLIE_ERROR_H
#define COLLIE_ERROR_H

#include <stdint.h>

#include "collie.h"

struct collie_comm;

/* Records the sentence as this thread's last error and, with a communicator, as that
 * communicator's last error; returns res so callers can `return collie_error(...)`. */
collie_result_t collie_error(struct collie_comm *comm, collie_result_t res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void collie_set_thread_error(const char *msg);

/* A handle from the user whose struct begins with a uint32_t magic: `live` while in use,
 * `dead` once freed (kept a while in a quarantine, see comm_destroy.c and wait.c). NULL
 * and a handle with neither magic are COLLIE_ERR_INVALID_ARGUMENT with a sentence; a dead
 * one is COLLIE_ERR_INVALID_USAGE *without* one, which the caller writes (it knows what
 * was freed, and by what). `what`: "communicator", "request". */
collie_result_t collie_check_magic(const void *handle, uint32_t live, uint32_t dead, const char *fn, const char *what);
/* "; " and what to do when an OS call failed with errno `e` for want of memory, else "":
 * to append to a sentence that ends with strerror(e). */
const char *collie_memory_hint(int e);

/* What to do when pthread_create failed with `rc`, for the sentences that say so. */
const char *collie_thread_advice(int rc);

/* What to do when memory runs out, for the sentences that say so. */
#define COLLIE_MEMORY_ADVICE "free memory or raise the limit (ulimit -v, the container's memory limit)"

/* NCCL's discipline: one macro, one exit label. */
#define COLLIE_CHECK(call)                \
  do {                                    \
    collie_result_t check_res_ = (call);  \
    if (check_res_ != COLLIE_SUCCESS) {   \
      res = check_res_;                   \
      goto fail;                          \
    }                                     \
  } while (0)

#endif
