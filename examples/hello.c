/* hello: the smallest complete collie program.
 *
 * Every rank joins the job that its launcher started (collie_comm_init_env), the ranks sum
 * their rank numbers with an allreduce, pass a token around a ring with a grouped send and
 * receive, meet at a barrier and leave. It uses nothing but collie.h.
 *
 *   cc hello.c $(pkg-config --cflags --libs collie) -o hello
 *   collie-run -n 4 ./hello
 *
 * Exits non-zero if any call fails or any result is wrong. */
#include <stdio.h>

#include <collie.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    collie_result_t r_ = (call);                                                                   \
    if (r_ != COLLIE_SUCCESS) {                                                                    \
      fprintf(stderr, "hello: %s failed: %s: %s\n", #call, collie_get_error_string(r_),            \
              collie_get_last_error(comm));                                                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(void) {
  collie_comm_t *comm = NULL;
  int rank, size;
  CHECK(collie_comm_init_env(&comm));
  CHECK(collie_comm_rank(comm, &rank));
  CHECK(collie_comm_size(comm, &size));

  /* allreduce: every rank contributes its rank; all get 0 + 1 + ... + (size-1) */
  int sum = rank;
  CHECK(collie_allreduce(&sum, &sum, 1, COLLIE_INT32, COLLIE_SUM, comm));
  if (sum != size * (size - 1) / 2) {
    fprintf(stderr, "hello: rank %d: allreduce gave %d, expected %d\n", rank, sum, size * (size - 1) / 2);
    return 1;
  }

  /* ring: send my rank to the right, receive the left neighbour's, issued together */
  int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
  CHECK(collie_group_start());
  CHECK(collie_send(&rank, 1, COLLIE_INT32, right, comm));
  CHECK(collie_recv(&got, 1, COLLIE_INT32, left, comm));
  CHECK(collie_group_end());
  if (got != left) {
    fprintf(stderr, "hello: rank %d: received %d from the left, expected %d\n", rank, got, left);
    return 1;
  }

  CHECK(collie_barrier(comm));
  printf("hello from rank %d of %d: sum of ranks %d, left neighbour %d\n", rank, size, sum, got);
  CHECK(collie_comm_destroy(comm));
  return 0;
}
