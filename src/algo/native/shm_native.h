/* Shared-memory collectives (algorithm "shm"): when every rank shares one host, each rank
 * stages its data in its own collective area (transport/shm.h) and reads the others'
 * areas directly, instead of passing messages through rings.
 *
 * Unlike the other algorithms this is not a schedule: it runs as a small state machine
 * over rounds that the communicator counts. A round is: wait until everyone has finished
 * the round that last used this staging buffer, stage (fill), publish `ready`; for
 * large reductions reduce this rank's slice of everyone's staged data in place and
 * publish `reduced`; then read what this rank needs (drain) and publish `done`.
 * Two staging buffers alternate, so a rank stages round g+1 while slower peers still read
 * round g. Small reductions take one synchronisation: every rank reduces everything.
 *
 * The staging is a copy-in / copy-out pipeline in chunks that stay in cache
 * (COLLIE_SHM_COLL_SIZE). Where every buffer is reachable the single-copy path
 * (shm_direct.c) skips it: collie_mem_alloc memory, threads of one process, or ordinary
 * buffers by process_vm_readv/writev for the all-to-all and the 2-rank broadcast
 * (COLLIE_SHM_CMA, docs/tuning.md). */
#ifndef COLLIE_SHM_NATIVE_H
#define COLLIE_SHM_NATIVE_H

#include <stdbool.h>

#include "algo/algo.h"
#include "core/comm.h"

struct collie_op;

/* Reductions of at most this many bytes take one synchronisation: every rank reduces
 * every rank's staged vector. Above it, each rank reduces a slice and the others copy it
 * (two synchronisations, but each byte is reduced once instead of by every rank). The
 * cost model (tune/cost_model.c) knows this too. */
#define COLLIE_SHM_SMALL_REDUCTION_BYTES 16384

/* From this size the shared-memory broadcast shares its copying: the root writes 1/p of
 * each receiver's buffer while the receiver reads the rest (shm_direct.c), where the
 * receivers' buffers are reachable. */
#define COLLIE_SHM_BCAST_SPLIT_BYTES (512 * 1024)
/* Where CMA was measured slower than the ring for messages, the 2-rank broadcast still
 * reaches ordinary buffers by it from this size, beyond the caches (shm_direct.c). */
#define COLLIE_SHM_BCAST_CMA_FAR ((size_t)16 << 20)
/* From which size the shared-memory broadcast shares its copying on comm whatever the
 * buffers (it reaches ordinary ones by CMA); 0: only with reachable buffers. The same
 * answer on every rank. */
size_t collie_native_bcast_split_min(const collie_comm_t *comm);

/* Whether this communicator can run `coll` with these arguments in shared memory. The
 * answer depends only on things every rank agrees on. */
bool collie_native_usable(const collie_comm_t *comm, const collie_coll_args_t *args);

/* Fills the operation's native fields (rounds, piece sizes) from the arguments. */
void collie_native_prepare(struct collie_op *op, const collie_coll_args_t *args);

/* At posting (under comm->lock): numbers the operation's rounds after the communicator's
 * last ones. */
void collie_native_number(collie_comm_t *comm, struct collie_op *op);

/* The fast lane of the blocking small collectives (all-reduce, reduce, all-gather,
 * reduce-scatter, all-to-all, broadcast) and the barrier (shm_fast.c, coll/fast_lane.c):
 * a call that runs without an operation while its peers answer at once. */
typedef struct {
  collie_coll_t coll; /* one of those (a barrier: no data, count 0) */
  const void *sendbuf;
  void *recvbuf;
  size_t count;       /* the call's count: a rank's block in all-gather, reduce-scatter, all-to-all */
  size_t bytes;       /* the size the cost model weighs (the memo's: collie_coll_call_t) */
  collie_datatype_t dt;
  collie_redop_t redop; /* COLLIE_SUM where the collective does not reduce */
  int root;             /* a broadcast's or reduce's; -1 otherwise */
} collie_fast_call_t;
/* Under comm->lock, with no operation pending: stages the call as the first and only round
 * of an inline call (wide beyond COLLIE_SHM_INLINE_LINES_SMALL lines), as advance would,
 * and numbers it (the collective's seq, its round *g). -1, with nothing changed, where the
 * round would first have to wait for something (the generic path then does it). */
int collie_native_fast_publish(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t *seq, uint64_t *g);
/* Whether every other rank (a broadcast's receiver: its root; its root and a reduce's
 * other ranks: nobody) has staged
 * round g: 1 with the same call, 0 not yet (*late: the first rank that has not), -1 some
 * rank's call differs, or a broadcast root's claim of operation seq failed (the generic
 * path explains either). */
int collie_native_fast_arrived(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t g, uint64_t seq, int *late);
/* Round g arrived everywhere: moves it into the receive buffer as drain does (reducing
 * where the collective reduces) and finishes it as publish_done does, waking sleeping
 * peers. <0 after failing the communicator (a reduce's call, its comparison deferred,
 * differed from its root's): the generic path then reports it. */
int collie_native_fast_finish(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t g);
/* finish's publish_done (shm_native.c): a reduce's other ranks defer the comparison of
 * round g with the root's; `done` follows as far as the deferred comparisons allow. >0 if
 * `done` moved (the peers were woken), 0 if not, <0 after failing the communicator. */
int collie_native_fast_done(collie_comm_t *comm, const collie_fast_call_t *c, uint64_t g);
/* The fast lane's call, turned into an operation after all (a peer is late, or differs):
 * op, prepared, takes round g, staged already, in the state advance left it (a small
 * reduction's, a barrier's, or an all-gather's, reduce-scatter's, all-to-all's or
 * broadcast's: all drain next). */
void collie_native_adopt(collie_comm_t *comm, struct collie_op *op, uint64_t g);

/* Advances the oldest unfinished native operation (under comm->lock). >0 if it moved. */
int collie_native_progress(collie_comm_t *comm);

/* Whether this rank still has small reduces whose calls it has not compared with their
 * roots' (shm_native.c, defers_check): the progress pass and collie_comm_synchronize go on
 * until none is left. */
bool collie_native_deferred(const collie_comm_t *comm);
/* Compares as many of them as their roots allow, publishing `done` as far as it may (as a
 * progress pass does). <0 after failing the communicator. */
int collie_native_settle(collie_comm_t *comm);
/* The communicator failed: nothing is left to compare. */
void collie_native_drop_deferred(collie_comm_t *comm);
/* The root whose call the oldest deferred comparison waits for (it has not entered that
 * reduce yet), or -1. */
int collie_native_deferred_root(const collie_comm_t *comm);

/* For timeout sentences: what the oldest native operation waits for. */
void collie_native_describe(collie_comm_t *comm, const struct collie_op *op, char *buf, size_t len);
/* Under comm->lock: this rank is about to act as the root of collective #seq (a broadcast
 * or scatter) on a communicator whose ranks all share this host. Fails the communicator
 * with COLLIE_ERR_MISMATCH and returns -1 when another rank also claimed to be its root. */
int collie_claim_root(collie_comm_t *comm, collie_coll_t coll, int root, uint64_t seq);

#endif
