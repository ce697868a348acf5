/* Memory that local peers can map (collie_mem_alloc): each allocation is a memfd, kept
 * open so that a peer process of the same user can open it through /proc/<pid>/fd/<fd>.
 * Its first page is a header (magic, a random id, the size) that peers check after
 * mapping, so a recycled descriptor number is never mistaken for the old allocation. */
#ifndef COLLIE_MEM_H
#define COLLIE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COLLIE_MEM_MAGIC 0x636f6c6c69656d6dull /* "colliemm" */
#define COLLIE_MEM_HEADER 4096                 /* the user's bytes start one page in */

typedef struct {
  uint64_t magic, id, size; /* size: the user's bytes */
} collie_mem_header_t;

/* Where a buffer lives, as another process can find it. */
typedef struct {
  int32_t pid, fd;
  uint64_t id;
  uint64_t off; /* of the buffer from the mapping's start (header included) */
} collie_mem_loc_t;

/* Whether [p, p+len) lies inside one collie_mem_alloc allocation of this process; fills
 * *loc if so. */
bool collie_mem_locate(const void *p, size_t len, collie_mem_loc_t *loc);

#endif
