/* Schedule cache (see sched_cache.h). Entries are matched on a hash of the whole shape and
 * then on every scalar field; least recently used entries without users are replaced. */
#include "coll/sched_cache.h"

#include <stdlib.h>
#include <string.h>

#include "bootstrap/unique_id.h"

typedef struct {
  bool used;
  uint64_t hash;
  collie_coll_t coll;
  const collie_algo_t *algo;
  size_t count, elem_size, chunk_bytes;
  int root;
  bool in_place;
  collie_sched_t *sched;
  int users; /* posted operations still running this schedule */
  uint64_t last_use;
} entry_t;

struct collie_sched_cache {
  entry_t e[COLLIE_SCHED_CACHE_SIZE];
  uint64_t tick;
};

/* Word at a time: this runs for every collective call, FNV byte by byte cost 12% of a
 * small allreduce. */
static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t shape_hash(const collie_coll_args_t *a, const collie_algo_t *algo) {
  uint64_t h = mix((uint64_t)a->coll, (uint64_t)(uintptr_t)algo);
  uint64_t f[6] = {a->count, a->elem_size, a->chunk_bytes, (uint64_t)(int64_t)a->root, a->in_place, (uint64_t)a->nranks};
  for (int i = 0; i < 6; i++) h = mix(h, f[i]);
  size_t n = (size_t)a->nranks;
  if (a->counts) h = collie_hash64(a->counts, n * sizeof(size_t), h ^ 1);
  if (a->displs) h = collie_hash64(a->displs, n * sizeof(size_t), h ^ 2);
  if (a->counts2) h = collie_hash64(a->counts2, n * sizeof(size_t), h ^ 3);
  if (a->displs2) h = collie_hash64(a->displs2, n * sizeof(size_t), h ^ 4);
  if (a->matrix) h = collie_hash64(a->matrix, n * n * sizeof(size_t), h ^ 5);
  return h;
}

static bool same(const entry_t *e, const collie_coll_args_t *a, const collie_algo_t *algo, uint64_t h) {
  return e->used && e->hash == h && e->coll == a->coll && e->algo == algo && e->count == a->count &&
         e->elem_size == a->elem_size && e->chunk_bytes == a->chunk_bytes && e->root == a->root &&
         e->in_place == a->in_place;
}

static collie_sched_cache_t *cache_of(collie_comm_t *comm) {
  if (!comm->sched_cache) comm->sched_cache = calloc(1, sizeof(collie_sched_cache_t));
  return comm->sched_cache;
}

collie_sched_t *collie_sched_cache_get(collie_comm_t *comm, const collie_coll_args_t *args, const collie_algo_t *algo,
                                       int **users) {
  collie_sched_cache_t *c = cache_of(comm);
  if (!c) return NULL;
  uint64_t h = shape_hash(args, algo);
  for (int i = 0; i < COLLIE_SCHED_CACHE_SIZE; i++) {
    entry_t *e = &c->e[i];
    if (same(e, args, algo, h)) {
      e->users++;
      e->last_use = ++c->tick;
      *users = &e->users;
      return e->sched;
    }
  }
  return NULL;
}

int *collie_sched_cache_put(collie_comm_t *comm, const collie_coll_args_t *args, const collie_algo_t *algo,
                            collie_sched_t *s) {
  collie_sched_cache_t *c = cache_of(comm);
  if (!c) return NULL;
  entry_t *victim = NULL;
  for (int i = 0; i < COLLIE_SCHED_CACHE_SIZE; i++) {
    entry_t *e = &c->e[i];
    if (!e->used) {
      victim = e;
      break;
    }
    if (e->users == 0 && (!victim || e->last_use < victim->last_use)) victim = e;
  }
  if (!victim) return NULL;
  if (victim->used) {
    collie_sched_free(victim->sched);
    free(victim->sched);
  }
  *victim = (entry_t){true, shape_hash(args, algo), args->coll, algo, args->count, args->elem_size, args->chunk_bytes,
                      args->root, args->in_place, s, 1, ++c->tick};
  return &victim->users;
}

void collie_sched_cache_free(collie_comm_t *comm) {
  collie_sched_cache_t *c = comm->sched_cache;
  if (!c) return;
  for (int i = 0; i < COLLIE_SCHED_CACHE_SIZE; i++)
    if (c->e[i].used) {
      collie_sched_free(c->e[i].sched);
      free(c->e[i].sched);
    }
  free(c);
  comm->sched_cache = NULL;
}
