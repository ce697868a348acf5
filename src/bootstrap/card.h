/* A rank's "card": what the others must know to reach it and to name it in errors. */
#ifndef COLLIE_CARD_H
#define COLLIE_CARD_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#define COLLIE_CAP_SHM 1u
#define COLLIE_CARD_CPU_WORDS 16

typedef struct {
  int32_t rank;
  int32_t pid;
  uint32_t version;
  uint32_t caps;
  char hostname[64];
  char host_id[64];                   /* equal host_id: shared memory is possible */
  struct sockaddr_storage data_addr;  /* where this rank accepts transport connections */
  /* The CPUs its affinity mask holds (CPU c is bit c % 64 of cpus[c / 64]; CPUs from 1024
   * on are left out); all zero when the mask could not be read. With its host's other
   * ranks' it says how many cores they share (core/comm_init.c, the wait policy). */
  uint64_t cpus[COLLIE_CARD_CPU_WORDS];
} collie_card_t;

#endif
