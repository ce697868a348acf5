/* One message larger than 4 GiB between two ranks (threads of this process), checked
 * word by word: sizes are size_t everywhere, nothing may truncate at 2^31 or 2^32.
 *   big_message [bytes]   (default 4 GiB + 4 KiB + 8) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collie.h"

static size_t nbytes = (4ull << 30) + 4096 + 8;

static uint64_t word(size_t i) { return i * 0x9e3779b97f4a7c15ull + 1; }

typedef struct {
  collie_comm_t *comm;
  int rc;
} arg_t;

static void *run(void *p) {
  arg_t *a = p;
  int rank;
  collie_comm_rank(a->comm, &rank);
  size_t nwords = nbytes / 8;
  uint64_t *buf = malloc(nbytes);
  if (!buf) {
    fprintf(stderr, "big_message: rank %d cannot allocate %zu bytes\n", rank, nbytes);
    a->rc = 1;
    return NULL;
  }
  collie_result_t r;
  if (rank == 0) {
    for (size_t i = 0; i < nwords; i++) buf[i] = word(i);
    r = collie_send(buf, nbytes, COLLIE_UINT8, 1, a->comm);
  } else {
    memset(buf, 0x5a, nbytes); /* not 0: that would become calloc, and the copy would pay the page faults */
    r = collie_recv(buf, nbytes, COLLIE_UINT8, 0, a->comm);
    for (size_t i = 0; r == COLLIE_SUCCESS && i < nwords; i++)
      if (buf[i] != word(i)) {
        fprintf(stderr, "big_message: word %zu (byte %zu) is %llx, expected %llx\n", i, i * 8,
                (unsigned long long)buf[i], (unsigned long long)word(i));
        a->rc = 1;
        break;
      }
  }
  if (r) {
    fprintf(stderr, "big_message: rank %d: %s\n", rank, collie_get_last_error(a->comm));
    a->rc = 1;
  }
  free(buf);
  if (collie_comm_destroy(a->comm)) a->rc = 1;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) nbytes = strtoull(argv[1], NULL, 0) & ~(size_t)7;
  collie_comm_t *comms[2];
  if (collie_comm_init_all(comms, 2)) {
    fprintf(stderr, "big_message: init failed: %s\n", collie_get_last_error(NULL));
    return 1;
  }
  pthread_t th[2];
  arg_t args[2] = {{comms[0], 0}, {comms[1], 0}};
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run, &args[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  if (args[0].rc | args[1].rc) return 1;
  printf("big_message: %zu bytes arrived intact\n", nbytes);
  return 0;
}
