/* The connected sockets a forked child must not keep open.
 *
 * The other ranks learn that a rank died when its connections close. A child forked
 * without exec (a data-loader worker, Python multiprocessing with the fork start method)
 * inherits them, and while it lives a dead rank's connections stay open: the others then
 * wait out COLLIE_EXEC_TIMEOUT (600 s by default) and blame a slow peer. So every
 * connection collie makes or accepts is listed here, and a forked child closes its copies
 * as it starts (pthread_atfork); the parent's stay open. A child cannot use its parent's
 * communicators in any case. */
#ifndef COLLIE_FORK_GUARD_H
#define COLLIE_FORK_GUARD_H

/* Lists fd (a connection this process made or accepted). */
void collie_fork_guard_add(int fd);
/* Removes fd from the list and closes it: every listed connection is closed this way, so
 * that a later file reusing the number is never closed in a child. */
void collie_socket_close(int fd);

#endif
