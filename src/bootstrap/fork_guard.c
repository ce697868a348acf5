/* The connected sockets a forked child must not keep open (see fork_guard.h). */
#include "bootstrap/fork_guard.h"

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

void collie_fork_guard_add(int fd) {
  if (fd < 0) return;
  pthread_once(&once, install);
  pthread_mutex_lock(&lock);
  if (nfds == cap) {
    int ncap = cap ? 2 * cap : 64;
    int *n = realloc(fds, sizeof(int) * (size_t)ncap);
    if (n) {
      fds = n;
      cap = ncap;
    }
  }
  if (nfds < cap) fds[nfds++] = fd; /* out of memory: the child keeps this one */
  pthread_mutex_unlock(&lock);
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
