/* Unique id encoding and the registry of listeners created by collie_get_unique_id. */
#include "bootstrap/unique_id.h"

#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ID_MAGIC 0x434f4944u /* "COID" */

typedef struct {
  uint32_t magic;
  uint32_t version;
  uint16_t family;
  uint16_t port;
  uint8_t addr[16];
  uint8_t secret[16];
  uint32_t pad;
  uint64_t checksum;
} wire_id_t;
_Static_assert(sizeof(wire_id_t) <= COLLIE_UNIQUE_ID_BYTES, "id fits");

uint64_t collie_hash64(const void *data, size_t len, uint64_t seed) {
  /* FNV-1a followed by a final mix: good enough to detect garbage, not a MAC. */
  const uint8_t *p = data;
  uint64_t h = 1469598103934665603ull ^ seed;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

void collie_random_bytes(void *buf, size_t len) {
  if (getrandom(buf, len, 0) == (ssize_t)len) return;
  /* Fallback: time and pid mixed; the secret only keeps strangers out. */
  uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)buf;
  for (size_t i = 0; i < len; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    ((uint8_t *)buf)[i] = (uint8_t)(seed >> 56);
  }
}

int collie_id_create(const struct sockaddr_storage *ip, collie_unique_id_t *id, collie_id_info_t *info) {
  memset(info, 0, sizeof(*info));
  if (ip) {
    info->root = *ip;
  } else {
    struct sockaddr_in *sin = (struct sockaddr_in *)&info->root;
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  int fd = collie_listen(&info->root);
  if (fd < 0) return -1;
  collie_random_bytes(info->secret, sizeof(info->secret));
  info->version = COLLIE_VERSION_CODE;
  collie_id_encode(info, id);
  return fd;
}

void collie_id_encode(const collie_id_info_t *info, collie_unique_id_t *id) {
  memset(id, 0, sizeof(*id));
  wire_id_t w = {0};
  w.magic = ID_MAGIC;
  w.version = info->version;
  w.family = (uint16_t)info->root.ss_family;
  if (info->root.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&info->root;
    memcpy(w.addr, &a->sin6_addr, 16);
    w.port = a->sin6_port;
  } else {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&info->root;
    memcpy(w.addr, &a->sin_addr, 4);
    w.port = a->sin_port;
  }
  memcpy(w.secret, info->secret, 16);
  w.checksum = collie_hash64(&w, offsetof(wire_id_t, checksum), 0);
  memcpy(id->internal, &w, sizeof(w));
}

int collie_id_decode(const collie_unique_id_t *id, collie_id_info_t *info) {
  wire_id_t w;
  memcpy(&w, id->internal, sizeof(w));
  if (w.magic != ID_MAGIC || w.checksum != collie_hash64(&w, offsetof(wire_id_t, checksum), 0)) return -1;
  if (w.family != AF_INET && w.family != AF_INET6) return -1;
  memset(info, 0, sizeof(*info));
  info->version = w.version;
  if (w.family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&info->root;
    a->sin6_family = AF_INET6;
    memcpy(&a->sin6_addr, w.addr, 16);
    a->sin6_port = w.port;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&info->root;
    a->sin_family = AF_INET;
    memcpy(&a->sin_addr, w.addr, 4);
    a->sin_port = w.port;
  }
  memcpy(info->secret, w.secret, 16);
  if (w.version / 100 != COLLIE_VERSION_CODE / 100) return -2;
  return 0;
}

typedef struct listener {
  uint8_t secret[16];
  int fd;
  struct listener *next;
} listener_t;
static listener_t *listeners;
static pthread_mutex_t listeners_lock = PTHREAD_MUTEX_INITIALIZER;

int collie_id_listener_register(const uint8_t secret[16], int fd) {
  listener_t *l = malloc(sizeof(*l));
  if (!l) return -1;
  memcpy(l->secret, secret, 16);
  l->fd = fd;
  pthread_mutex_lock(&listeners_lock);
  l->next = listeners;
  listeners = l;
  pthread_mutex_unlock(&listeners_lock);
  return 0;
}

int collie_id_listener_take(const uint8_t secret[16]) {
  int fd = -1;
  pthread_mutex_lock(&listeners_lock);
  for (listener_t **pp = &listeners; *pp; pp = &(*pp)->next) {
    if (memcmp((*pp)->secret, secret, 16) == 0) {
      listener_t *l = *pp;
      fd = l->fd;
      *pp = l->next;
      free(l);
      break;
    }
  }
  pthread_mutex_unlock(&listeners_lock);
  return fd;
}
