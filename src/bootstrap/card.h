/* A rank's "card": what the others must know to reach it and to name it in errors. */
#ifndef COLLIE_CARD_H
#define COLLIE_CARD_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#define COLLIE_CAP_SHM 1u

typedef struct {
  int32_t rank;
  int32_t pid;
  uint32_t version;
  uint32_t caps;
  char hostname[64];
  char host_id[64];                   /* equal host_id: shared memory is possible */
  struct sockaddr_storage data_addr;  /* where this rank accepts transport connections */
} collie_card_t;

#endif
