/* Peers' collie_mem_alloc allocations, mapped into this process (see shm.h). A peer's
 * allocation is a memfd it keeps open; this process opens it through /proc/<pid>/fd/<fd>
 * (allowed for processes of the same user) and checks the header's id, so that a
 * descriptor number reused for another allocation is remapped, never misread. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/mem.h"
#include "transport/shm.h"

struct collie_shm_peer_map {
  int32_t pid, fd;
  uint64_t id;
  char *base;
  size_t bytes;
};

static struct collie_shm_peer_map *find_slot(collie_shm_state_t *st, int32_t pid, int32_t fd) {
  for (int i = 0; i < st->nmaps; i++)
    if (st->maps[i].pid == pid && st->maps[i].fd == fd) return &st->maps[i];
  if (st->nmaps == st->maps_cap) {
    int cap = st->maps_cap ? 2 * st->maps_cap : 8;
    struct collie_shm_peer_map *m = realloc(st->maps, (size_t)cap * sizeof(*m));
    if (!m) return NULL;
    st->maps = m;
    st->maps_cap = cap;
  }
  struct collie_shm_peer_map *m = &st->maps[st->nmaps++];
  memset(m, 0, sizeof(*m));
  m->pid = pid;
  m->fd = fd;
  return m;
}

static char *fail(collie_comm_t *comm, int rank, const collie_shm_bufloc_t *loc, const char *why) {
  char pd[160];
  collie_comm_fail(comm, COLLIE_ERR_SYSTEM, false,
                   "rank %d could not map the collie_mem_alloc buffer of %s (/proc/%d/fd/%d): %s; the ranks must "
                   "run as one user in one process namespace, or set COLLIE_SHM_DIRECT=0 (the buffers are then "
                   "copied through shared memory)",
                   comm->rank, collie_peer_desc(comm, rank, pd, sizeof(pd)), (int)loc->pid, (int)loc->fd, why);
  return NULL;
}

char *collie_shm_peer_buffer(collie_comm_t *comm, int rank, const collie_shm_bufloc_t *loc) {
  if (loc->kind == COLLIE_BUFLOC_ADDR) return (char *)(uintptr_t)loc->addr;
  if (loc->kind != COLLIE_BUFLOC_MEM) return fail(comm, rank, loc, "it is not shared");
  collie_shm_state_t *st = comm->shm;
  struct collie_shm_peer_map *m = find_slot(st, loc->pid, loc->fd);
  if (!m) return fail(comm, rank, loc, "out of memory");
  if (m->base && m->id != loc->id) { /* the descriptor now holds another allocation */
    munmap(m->base, m->bytes);
    m->base = NULL;
  }
  if (!m->base) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)loc->pid, (int)loc->fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail(comm, rank, loc, strerror(errno));
    struct stat sb;
    void *p = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= COLLIE_MEM_HEADER)
      p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return fail(comm, rank, loc, strerror(e));
    const collie_mem_header_t *h = p;
    if (h->magic != COLLIE_MEM_MAGIC || h->id != loc->id) {
      munmap(p, (size_t)sb.st_size);
      return fail(comm, rank, loc, "it holds a different allocation (freed while in use?)");
    }
    m->base = p;
    m->bytes = (size_t)sb.st_size;
    m->id = loc->id;
  }
  if (loc->off > m->bytes || loc->len > m->bytes - loc->off) return fail(comm, rank, loc, "the buffer lies outside it");
  return m->base + loc->off;
}

bool collie_shm_locate(const collie_comm_t *comm, const void *p, size_t len, collie_shm_bufloc_t *loc) {
  memset(loc, 0, sizeof(*loc));
  loc->len = len;
  collie_mem_loc_t m;
  if (!p) return false;
  if (comm->shm->one_process) {
    loc->kind = COLLIE_BUFLOC_ADDR;
    loc->addr = (uint64_t)(uintptr_t)p;
  } else if (collie_mem_locate(p, len, &m)) {
    loc->kind = COLLIE_BUFLOC_MEM;
    loc->pid = m.pid;
    loc->fd = m.fd;
    loc->id = m.id;
    loc->off = m.off;
  }
  return loc->kind != COLLIE_BUFLOC_NONE;
}

void collie_shm_unmap_peers(collie_shm_state_t *st) {
  for (int i = 0; i < st->nmaps; i++)
    if (st->maps[i].base) munmap(st->maps[i].base, st->maps[i].bytes);
  free(st->maps);
  st->maps = NULL;
  st->nmaps = st->maps_cap = 0;
}
