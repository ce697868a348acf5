/* collie_comm_init_env twice in one job (create, destroy, create again), as a program that
 * rebuilds its communicator does. Under collie-run rank 0 adopted the inherited listening
 * socket by its number (COLLIE_ROOT_LISTEN_FD) every time: the second time that number
 * belonged to whatever the program had opened since, which collie then made nonblocking,
 * listened on in vain and closed. And the root port could not be bound again while the
 * first communicator's connections lingered in TIME_WAIT ("Address already in use").
 *   init_twice   (under collie-run) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collie.h"

static int create_and_check(int round) {
  collie_comm_t *comm = NULL;
  collie_result_t r = collie_comm_init_env(&comm);
  if (r) {
    fprintf(stderr, "init_twice: creation %d: %s: %s\n", round, collie_get_error_string(r),
            collie_get_last_error(NULL));
    return -1;
  }
  int rank = -1, n = 0, one = 1, sum = 0;
  collie_comm_rank(comm, &rank);
  collie_comm_size(comm, &n);
  r = collie_allreduce(&one, &sum, 1, COLLIE_INT32, COLLIE_SUM, comm);
  if (r || sum != n) {
    fprintf(stderr, "init_twice: rank %d, creation %d: allreduce gave %d of %d: %s\n", rank, round, sum, n,
            r ? collie_get_last_error(comm) : "wrong sum");
    collie_comm_abort(comm);
    return -1;
  }
  r = collie_comm_destroy(comm);
  if (r) {
    fprintf(stderr, "init_twice: rank %d: destroy %d: %s\n", rank, round, collie_get_last_error(NULL));
    return -1;
  }
  return rank;
}

int main(void) {
  int rank = create_and_check(1);
  if (rank < 0) return 1;
  /* The program's own sockets, until one takes the number of the inherited listener. */
  const char *inherited = getenv("COLLIE_ROOT_LISTEN_FD");
  int mine = -1;
  if (rank == 0 && inherited) {
    for (int i = 0; i < 64 && mine != atoi(inherited); i++) mine = socket(AF_INET, SOCK_STREAM, 0);
    if (mine != atoi(inherited)) {
      fprintf(stderr, "init_twice: no socket of ours took descriptor %s\n", inherited);
      return 1;
    }
  }
  if (create_and_check(2) < 0) return 1;
  if (mine >= 0) {
    int fl = fcntl(mine, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK)) {
      fprintf(stderr, "init_twice: rank 0's own socket %d was %s by the second creation\n", mine,
              fl < 0 ? "closed" : "made nonblocking");
      return 1;
    }
  }
  printf("init_twice: rank %d created, used and destroyed two communicators\n", rank);
  return 0;
}
