/* collie_mem_alloc / collie_mem_free (see mem.h). */
#include "core/mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "collie.h"
#include "core/error.h"

typedef struct allocation {
  struct allocation *next;
  char *base;   /* the mapping, header first */
  size_t bytes; /* of the mapping */
  int fd;
  uint64_t id;
} allocation_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static allocation_t *allocations;

collie_result_t collie_mem_alloc(void **ptr, size_t size) {
  if (!ptr) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_mem_alloc: ptr is NULL");
  *ptr = NULL;
  if (size == 0) return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_mem_alloc: size is 0");
  if (size > SIZE_MAX / 2)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT, "collie_mem_alloc: %zu bytes is more than any process can map",
                        size);
  /* The memory file reserves nothing: a size beyond the machine's memory and swap was
   * granted (64 TiB on a 23 GiB machine), and writing it would kill the process later
   * (SIGBUS, or the OOM killer) instead of failing here. */
  struct sysinfo si;
  if (sysinfo(&si) == 0) {
    unsigned long long machine = ((unsigned long long)si.totalram + si.totalswap) * si.mem_unit;
    if (machine && size > machine)
      return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                          "collie_mem_alloc: %zu bytes is more than this machine's memory and swap (%llu MiB); "
                          "check the size (in bytes, not elements)",
                          size, machine >> 20);
  }
  size_t bytes = COLLIE_MEM_HEADER + ((size + 4095) & ~(size_t)4095);
  allocation_t *a = calloc(1, sizeof(*a));
  if (!a) return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_mem_alloc: out of memory (its record of %zu bytes): " COLLIE_MEMORY_ADVICE, size);
  a->fd = memfd_create("collie-mem", MFD_CLOEXEC);
  if (a->fd < 0) {
    int e = errno;
    free(a);
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_mem_alloc: memfd_create failed: %s", strerror(e));
  }
  if (ftruncate(a->fd, (off_t)bytes) != 0) {
    int e = errno;
    close(a->fd);
    free(a);
    return collie_error(NULL, COLLIE_ERR_SYSTEM,
                        "collie_mem_alloc: cannot size shared memory to %zu bytes: %s; the memory limit of this "
                        "process or its cgroup may be reached",
                        bytes, strerror(e));
  }
  a->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
  if (a->base == MAP_FAILED) {
    int e = errno;
    close(a->fd);
    free(a);
    return collie_error(NULL, COLLIE_ERR_SYSTEM, "collie_mem_alloc: cannot map %zu bytes: %s%s", bytes, strerror(e),
                        collie_memory_hint(e));
  }
  a->bytes = bytes;
  if (getrandom(&a->id, sizeof(a->id), 0) != (ssize_t)sizeof(a->id)) a->id = (uint64_t)(uintptr_t)a->base ^ (uint64_t)getpid();
  collie_mem_header_t *h = (collie_mem_header_t *)a->base;
  h->magic = COLLIE_MEM_MAGIC;
  h->id = a->id;
  h->size = size;
  pthread_mutex_lock(&lock);
  a->next = allocations;
  allocations = a;
  pthread_mutex_unlock(&lock);
  *ptr = a->base + COLLIE_MEM_HEADER;
  return COLLIE_SUCCESS;
}

collie_result_t collie_mem_free(void *ptr) {
  if (!ptr) return COLLIE_SUCCESS; /* like free(NULL) */
  pthread_mutex_lock(&lock);
  allocation_t **pp = &allocations;
  while (*pp && (*pp)->base + COLLIE_MEM_HEADER != (char *)ptr) pp = &(*pp)->next;
  allocation_t *a = *pp;
  if (a) *pp = a->next;
  pthread_mutex_unlock(&lock);
  if (!a)
    return collie_error(NULL, COLLIE_ERR_INVALID_ARGUMENT,
                        "collie_mem_free: %p was not returned by collie_mem_alloc (or was freed already)", ptr);
  /* Peers that mapped it keep their mapping (and the memory) until their communicator is
   * destroyed or they see the id change; this process lets go now. */
  ((collie_mem_header_t *)a->base)->magic = 0;
  munmap(a->base, a->bytes);
  close(a->fd);
  free(a);
  return COLLIE_SUCCESS;
}

bool collie_mem_locate(const void *p, size_t len, collie_mem_loc_t *loc) {
  bool found = false;
  const char *c = p;
  pthread_mutex_lock(&lock);
  for (allocation_t *a = allocations; a; a = a->next) {
    if (c < a->base + COLLIE_MEM_HEADER || c > a->base + a->bytes || len > (size_t)(a->base + a->bytes - c)) continue;
    loc->pid = (int32_t)getpid();
    loc->fd = a->fd;
    loc->id = a->id;
    loc->off = (uint64_t)(c - a->base);
    found = true;
    break;
  }
  pthread_mutex_unlock(&lock);
  return found;
}
