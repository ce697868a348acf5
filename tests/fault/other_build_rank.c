/* A rank from another build of the same collie version: it presents the job's secret
 * (COLLIE_JOB_ID and COLLIE_ROOT_ADDR, derived as collie_comm_init_env derives them) with
 * a greeting whose head (secret, nranks, version, rank) is this build's and whose rest is
 * longer, as a build whose settings or card grew would send. Rank 0 must refuse it at once naming the builds (it once dropped it as "sent no
 * collie greeting" and waited for the connect timeout), and tell it why.
 *   COLLIE_ROOT_ADDR=127.0.0.1:PORT COLLIE_JOB_ID=J COLLIE_RANK=1 COLLIE_NRANKS=2 other_build_rank
 * Exit 0 when rank 0's answer is a refusal that names different builds. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/unique_id.h"
#include "collie.h"

/* The greeting's fixed head and frame, as bootstrap/control.c lays them out. */
enum { FRAME_MAGIC = 0x434c4354, FRAME_HELLO = 1, FRAME_REJECT = 3 };

int main(void) {
  const char *addr = getenv("COLLIE_ROOT_ADDR"), *job = getenv("COLLIE_JOB_ID");
  const char *rank_s = getenv("COLLIE_RANK"), *n_s = getenv("COLLIE_NRANKS");
  if (!addr || !job || !rank_s || !n_s || !strchr(addr, ':')) {
    fprintf(stderr, "other_build_rank: set COLLIE_ROOT_ADDR=IP:PORT, COLLIE_JOB_ID, COLLIE_RANK, COLLIE_NRANKS\n");
    return 2;
  }
  char key[512];
  int klen = snprintf(key, sizeof(key), "c-%s|%s", job, addr);
  uint64_t h[2] = {collie_hash64(key, (size_t)klen, 1), collie_hash64(key, (size_t)klen, 2)};
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(strchr(addr, ':') + 1))};
  char ip[64];
  snprintf(ip, sizeof(ip), "%.*s", (int)(strchr(addr, ':') - addr), addr);
  inet_pton(AF_INET, ip, &sa.sin_addr);
  int fd = -1;
  for (int i = 0; i < 200 && fd < 0; i++) { /* rank 0 may not listen yet */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
      close(fd);
      fd = -1;
      nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
  }
  if (fd < 0) {
    printf("other_build_rank: could not reach rank 0 at %s\n", addr);
    return 1;
  }
  /* secret, nranks, version, then the card (its rank first) and 4 KiB more: longer than
   * this build's greeting, whose size only bootstrap/control.c knows */
  size_t len = 16 + 4 + 4 + 4 + 4096;
  uint8_t *hello = calloc(1, len);
  int32_t nranks = atoi(n_s), rank = atoi(rank_s);
  uint32_t version = COLLIE_VERSION_CODE;
  memcpy(hello, h, 16);
  memcpy(hello + 16, &nranks, 4);
  memcpy(hello + 20, &version, 4);
  memcpy(hello + 24, &rank, 4);
  uint32_t frame[4] = {FRAME_MAGIC, FRAME_HELLO, (uint32_t)rank, (uint32_t)len};
  if (write(fd, frame, sizeof(frame)) != sizeof(frame) || write(fd, hello, len) != (ssize_t)len) {
    printf("other_build_rank: could not send the greeting\n");
    return 1;
  }
  uint32_t reply[4];
  char text[1024] = "";
  ssize_t got = recv(fd, reply, sizeof(reply), MSG_WAITALL);
  if (got == sizeof(reply) && reply[0] == FRAME_MAGIC && reply[3] < sizeof(text))
    recv(fd, text, reply[3], MSG_WAITALL);
  printf("other_build_rank: rank 0 answered frame type %u: %s\n", got == sizeof(reply) ? reply[1] : 0, text);
  free(hello);
  close(fd);
  return got == sizeof(reply) && reply[1] == FRAME_REJECT && strstr(text, "different builds") ? 0 : 1;
}
