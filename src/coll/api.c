/* The collective calls of API.md: argument checks, in-place detection, then post.
 * Each blocking call is its i-variant followed by a wait (or deferral to group end). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/coll.h"
#include "coll/fast_lane.h"
#include "core/copy.h"
#include "core/error.h"
#include "sched/executor.h"
#include "tune/tune.h"

typedef collie_request_t req_t;

static collie_result_t check_base(collie_comm_t *comm, const char *fn, req_t **req) {
  collie_result_t res = collie_comm_check(comm, fn);
  if (res) return res;
  if (!req) return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: request is NULL", fn, comm->rank);
  return COLLIE_SUCCESS;
}

static collie_result_t check_op(collie_comm_t *comm, const char *fn, collie_redop_t op) {
  if ((unsigned)op >= COLLIE_NUM_OPS)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT,
                        "%s on rank %d: reduction op %d is not a collie op (sum, prod, max, min, avg)", fn, comm->rank,
                        (int)op);
  return COLLIE_SUCCESS;
}

static collie_result_t check_root(collie_comm_t *comm, const char *fn, int root) {
  if (root < 0 || root >= comm->nranks)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: root %d is not in 0..%d", fn, comm->rank,
                        root, comm->nranks - 1);
  return COLLIE_SUCCESS;
}

static collie_result_t check_buf(collie_comm_t *comm, const char *fn, const void *buf, const char *name, size_t count) {
  if (!buf && count)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: %s is NULL but holds %zu elements", fn,
                        comm->rank, name, count);
  return COLLIE_SUCCESS;
}

/* count * nranks elements, checked for overflow. */
static collie_result_t check_total(collie_comm_t *comm, const char *fn, size_t count, collie_datatype_t dt,
                                   size_t *bytes, size_t *total) {
  collie_result_t res = collie_check_count(comm, fn, count, dt, bytes);
  if (res) return res;
  if (count && (size_t)comm->nranks > SIZE_MAX / 4 / *bytes)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: %zu elements times %d ranks overflows",
                        fn, comm->rank, count, comm->nranks);
  *total = count * (size_t)comm->nranks;
  return COLLIE_SUCCESS;
}

/* Sums a counts array, checking for NULL and overflow. */
static collie_result_t check_counts(collie_comm_t *comm, const char *fn, const size_t *counts, const char *name,
                                    collie_datatype_t dt, size_t *sum) {
  if (!counts)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: %s is NULL", fn, comm->rank, name);
  size_t esz = collie_datatype_size(dt), s = 0;
  for (int r = 0; r < comm->nranks; r++) {
    if (counts[r] > (SIZE_MAX / 4) / (esz ? esz : 1) - s)
      return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: %s[%d]=%zu overflows the address space",
                          fn, comm->rank, name, r, counts[r]);
    s += counts[r];
  }
  *sum = s;
  return COLLIE_SUCCESS;
}

/* Send and receive buffers that overlap without being the call's in-place form: the result
 * would depend on the order in which an algorithm reads and writes (MPI calls it
 * erroneous, NCCL leaves it undefined), so it is refused. `form` says what in place is. */
static collie_result_t check_overlap(collie_comm_t *comm, const char *fn, const void *sendbuf, size_t sbytes,
                                     const void *recvbuf, size_t rbytes, bool in_place, const char *form) {
  if (in_place || !sendbuf || !recvbuf || !sbytes || !rbytes) return COLLIE_SUCCESS;
  uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;
  if (s < r + rbytes && r < s + sbytes)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT,
                        "%s on rank %d: sendbuf (%p, %zu bytes) and recvbuf (%p, %zu bytes) overlap, which only the "
                        "in-place form allows (%s): use separate buffers, or that form",
                        fn, comm->rank, sendbuf, sbytes, recvbuf, rbytes, form);
  return COLLIE_SUCCESS;
}

/* Checks a displacements array against its counts (already checked by check_counts) and
 * fills *extent, the elements the pair spans from the buffer's start. A block past the
 * address space wrapped around: displs[r] = SIZE_MAX / 2 of float64 wrote 8 bytes before
 * the receive buffer and returned success. Blocks of 0 elements are never touched, so
 * their displacements may be anything (as in MPI). */
static collie_result_t check_displs(collie_comm_t *comm, const char *fn, const size_t *counts, const size_t *displs,
                                    const char *name, collie_datatype_t dt, size_t *extent) {
  if (!displs) return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT, "%s on rank %d: %s is NULL", fn, comm->rank, name);
  size_t esz = collie_datatype_size(dt), e = 0;
  for (int r = 0; r < comm->nranks; r++) {
    if (!counts[r]) continue;
    if (displs[r] > (SIZE_MAX / 4) / esz - counts[r])
      return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT,
                          "%s on rank %d: %s[%d]=%zu puts that block of %zu %s elements past the end of the "
                          "address space",
                          fn, comm->rank, name, r, displs[r], counts[r], collie_datatype_name(dt));
    if (displs[r] + counts[r] > e) e = displs[r] + counts[r];
  }
  *extent = e;
  return COLLIE_SUCCESS;
}

/* The sizes the checks fill are initialised at declaration anyway: gcc -O3 cannot see
 * that TRY returns whenever a check did not fill them (-Werror=maybe-uninitialized). */
#define TRY(x)                        \
  do {                                \
    collie_result_t try_res_ = (x);   \
    if (try_res_) return try_res_;    \
  } while (0)

static collie_result_t post_or_done(collie_comm_t *comm, collie_coll_args_t *a, collie_coll_call_t *c, bool empty,
                                    req_t **req) {
  if (empty) return collie_coll_done(comm, a->coll, c, req);
  return collie_coll_post(comm, a, c, req);
}

collie_result_t collie_iallreduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                                  collie_redop_t op, collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_allreduce";
  size_t bytes = 0;
  TRY(check_base(comm, fn, req));
  TRY(collie_check_count(comm, fn, count, dt, &bytes));
  TRY(check_op(comm, fn, op));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", count));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", count));
  TRY(check_overlap(comm, fn, sendbuf, bytes, recvbuf, bytes, sendbuf == recvbuf, "sendbuf == recvbuf"));
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, op, -1, bytes, count, recvbuf, count, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_ALLREDUCE, .count = count, .in_place = sendbuf == recvbuf};
  return post_or_done(comm, &a, &c, count == 0, req);
}

collie_result_t collie_ibroadcast(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt, int root,
                                  collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_broadcast";
  size_t bytes = 0;
  TRY(check_base(comm, fn, req));
  TRY(collie_check_count(comm, fn, count, dt, &bytes));
  TRY(check_root(comm, fn, root));
  if (comm->rank == root) TRY(check_buf(comm, fn, sendbuf, "sendbuf at the root", count));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", count));
  if (comm->rank == root)
    TRY(check_overlap(comm, fn, sendbuf, bytes, recvbuf, bytes, sendbuf == recvbuf, "sendbuf == recvbuf"));
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, COLLIE_SUM, root, bytes, count, NULL, 0, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_BROADCAST, .root = root, .count = count,
                          .in_place = comm->rank == root && sendbuf == recvbuf};
  return post_or_done(comm, &a, &c, count == 0, req);
}

collie_result_t collie_ireduce(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                               collie_redop_t op, int root, collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_reduce";
  size_t bytes = 0;
  TRY(check_base(comm, fn, req));
  TRY(collie_check_count(comm, fn, count, dt, &bytes));
  TRY(check_op(comm, fn, op));
  TRY(check_root(comm, fn, root));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", count));
  if (comm->rank == root) TRY(check_buf(comm, fn, recvbuf, "recvbuf at the root", count));
  bool at_root = comm->rank == root;
  if (at_root) TRY(check_overlap(comm, fn, sendbuf, bytes, recvbuf, bytes, sendbuf == recvbuf, "sendbuf == recvbuf"));
  collie_coll_call_t c = {fn, sendbuf, at_root ? recvbuf : NULL, dt, op, root, bytes, count,
                          at_root ? recvbuf : NULL, at_root ? count : 0, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_REDUCE, .root = root, .count = count,
                          .in_place = at_root && sendbuf == recvbuf};
  return post_or_done(comm, &a, &c, count == 0, req);
}

collie_result_t collie_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, collie_datatype_t dt,
                                  collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_allgather";
  size_t bytes = 0, total = 0;
  TRY(check_base(comm, fn, req));
  TRY(check_total(comm, fn, sendcount, dt, &bytes, &total));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", sendcount));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", total));
  bool in_place = recvbuf && (const char *)sendbuf == (char *)recvbuf + (size_t)comm->rank * bytes;
  TRY(check_overlap(comm, fn, sendbuf, bytes, recvbuf, bytes * (size_t)comm->nranks, in_place,
                    "sendbuf == recvbuf + rank * sendcount elements"));
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, COLLIE_SUM, -1, bytes * (size_t)comm->nranks, sendcount, NULL, 0,
                          NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_ALLGATHER, .count = sendcount, .in_place = in_place};
  return post_or_done(comm, &a, &c, sendcount == 0, req);
}

collie_result_t collie_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                                   const size_t *displs, collie_datatype_t dt, collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_allgatherv";
  size_t bytes = 0, sum = 0;
  TRY(check_base(comm, fn, req));
  TRY(collie_check_count(comm, fn, sendcount, dt, &bytes));
  TRY(check_counts(comm, fn, recvcounts, "recvcounts", dt, &sum));
  size_t span = 0;
  TRY(check_displs(comm, fn, recvcounts, displs, "displs", dt, &span));
  if (recvcounts[comm->rank] != sendcount)
    return collie_error(comm, COLLIE_ERR_INVALID_ARGUMENT,
                        "%s on rank %d: sendcount is %zu but recvcounts[%d] is %zu; they must be equal", fn,
                        comm->rank, sendcount, comm->rank, recvcounts[comm->rank]);
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", sendcount));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", sum));
  size_t esz = collie_datatype_size(dt);
  bool in_place = recvbuf && (const char *)sendbuf == (char *)recvbuf + displs[comm->rank] * esz;
  TRY(check_overlap(comm, fn, sendbuf, bytes, recvbuf, span * esz, in_place,
                    "sendbuf == recvbuf + displs[rank] elements"));
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, COLLIE_SUM, -1, sum * esz, sum, NULL, 0, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_ALLGATHERV, .counts = recvcounts, .displs = displs, .in_place = in_place};
  return post_or_done(comm, &a, &c, sum == 0, req);
}

collie_result_t collie_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, collie_datatype_t dt,
                                       collie_redop_t op, collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_reduce_scatter";
  size_t bytes = 0, total = 0;
  TRY(check_base(comm, fn, req));
  TRY(check_total(comm, fn, recvcount, dt, &bytes, &total));
  TRY(check_op(comm, fn, op));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", total));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", recvcount));
  bool in_place = sendbuf && (char *)recvbuf == (const char *)sendbuf + (size_t)comm->rank * bytes;
  TRY(check_overlap(comm, fn, sendbuf, bytes * (size_t)comm->nranks, recvbuf, bytes, in_place,
                    "recvbuf == sendbuf + rank * recvcount elements"));
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, op, -1, bytes * (size_t)comm->nranks, recvcount, recvbuf,
                          recvcount, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_REDUCE_SCATTER, .count = recvcount, .in_place = in_place};
  return post_or_done(comm, &a, &c, recvcount == 0, req);
}

collie_result_t collie_ireduce_scatterv(const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                                        collie_datatype_t dt, collie_redop_t op, collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_reduce_scatterv";
  size_t bytes = 0, sum = 0;
  TRY(check_base(comm, fn, req));
  TRY(collie_check_count(comm, fn, 0, dt, &bytes));
  TRY(check_op(comm, fn, op));
  TRY(check_counts(comm, fn, recvcounts, "recvcounts", dt, &sum));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", sum));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", recvcounts[comm->rank]));
  size_t esz = collie_datatype_size(dt), off = 0;
  for (int r = 0; r < comm->rank; r++) off += recvcounts[r];
  bool in_place = sendbuf && (char *)recvbuf == (const char *)sendbuf + off * esz;
  TRY(check_overlap(comm, fn, sendbuf, sum * esz, recvbuf, recvcounts[comm->rank] * esz, in_place,
                    "recvbuf == sendbuf + the elements of the ranks before this one"));
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, op, -1, sum * esz, sum, recvbuf, recvcounts[comm->rank], NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_REDUCE_SCATTERV, .counts = recvcounts, .in_place = in_place};
  return post_or_done(comm, &a, &c, sum == 0, req);
}

/* An in-place exchange's private copy of its input, in the communicator's reusable
 * scratch buffer (the operation gives it back when it ends). */
static collie_result_t input_copy(collie_comm_t *comm, const char *fn, const void *src, size_t n, char **out) {
  *out = collie_scratch_take(comm, n + 1);
  if (!*out) return collie_comm_fail_no_memory(comm, fn, "a copy of its %zu-byte in-place input", n);
  collie_copy(*out, src, n, collie_coll_streams(comm, n));
  return COLLIE_SUCCESS;
}

collie_result_t collie_ialltoall(const void *sendbuf, void *recvbuf, size_t count, collie_datatype_t dt,
                                 collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_alltoall";
  size_t bytes = 0, total = 0;
  TRY(check_base(comm, fn, req));
  TRY(check_total(comm, fn, count, dt, &bytes, &total));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", total));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", total));
  /* In place, each algorithm keeps what it has yet to send from being overwritten: the
   * scheduled ones copy the other ranks' blocks to scratch first (algo/direct.c,
   * algo/bruck.c), the shared-memory one stages each piece before it receives into the
   * same place (algo/native). A copy of the whole input here doubled the time of a
   * 2-rank 64 MiB in-place exchange. */
  TRY(check_overlap(comm, fn, sendbuf, bytes * (size_t)comm->nranks, recvbuf, bytes * (size_t)comm->nranks,
                    sendbuf == recvbuf, "sendbuf == recvbuf"));
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, COLLIE_SUM, -1, bytes * (size_t)comm->nranks, count, NULL, 0, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_ALLTOALL, .count = count, .in_place = sendbuf == recvbuf};
  return post_or_done(comm, &a, &c, count == 0, req);
}

#define ALLTOALLV_NOMINAL_BYTES (1u << 20)

/* Bruck forwards other ranks' blocks, so when it is forced for alltoallv every rank first
 * learns every rank's send counts (an allgather; all ranks force alike, as COLLIE_ALGO
 * must be the same everywhere). Otherwise *matrix stays NULL. */
static collie_result_t bruck_matrix(collie_comm_t *comm, const size_t *sendcounts, size_t **matrix) {
  const collie_algo_t *cands[16];
  bool forced;
  *matrix = NULL;
  int k = collie_tune_candidates(comm, COLLIE_COLL_ALLTOALLV, ALLTOALLV_NOMINAL_BYTES, cands, 16, &forced);
  if (k == 0 || !forced || strcmp(cands[0]->name, "bruck") != 0) return COLLIE_SUCCESS;
  size_t n = (size_t)comm->nranks;
  *matrix = malloc(n * n * sizeof(size_t));
  if (!*matrix) return collie_comm_fail_no_memory(comm, "collie_alltoallv", "the %zu x %zu table of counts", n, n);
  _Static_assert(sizeof(size_t) == 8, "counts travel as uint64");
  req_t *r;
  collie_result_t res = collie_iallgather(sendcounts, *matrix, n, COLLIE_UINT64, comm, &r);
  if (!res) res = collie_wait(r); /* not collie_finish: the builder needs it now, even inside a group */
  if (res) {
    free(*matrix);
    *matrix = NULL;
  }
  return res;
}

collie_result_t collie_ialltoallv(const void *sendbuf, const size_t *sendcounts, const size_t *sdispls, void *recvbuf,
                                  const size_t *recvcounts, const size_t *rdispls, collie_datatype_t dt,
                                  collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_alltoallv";
  size_t bytes = 0, ssum = 0, rsum = 0;
  TRY(check_base(comm, fn, req));
  TRY(collie_check_count(comm, fn, 0, dt, &bytes));
  TRY(check_counts(comm, fn, sendcounts, "sendcounts", dt, &ssum));
  TRY(check_counts(comm, fn, recvcounts, "recvcounts", dt, &rsum));
  size_t sspan = 0, rspan = 0;
  TRY(check_displs(comm, fn, sendcounts, sdispls, "sdispls", dt, &sspan));
  TRY(check_displs(comm, fn, recvcounts, rdispls, "rdispls", dt, &rspan));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", ssum));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", rsum));
  size_t esz = collie_datatype_size(dt);
  TRY(check_overlap(comm, fn, sendbuf, sspan * esz, recvbuf, rspan * esz, sendbuf == recvbuf, "sendbuf == recvbuf"));
  char *temp = NULL;
  if (sendbuf && sendbuf == recvbuf) {
    /* In place the send and receive blocks may lie differently in the one buffer (this
     * rank's own block too), which the algorithms' in-place paths do not handle: they
     * exchange from a private copy of the whole input. */
    TRY(input_copy(comm, fn, sendbuf, sspan * esz, &temp));
    sendbuf = temp;
  }
  /* The automatic choice must be the same on every rank, and a rank sees only its own
   * counts: weigh a nominal size, not this rank's. */
  collie_coll_call_t c = {fn, sendbuf, recvbuf, dt, COLLIE_SUM, -1, ALLTOALLV_NOMINAL_BYTES, 0, NULL, 0, temp};
  collie_coll_args_t a = {.coll = COLLIE_COLL_ALLTOALLV, .counts = sendcounts, .displs = sdispls,
                          .counts2 = recvcounts, .displs2 = rdispls};
  size_t *matrix = NULL;
  collie_result_t res = bruck_matrix(comm, sendcounts, &matrix);
  if (res) {
    collie_scratch_give(comm, temp);
    return res;
  }
  a.matrix = matrix;
  /* Zero-size on this rank does not mean zero everywhere: always post. */
  res = post_or_done(comm, &a, &c, false, req);
  free(matrix); /* only the schedule builder reads it */
  if (res) collie_scratch_give(comm, temp);
  return res;
}

collie_result_t collie_iscatter(const void *sendbuf, void *recvbuf, size_t recvcount, collie_datatype_t dt, int root,
                                collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_scatter";
  size_t bytes = 0, total = 0;
  TRY(check_base(comm, fn, req));
  TRY(check_total(comm, fn, recvcount, dt, &bytes, &total));
  TRY(check_root(comm, fn, root));
  if (comm->rank == root) TRY(check_buf(comm, fn, sendbuf, "sendbuf at the root", total));
  TRY(check_buf(comm, fn, recvbuf, "recvbuf", recvcount));
  bool in_place = comm->rank == root && sendbuf && (char *)recvbuf == (const char *)sendbuf + (size_t)root * bytes;
  if (comm->rank == root)
    TRY(check_overlap(comm, fn, sendbuf, bytes * (size_t)comm->nranks, recvbuf, bytes, in_place,
                      "recvbuf == sendbuf + root * recvcount elements"));
  collie_coll_call_t c = {fn, comm->rank == root ? sendbuf : NULL, recvbuf, dt, COLLIE_SUM, root,
                          bytes * (size_t)comm->nranks, recvcount, NULL, 0, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_SCATTER, .root = root, .count = recvcount, .in_place = in_place};
  return post_or_done(comm, &a, &c, recvcount == 0, req);
}

collie_result_t collie_igather(const void *sendbuf, void *recvbuf, size_t sendcount, collie_datatype_t dt, int root,
                               collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_gather";
  size_t bytes = 0, total = 0;
  TRY(check_base(comm, fn, req));
  TRY(check_total(comm, fn, sendcount, dt, &bytes, &total));
  TRY(check_root(comm, fn, root));
  TRY(check_buf(comm, fn, sendbuf, "sendbuf", sendcount));
  if (comm->rank == root) TRY(check_buf(comm, fn, recvbuf, "recvbuf at the root", total));
  bool at_root = comm->rank == root;
  bool in_place = at_root && recvbuf && (const char *)sendbuf == (char *)recvbuf + (size_t)root * bytes;
  if (at_root)
    TRY(check_overlap(comm, fn, sendbuf, bytes, recvbuf, bytes * (size_t)comm->nranks, in_place,
                      "sendbuf == recvbuf + root * sendcount elements"));
  collie_coll_call_t c = {fn, sendbuf, at_root ? recvbuf : NULL, dt, COLLIE_SUM, root, bytes * (size_t)comm->nranks,
                          sendcount, NULL, 0, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_GATHER, .root = root, .count = sendcount, .in_place = in_place};
  return post_or_done(comm, &a, &c, sendcount == 0, req);
}

collie_result_t collie_ibarrier(collie_comm_t *comm, req_t **req) {
  const char *fn = "collie_barrier";
  TRY(check_base(comm, fn, req));
  collie_coll_call_t c = {fn, NULL, NULL, COLLIE_UINT8, COLLIE_SUM, -1, 0, 0, NULL, 0, NULL};
  collie_coll_args_t a = {.coll = COLLIE_COLL_BARRIER};
  return post_or_done(comm, &a, &c, false, req);
}

/* Blocking forms: COLLIE_BLOCKING (post.h). */
collie_result_t collie_allreduce(const void *s, void *r, size_t n, collie_datatype_t dt, collie_redop_t op,
                                 collie_comm_t *comm) {
  collie_result_t fast;
  if (collie_fast_allreduce(s, r, n, dt, op, comm, &fast)) return fast;
  COLLIE_BLOCKING(collie_iallreduce(s, r, n, dt, op, comm, &req));
}
collie_result_t collie_broadcast(const void *s, void *r, size_t n, collie_datatype_t dt, int root, collie_comm_t *comm) {
  collie_result_t fast;
  if (collie_fast_broadcast(s, r, n, dt, root, comm, &fast)) return fast;
  COLLIE_BLOCKING(collie_ibroadcast(s, r, n, dt, root, comm, &req));
}
collie_result_t collie_reduce(const void *s, void *r, size_t n, collie_datatype_t dt, collie_redop_t op, int root,
                              collie_comm_t *comm) {
  collie_result_t fast;
  if (collie_fast_reduce(s, r, n, dt, op, root, comm, &fast)) return fast;
  COLLIE_BLOCKING(collie_ireduce(s, r, n, dt, op, root, comm, &req));
}
collie_result_t collie_allgather(const void *s, void *r, size_t n, collie_datatype_t dt, collie_comm_t *comm) {
  collie_result_t fast;
  if (collie_fast_allgather(s, r, n, dt, comm, &fast)) return fast;
  COLLIE_BLOCKING(collie_iallgather(s, r, n, dt, comm, &req));
}
collie_result_t collie_allgatherv(const void *s, size_t n, void *r, const size_t *rc, const size_t *d,
                                  collie_datatype_t dt, collie_comm_t *comm) {
  COLLIE_BLOCKING(collie_iallgatherv(s, n, r, rc, d, dt, comm, &req));
}
collie_result_t collie_reduce_scatter(const void *s, void *r, size_t n, collie_datatype_t dt, collie_redop_t op,
                                      collie_comm_t *comm) {
  collie_result_t fast;
  if (collie_fast_reduce_scatter(s, r, n, dt, op, comm, &fast)) return fast;
  COLLIE_BLOCKING(collie_ireduce_scatter(s, r, n, dt, op, comm, &req));
}
collie_result_t collie_reduce_scatterv(const void *s, void *r, const size_t *rc, collie_datatype_t dt,
                                       collie_redop_t op, collie_comm_t *comm) {
  COLLIE_BLOCKING(collie_ireduce_scatterv(s, r, rc, dt, op, comm, &req));
}
collie_result_t collie_alltoall(const void *s, void *r, size_t n, collie_datatype_t dt, collie_comm_t *comm) {
  collie_result_t fast;
  if (collie_fast_alltoall(s, r, n, dt, comm, &fast)) return fast;
  COLLIE_BLOCKING(collie_ialltoall(s, r, n, dt, comm, &req));
}
collie_result_t collie_alltoallv(const void *s, const size_t *sc, const size_t *sd, void *r, const size_t *rc,
                                 const size_t *rd, collie_datatype_t dt, collie_comm_t *comm) {
  COLLIE_BLOCKING(collie_ialltoallv(s, sc, sd, r, rc, rd, dt, comm, &req));
}
collie_result_t collie_scatter(const void *s, void *r, size_t n, collie_datatype_t dt, int root, collie_comm_t *comm) {
  COLLIE_BLOCKING(collie_iscatter(s, r, n, dt, root, comm, &req));
}
collie_result_t collie_gather(const void *s, void *r, size_t n, collie_datatype_t dt, int root, collie_comm_t *comm) {
  COLLIE_BLOCKING(collie_igather(s, r, n, dt, root, comm, &req));
}
collie_result_t collie_barrier(collie_comm_t *comm) {
  collie_result_t fast;
  if (collie_fast_barrier(comm, &fast)) return fast;
  COLLIE_BLOCKING(collie_ibarrier(comm, &req));
}
