/* Who a timeout should blame: what this process waits for, and what its peers said they
 * wait for.
 *
 * A rank that times out waiting for a peer names that peer; but the peer may be waiting
 * too, on another communicator or the same one, for a third rank that stopped, and every
 * rank of the chain times out at about the same moment. Whichever is first tells the others
 * its sentence, so the program often heard only of an innocent rank in the middle (a random
 * test that froze one rank of 2 to 6 with SIGSTOP: in 7 runs of 20, some rank's error named
 * only others). So a stalled rank's report also asks the peer it waits for what that peer
 * waits for (bootstrap/stall.c); the peer answers from this process's communicators, with the
 * end of its own chain as far as its own question found it. Each report interval (2 s) the
 * answers reach one rank further, and the timeout's sentence names both the peer's wait and
 * the far end: "...; asked, rank 0 (pid ...) has itself waited 1.5 s without progress on
 * another communicator (where it is rank 0 of 5), in barrier #65: waiting in shared memory for
 * rank 4 (pid ...) to enter the collective (round 1 of 1)". A stalled rank also posts its
 * answer in its shared-memory segments, where a peer of its host reads it when rank 0, which
 * passes questions on, is stopped. Where nobody answers, a peer on this host whose process is
 * stopped (/proc) is named as such. */
#ifndef COLLIE_OWN_WAITS_H
#define COLLIE_OWN_WAITS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/comm.h"

enum { COLLIE_WAITS_TEXT = 480 }; /* one hop's description, and the chain's end */

/* Every working communicator of the process is listed from its creation to its teardown. */
void collie_own_waits_add(collie_comm_t *comm);
void collie_own_waits_remove(collie_comm_t *comm);

/* The answer for rank `asker` of `asking` (where the question came from): of this
 * process's communicators with an operation pending without progress, one whose chain does
 * not end in a wait for this process, that does not wait for the asker's own process (with
 * ranks as threads, another thread of it), that a
 * thread waits in, and stalled longest, in that order. `text`: "rank 0 (pid ...) has itself
 * waited 1.5 s without progress on another communicator (where it is rank 0 of 5), in
 * barrier #65: waiting ...", or that it is not waiting in collie; `end`: the far end of the
 * chain as that communicator's own question found it, or "". Takes the process's list lock
 * and tries the communicators' locks (a busy one is skipped: it is moving). */
void collie_own_waits_describe(collie_comm_t *asking, int asker, char *text, char *end);

/* Under held->lock, at its stall report: posts in the segment of each communicator of the
 * process with local peers what the process waits for (as collie_own_waits_describe
 * answers, asked by the communicator's own rank), for a local peer whose question rank 0
 * does not pass on (stopped, or slow): collie_peer_said reads it there. */
void collie_own_waits_post(collie_comm_t *held);

/* Under comm->lock, at its timeout: what the peer its stall report last asked said (and the
 * far end of the chain, and when that end is a wait for this process, what the process
 * waits for on its other communicators), or that the peer, or rank 0 that passes the
 * question on, is a stopped process of this host; "" when there is nothing to add. Starts
 * with "; ". */
void collie_peer_said(collie_comm_t *comm, char *buf, size_t len);

/* Under comm->lock: whether the peer that comm's stall report last asked has answered
 * during this stall. */
bool collie_peer_answered(collie_comm_t *comm);

/* Whether rank `rank` of c is the only rank of c in this process (ranks may be threads):
 * only then can what the process waits for be said to be that rank's. */
bool collie_only_rank_here(const collie_comm_t *c, int rank);

/* Whether the process of rank p of comm is a stopped process of this host (not this one):
 * how ("stopped (SIGSTOP or job control)", "stopped by a debugger"), or NULL. */
const char *collie_rank_stopped(const collie_comm_t *comm, int p);

/* The state letter of process `pid` from /proc/PID/stat ('T': stopped, 't': stopped by a
 * debugger), or 0 when unknown. */
char collie_proc_state(int pid);

/* When process `pid` started (/proc/PID/stat's starttime, in clock ticks since boot), or
 * 0 when unknown: with the pid it names one process, since pids are reused. */
unsigned long long collie_proc_start(int pid);

#endif
