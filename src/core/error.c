/* Error strings and last-error sentences. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>

#include "core/comm.h"

static _Thread_local char thread_error[1024];

const char *collie_get_error_string(collie_result_t r) {
  switch (r) {
    case COLLIE_SUCCESS: return "success";
    case COLLIE_IN_PROGRESS: return "operation in progress";
    case COLLIE_ERR_INVALID_ARGUMENT: return "invalid argument";
    case COLLIE_ERR_INVALID_USAGE: return "invalid usage";
    case COLLIE_ERR_SYSTEM: return "system call failed";
    case COLLIE_ERR_REMOTE: return "remote peer failed or closed its connection";
    case COLLIE_ERR_TIMEOUT: return "timeout expired";
    case COLLIE_ERR_MISMATCH: return "ranks disagree on the operation or its arguments";
    case COLLIE_ERR_ABORTED: return "communicator aborted";
    case COLLIE_ERR_INTERNAL: return "internal error";
  }
  return "unknown result code";
}

void collie_set_thread_error(const char *msg) { snprintf(thread_error, sizeof(thread_error), "%s", msg); }

collie_result_t collie_check_magic(const void *handle, uint32_t live, uint32_t dead, const char *fn, const char *what) {
  if (!handle) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "%s: the %s is NULL", fn, what);
  uint32_t magic;
  memcpy(&magic, handle, sizeof(magic));
  if (magic == dead) return COLLIE_ERR_INVALID_USAGE;
  if (magic != live)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                        "%s: %p is not a %s that collie returned (or one freed long ago, whose memory was reused)",
                        fn, handle, what);
  return COLLIE_SUCCESS;
}

collie_result_t collie_error(struct collie_comm *comm, collie_result_t res, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  collie_set_thread_error(msg);
  if (comm) collie_comm_set_last_error(comm, msg);
  return res;
}

const char *collie_get_last_error(const collie_comm_t *comm) {
  if (!comm) return thread_error;
  return collie_comm_last_error(comm);
}

collie_result_t collie_get_version(int *version) {
  if (!version) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_get_version: version is NULL");
  *version = COLLIE_VERSION_CODE;
  return COLLIE_SUCCESS;
}

const char *collie_thread_advice(int rc) {
  return rc == EAGAIN ? "raise the limit of processes and threads (ulimit -u; in a container its pids limit: docker "
                        "run --pids-limit, Kubernetes podPidsLimit; every communicator runs a thread on every rank, "
                        "so destroy those no longer needed), or " COLLIE_MEMORY_ADVICE
                      : "check the system's limits";
}

const char *collie_memory_hint(int e) { return e == ENOMEM ? "; " COLLIE_MEMORY_ADVICE : ""; }
