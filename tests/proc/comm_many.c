/* Many communicators at once, as a program with several process groups makes them: K
 * splits of the world (SHAPE halves: every other one in two halves by rank parity; world:
 * all the world's ranks each time), all alive together, each checked with an allreduce
 * and a ring of point-to-point messages of BYTES (send to the right, receive from the
 * left), then all destroyed.
 *   comm_many K BYTES [halves|world [MAX_MIB]]
 * MAX_MIB: fail unless the K communicators together took at most K x MAX_MIB of /dev/shm
 * (rank 0 compares the space used there before and after; run it in a /dev/shm of its
 * own, as tests/proc/shm_footprint_test.sh does, so that nothing else counts). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "collie.h"

static int rank;

static int fail(const char *what, int i) {
  fprintf(stderr, "comm_many: rank %d: %s of communicator %d: %s\n", rank, what, i, collie_get_last_error(NULL));
  return 1;
}

static double shm_used_mib(void) {
  struct statvfs v;
  if (statvfs("/dev/shm", &v) != 0) return -1;
  return (double)(v.f_blocks - v.f_bfree) * (double)v.f_frsize / (1024.0 * 1024.0);
}

/* One communicator's checks: the sum of its ranks' numbers, and each rank's bytes passed
 * around its ring. */
static int exercise(collie_comm_t *c, int i, size_t bytes) {
  int me, n;
  collie_comm_rank(c, &me);
  collie_comm_size(c, &n);
  int64_t v = me + 1, sum = 0;
  if (collie_allreduce(&v, &sum, 1, COLLIE_INT64, COLLIE_SUM, c)) return fail("allreduce", i);
  if (sum != (int64_t)n * (n + 1) / 2) {
    fprintf(stderr, "comm_many: rank %d: allreduce of communicator %d gave %lld, not %lld\n", rank, i,
            (long long)sum, (long long)n * (n + 1) / 2);
    return 1;
  }
  if (!bytes || n == 1) return 0;
  unsigned char *out = malloc(bytes), *in = malloc(bytes);
  if (!out || !in) {
    fprintf(stderr, "comm_many: rank %d: out of memory\n", rank);
    return 1;
  }
  for (size_t j = 0; j < bytes; j++) out[j] = (unsigned char)(me * 31 + i + j);
  const int left = (me + n - 1) % n, right = (me + 1) % n;
  int rc = 0;
  collie_group_start();
  collie_send(out, bytes, COLLIE_UINT8, right, c);
  collie_recv(in, bytes, COLLIE_UINT8, left, c);
  if (collie_group_end()) rc = fail("ring of messages", i);
  for (size_t j = 0; !rc && j < bytes; j++)
    if (in[j] != (unsigned char)(left * 31 + i + j)) {
      fprintf(stderr, "comm_many: rank %d: byte %zu from rank %d of communicator %d is wrong\n", rank, j, left, i);
      rc = 1;
    }
  free(out);
  free(in);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: comm_many K BYTES [halves|world [MAX_MIB]]\n");
    return 2;
  }
  const int k = atoi(argv[1]);
  const size_t bytes = (size_t)strtoull(argv[2], NULL, 0);
  const bool halves = argc < 4 || strcmp(argv[3], "world");
  const double max_mib = argc > 4 ? atof(argv[4]) : 0;
  collie_comm_t *world;
  if (collie_comm_init_env(&world)) {
    fprintf(stderr, "comm_many: %s\n", collie_get_last_error(NULL));
    return 1;
  }
  collie_comm_rank(world, &rank);
  collie_comm_t **c = calloc((size_t)k, sizeof(*c));
  if (!c) return 1;
  double before = 0;
  if (collie_barrier(world)) return fail("barrier", -1);
  if (rank == 0) before = shm_used_mib();
  int rc = 0;
  for (int i = 0; i < k && !rc; i++)
    if (collie_comm_split(world, halves && i % 2 ? rank % 2 : 0, rank, &c[i])) rc = fail("split", i);
  for (int i = 0; i < k && !rc; i++) rc = exercise(c[i], i, bytes);
  if (!rc && collie_barrier(world)) rc = fail("barrier", -1);
  if (!rc && rank == 0) {
    const double per = (shm_used_mib() - before) / k;
    printf("comm_many: %d communicators, %.1f MiB of /dev/shm each\n", k, per);
    if (max_mib > 0 && per > max_mib) {
      fprintf(stderr, "comm_many: each communicator took %.1f MiB of /dev/shm, more than %.1f\n", per, max_mib);
      rc = 1;
    }
  }
  for (int i = 0; i < k; i++)
    if (c[i]) collie_comm_destroy(c[i]);
  free(c);
  collie_comm_destroy(world);
  if (!rc && rank == 0) printf("comm_many: OK\n");
  return rc;
}
