/* The connected sockets a forked child must not keep open (see fork_guard.h). */
#include "bootstrap/fork_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int *fds;
static int nfds, cap;

/* The forking thread holds the lock across fork, so the child's copy of the list is
 * whole; the child closes what it lists and starts with an empty list. */
static void before_fork(void) { pthread_mutex_lock(&lock); }
static void in_parent(void) { pthread_mutex_unlock(&lock); }
static void in_child(void) {
  for (int i = 0; i < nfds; i++) close(fds[i]);
  nfds = 0;
  pthread_mutex_unlock(&lock);
}

static void install(void) { pthread_atfork(before_fork, in_parent, in_child); }

/* Called with the lock held. */
static void add(int fd) {
  if (fd < 0) return;
  if (nfds == cap) {
    int ncap = cap ? 2 * cap : 64;
    int *n = realloc(fds, sizeof(int) * (size_t)ncap);
    if (n) {
      fds = n;
      cap = ncap;
    }
  }
  if (nfds < cap) fds[nfds++] = fd; /* out of memory: the child keeps this one */
}

int collie_guarded_socket(int family) {
  pthread_once(&once, install);
  pthread_mutex_lock(&lock);
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int e = errno;
  add(fd);
  pthread_mutex_unlock(&lock);
  errno = e;
  return fd;
}

int collie_guarded_accept(int listen_fd, struct sockaddr_storage *from) {
  pthread_once(&once, install);
  int fl = fcntl(listen_fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK);
  socklen_t flen = sizeof(*from);
  pthread_mutex_lock(&lock);
  /* On Linux the connection does not inherit O_NONBLOCK from the listener. */
  int fd = accept4(listen_fd, (struct sockaddr *)from, &flen, SOCK_CLOEXEC);
  int e = errno;
  add(fd);
  pthread_mutex_unlock(&lock);
  errno = e;
  return fd;
}

void collie_socket_close(int fd) {
  if (fd < 0) return;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nfds; i++)
    if (fds[i] == fd) {
      fds[i] = fds[--nfds];
      break;
    }
  /* Closed under the lock: a fork in between would otherwise list a number that a new
   * file may already have taken. */
  close(fd);
  pthread_mutex_unlock(&lock);
}
