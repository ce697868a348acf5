/* TCP transport: connection setup and the poll set used while waiting. */
#ifndef COLLIE_TCP_H
#define COLLIE_TCP_H

#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "core/comm.h"

typedef struct collie_tcp_state {
  int listen_fd;
  struct sockaddr_storage addr; /* what the card advertises */
  int nsocks;
  uint64_t stripe_min;
} collie_tcp_state_t;

/* Listens on `ip` (port chosen by collie_listen); the address goes into this rank's card. */
collie_result_t collie_tcp_listen(collie_comm_t *comm, const struct sockaddr_storage *ip);
/* Connects to every peer p with use_tcp[p] (lower ranks accept, higher connect). */
collie_result_t collie_tcp_connect(collie_comm_t *comm, const bool *use_tcp);
/* Fills pollfds for sockets of peers with ready transfers; returns how many. */
int collie_tcp_pollfds(collie_comm_t *comm, struct pollfd *fds, int max);
void collie_tcp_destroy(collie_comm_t *comm);

#endif
