/* Progress across communicators. Without a progress thread, operations move only inside
 * collie calls, and a wait used to move only its own communicator's: a rank waiting for
 * communicator B while its nonblocking operations on A were pending left A's peers waiting,
 * and when another rank waited for A first, both waited until COLLIE_EXEC_TIMEOUT (MPI
 * progresses every communicator in any call). Each thread remembers the communicators it
 * posted nonblocking operations on, and its idle waits move them too. */
#ifndef COLLIE_PROGRESS_OTHERS_H
#define COLLIE_PROGRESS_OTHERS_H

#include "core/comm.h"

/* This thread posted an operation on comm that it may not wait for next (nonblocking, or
 * in a group). Takes a reference, kept until comm is destroyed, the thread exits, or a
 * full list needs the place while comm has nothing in flight. */
void collie_others_note(collie_comm_t *comm);
/* From an idle wait on `waiting` (no lock held): one pass over this thread's other
 * communicators, each only if its lock is free at once. Returns 1 if any moved, 0 if some
 * have operations in flight that did not, -1 if none was looked at with any. */
int collie_others_progress(collie_comm_t *waiting);
/* The same from a wait that is on no communicator (creating one): for
 * collie_socket_idle_with. */
int collie_others_idle(void);
/* This thread destroys comm: it forgets it (and drops its reference). */
void collie_others_forget(collie_comm_t *comm);

#endif
