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

#include <sys/socket.h>

/* socket() and accept(), listing the new descriptor before any fork can copy it: the
 * forking thread waits for the list's lock (pthread_atfork), so no child is made between
 * the call and the listing. (Listed after the call, a fork by another thread in between,
 * or during the connect that follows, left the child holding the connection.) The
 * accept does not block: the listening socket is made nonblocking (EAGAIN when the
 * connection went away since poll saw it). */
int collie_guarded_socket(int family);
int collie_guarded_accept(int listen_fd, struct sockaddr_storage *from);
/* Removes fd from the list and closes it: every listed connection is closed this way, so
 * that a later file reusing the number is never closed in a child. */
void collie_socket_close(int fd);

#endif
