/* The unique id: root address, a 128-bit secret and a version magic, checksummed so that
 * garbage is refused at once instead of waited on. */
#ifndef COLLIE_UNIQUE_ID_H
#define COLLIE_UNIQUE_ID_H

#include <stdint.h>
#include <sys/socket.h>

#include "collie.h"

typedef struct {
  struct sockaddr_storage root;
  uint8_t secret[16];
  uint32_t version;
} collie_id_info_t;

void collie_id_encode(const collie_id_info_t *info, collie_unique_id_t *id);
/* 0: ok; -1: not a collie id (bad magic or checksum); -2: another collie version. */
int collie_id_decode(const collie_unique_id_t *id, collie_id_info_t *info);

/* Listening sockets created by collie_get_unique_id in this process, so that rank 0 can
 * adopt the socket instead of binding again. register: 0, or -1 out of memory (the caller
 * still owns fd: kept open unregistered, it held the port, and rank 0 could not bind it).
 * take: the fd (ownership passes) or -1. */
int collie_id_listener_register(const uint8_t secret[16], int fd);
int collie_id_listener_take(const uint8_t secret[16]);

/* A fresh id whose root listens on `ip` (port chosen by collie_listen; loopback when ip
 * is NULL): a random secret, this version. Returns the listening fd, or -1 with errno. */
int collie_id_create(const struct sockaddr_storage *ip, collie_unique_id_t *id, collie_id_info_t *info);

void collie_random_bytes(void *buf, size_t len);
uint64_t collie_hash64(const void *data, size_t len, uint64_t seed);

#endif
