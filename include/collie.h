/* collie: a collective communication library for CPU clusters.
 *
 * This header is the public contract described in the project's API.md. Everything
 * in it is C11 and stable; additions are marked "extension" and documented in docs/. */
#ifndef COLLIE_H
#define COLLIE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; everything declared here is its ABI. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define COLLIE_VERSION_MAJOR 0
#define COLLIE_VERSION_MINOR 1
#define COLLIE_VERSION_PATCH 0
#define COLLIE_VERSION_CODE (COLLIE_VERSION_MAJOR * 10000 + COLLIE_VERSION_MINOR * 100 + COLLIE_VERSION_PATCH)

typedef enum {
  COLLIE_SUCCESS = 0,
  COLLIE_IN_PROGRESS = 1,          /* collie_test: not finished yet            */
  COLLIE_ERR_INVALID_ARGUMENT = 2, /* bad pointer, datatype, op, root, count    */
  COLLIE_ERR_INVALID_USAGE = 3,    /* call out of order, destroyed comm, ...   */
  COLLIE_ERR_SYSTEM = 4,           /* an OS call failed (socket, mmap, ...)    */
  COLLIE_ERR_REMOTE = 5,           /* a peer died or its connection was lost   */
  COLLIE_ERR_TIMEOUT = 6,          /* connect or execution timeout expired     */
  COLLIE_ERR_MISMATCH = 7,         /* ranks disagree on the operation/arguments */
  COLLIE_ERR_ABORTED = 8,          /* the communicator was aborted             */
  COLLIE_ERR_INTERNAL = 9
} collie_result_t;

typedef enum {
  COLLIE_INT8, COLLIE_UINT8, COLLIE_INT32, COLLIE_UINT32, COLLIE_INT64, COLLIE_UINT64,
  COLLIE_FLOAT16, COLLIE_BFLOAT16, COLLIE_FLOAT32, COLLIE_FLOAT64, COLLIE_NUM_DATATYPES
} collie_datatype_t;

typedef enum { COLLIE_SUM, COLLIE_PROD, COLLIE_MAX, COLLIE_MIN, COLLIE_AVG, COLLIE_NUM_OPS } collie_redop_t;

#define COLLIE_UNIQUE_ID_BYTES 128
typedef struct { char internal[COLLIE_UNIQUE_ID_BYTES]; } collie_unique_id_t;
typedef struct collie_comm collie_comm_t;
typedef struct collie_request collie_request_t;

typedef struct {
  size_t struct_size;          /* sizeof(collie_config_t): lets the struct grow */
  int connect_timeout_ms;      /* 0: from COLLIE_CONNECT_TIMEOUT or default    */
  int exec_timeout_ms;         /* 0: from COLLIE_EXEC_TIMEOUT or default       */
  const char *algo;            /* NULL: from COLLIE_ALGO or automatic          */
  const char *proto;           /* NULL: from COLLIE_PROTO or automatic         */
} collie_config_t;
#define COLLIE_CONFIG_INIT { sizeof(collie_config_t), 0, 0, NULL, NULL }

const char *collie_get_error_string(collie_result_t result);
const char *collie_get_last_error(const collie_comm_t *comm); /* NULL comm: this thread's last error */
collie_result_t collie_get_version(int *version);              /* major*10000 + minor*100 + patch */

/* communicators */
collie_result_t collie_get_unique_id(collie_unique_id_t *id);
collie_result_t collie_comm_init_rank(collie_comm_t **comm, int nranks, collie_unique_id_t id, int rank);
collie_result_t collie_comm_init_rank_config(collie_comm_t **comm, int nranks, collie_unique_id_t id,
                                             int rank, const collie_config_t *config);
collie_result_t collie_comm_init_env(collie_comm_t **comm);   /* rank, size, rendezvous from the launcher */
collie_result_t collie_comm_init_all(collie_comm_t **comms, int nranks); /* nranks ranks in this process,
                                                                 each then driven by its own thread */
#define COLLIE_SPLIT_NOCOLOR (-1)
collie_result_t collie_comm_split(collie_comm_t *comm, int color, int key, collie_comm_t **newcomm);
collie_result_t collie_comm_destroy(collie_comm_t *comm);
collie_result_t collie_comm_abort(collie_comm_t *comm);
collie_result_t collie_comm_rank(const collie_comm_t *comm, int *rank);
collie_result_t collie_comm_size(const collie_comm_t *comm, int *size);

/* collectives (blocking) */
collie_result_t collie_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                 collie_datatype_t dt, collie_redop_t op, collie_comm_t *comm);
collie_result_t collie_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                 collie_datatype_t dt, int root, collie_comm_t *comm);
collie_result_t collie_reduce(const void *sendbuf, void *recvbuf, size_t count,
                              collie_datatype_t dt, collie_redop_t op, int root, collie_comm_t *comm);
collie_result_t collie_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                 collie_datatype_t dt, collie_comm_t *comm);
collie_result_t collie_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                  const size_t *recvcounts, const size_t *displs,
                                  collie_datatype_t dt, collie_comm_t *comm);
collie_result_t collie_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                      collie_datatype_t dt, collie_redop_t op, collie_comm_t *comm);
collie_result_t collie_reduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                       collie_datatype_t dt, collie_redop_t op, collie_comm_t *comm);
collie_result_t collie_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                                collie_datatype_t dt, collie_comm_t *comm);
collie_result_t collie_alltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                 void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                 collie_datatype_t dt, collie_comm_t *comm);
collie_result_t collie_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                               collie_datatype_t dt, int root, collie_comm_t *comm);
collie_result_t collie_gather(const void *sendbuf, void *recvbuf, size_t sendcount,
                              collie_datatype_t dt, int root, collie_comm_t *comm);
collie_result_t collie_barrier(collie_comm_t *comm);

/* point to point; between collie_group_start/end they are issued together */
collie_result_t collie_send(const void *buf, size_t count, collie_datatype_t dt, int peer, collie_comm_t *comm);
collie_result_t collie_recv(void *buf, size_t count, collie_datatype_t dt, int peer, collie_comm_t *comm);
collie_result_t collie_group_start(void);
collie_result_t collie_group_end(void);

/* nonblocking: every collective and send/recv has an i-variant with the same arguments
   followed by collie_request_t **request. */
collie_result_t collie_iallreduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                                  collie_redop_t op, collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_ibroadcast(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                                  int root, collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_ireduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                               collie_redop_t op, int root, collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, collie_datatype_t dt,
                                  collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                   const size_t *recvcounts, const size_t *displs, collie_datatype_t dt,
                                   collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                       collie_datatype_t dt, collie_redop_t op, collie_comm_t *comm,
                                       collie_request_t **request);
collie_result_t collie_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                        collie_datatype_t dt, collie_redop_t op, collie_comm_t *comm,
                                        collie_request_t **request);
collie_result_t collie_ialltoall(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                                 collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                                  void *recvbuf, const size_t *recvcounts, const size_t *rdispls,
                                  collie_datatype_t dt, collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_iscatter(const void *sendbuf, void *recvbuf, size_t recvcount, collie_datatype_t dt,
                                int root, collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_igather(const void *sendbuf, void *recvbuf, size_t sendcount, collie_datatype_t dt,
                               int root, collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_ibarrier(collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_isend(const void *buf, size_t count, collie_datatype_t dt, int peer,
                             collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_irecv(void *buf, size_t count, collie_datatype_t dt, int peer,
                             collie_comm_t *comm, collie_request_t **request);
collie_result_t collie_wait(collie_request_t *request);            /* frees the request */
collie_result_t collie_test(collie_request_t *request, int *done); /* frees it once done */
collie_result_t collie_comm_synchronize(collie_comm_t *comm);     /* waits for all of comm's operations */

/* Extensions (beyond API.md; documented in docs/api-extensions.md). */
size_t collie_datatype_size(collie_datatype_t dt);             /* 0 for an invalid datatype */
const char *collie_datatype_name(collie_datatype_t dt);        /* "float32", ... or "invalid" */
const char *collie_redop_name(collie_redop_t op);              /* "sum", ... or "invalid" */
/* Memory the other ranks of this host can read and write directly. Collectives whose send
 * and receive buffers all come from here copy once instead of twice inside a host (like
 * ncclMemAlloc). Free with collie_mem_free; collie_mem_free(NULL) does nothing. */
collie_result_t collie_mem_alloc(void **ptr, size_t size);
collie_result_t collie_mem_free(void *ptr);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* COLLIE_H */
