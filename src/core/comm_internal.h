/* Internal entry points shared by the communicator's files. */
#ifndef COLLIE_COMM_INTERNAL_H
#define COLLIE_COMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/comm.h"

/* init_rank with an optional already-listening root socket (collie-run, split). */
collie_result_t collie_comm_init_internal(collie_comm_t **out, int nranks, collie_unique_id_t id, int rank,
                                          const collie_config_t *config, int listen_fd);
/* Releases transports, threads and sockets (not the struct itself). */
void collie_comm_teardown(collie_comm_t *comm);
/* What the other ranks are told when this rank aborts its communicator. */
void collie_abort_notice(const collie_comm_t *comm, char *buf, size_t len);
void collie_comm_free(collie_comm_t *comm);
collie_result_t collie_start_progress_thread(collie_comm_t *comm);
/* Checks COLLIE_ALGO / config->algo names (tune/). */
collie_result_t collie_check_algo_config(collie_comm_t *comm);
/* Binds exactly addr's port (on addr's IP, or any IP when that one is not local). */
int collie_listen_exact(struct sockaddr_storage *addr);

/* The pipelining chunk when COLLIE_CHUNK_SIZE is unset: larger when some ranks talk TCP. */
size_t collie_auto_chunk_bytes(bool tcp);

/* Waits for every issued operation; returns the communicator's failure, if any. */
collie_result_t collie_comm_synchronize_internal(collie_comm_t *comm);
/* A waiter's place in the spin / yield / sleep policy: its own, since several threads may
 * wait on one communicator at once. Zeroed at the start of a wait; `rounds` back to 0 when
 * something moved. */
typedef struct {
  int rounds;             /* idle rounds in a row */
  int polls_left;         /* oversubscribed: polls before the next yield */
  int64_t since_ns, ns;   /* when the idle time began, and how long it is (every 64 rounds) */
  bool counted;           /* in comm->waiters; the waiter uncounts when its wait ends */
  bool may_count;         /* false: counted for the whole wait, or never (comm_destroy.c) */
} collie_waiter_t;

/* One step of the policy for waiter w, whose flag is `done`. Yields and sleeps read the
 * shared segments: a waiter that may count first counts itself in comm->waiters, then
 * returns if done meanwhile (comm_destroy.c). */
void collie_idle(collie_comm_t *comm, collie_waiter_t *w, _Atomic int *done);

/* Under comm->lock, after a progress pass over comm that moved nothing: keeps comm's idle
 * clock, fails it with a local peer's posted failure, reports its stall (and asks the peer
 * it waits for what that one waits for) each interval, and with `may_time_out` (a wait on
 * comm itself) fails it after COLLIE_EXEC_TIMEOUT. `timed`: read the clock now. */
void collie_check_idle(collie_comm_t *comm, bool timed, bool may_time_out);

#endif
