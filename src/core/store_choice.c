/* Ordinary or streaming stores, by measured cost (store_choice.h). */
#include "core/store_choice.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/copy.h"
#include "core/params.h"

/* Streaming stores must win by this much: their cost falls on the readers too (the data
 * comes from memory, not from a shared cache: roughly a memory-bound copy's 80 to 100
 * ns/KiB on the AMD VM), which the writer's clock does not see. There, with neighbouring
 * vCPUs, ordinary stores into a slot or staging buffer cost 23 to 133 ns/KiB and streaming
 * ones 33 to 150 (choosing streaming whenever it was 1.5 times cheaper cut a 2-rank 1 MiB
 * ring all-gather from 12.5 to 8.5 GB/s busbw); with distant ones, ordinary 420 to 630
 * ns/KiB and streaming 33 to 40 (in cache) or about 100 (64 MiB, the source from memory). */
#define STREAM_GAIN_NS_PER_KIB 150.0
#define STREAM_RATIO 2.0

/* Weight of the newest copy in the running cost: a change of placement shows within a few
 * copies of each kind. */
#define NEW_WEIGHT 0.25

uint64_t collie_store_clock_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void collie_store_init(collie_store_choice_t *c) {
  memset(c, 0, sizeof(*c));
  const char *m = collie_param_str(COLLIE_P_SHM_STORES);
  if (m && !strcasecmp(m, "ordinary")) c->mode = COLLIE_STORES_ORDINARY;
  if (m && !strcasecmp(m, "streaming")) c->mode = COLLIE_STORES_STREAMING;
}

void collie_store_init_even(collie_store_choice_t *c) {
  collie_store_init(c);
  c->even = true;
}

bool collie_store_streams(const collie_store_choice_t *c) {
  if (c->mode != COLLIE_STORES_AUTO) return c->mode == COLLIE_STORES_STREAMING;
  const double ordinary = c->ns_per_kib[0], streamed = c->ns_per_kib[1];
  if (c->even) return streamed && streamed < ordinary;
  return streamed && ordinary > STREAM_RATIO * streamed && ordinary - streamed > STREAM_GAIN_NS_PER_KIB;
}

bool collie_store_choose(collie_store_choice_t *c, size_t bytes) {
  c->trying = false;
  if (bytes < COLLIE_STORE_CHOICE_MIN) return false;
  if (c->mode != COLLIE_STORES_AUTO) return c->mode == COLLIE_STORES_STREAMING;
  const uint32_t i = c->copies++;
  if (!c->ns_per_kib[0]) return false; /* ordinary stores first */
  if (!c->ns_per_kib[1]) return c->trying = i >= 2; /* then, after a few, a first streaming copy */
  const bool streaming = collie_store_streams(c);
  c->trying = i % COLLIE_STORE_EXPLORE == 0; /* now and then the other kind */
  return c->trying ? !streaming : streaming;
}

void collie_store_record(collie_store_choice_t *c, bool streaming, size_t bytes, uint64_t ns) {
  if (!collie_store_timed(c, bytes)) return;
  double cost = (double)ns * 1024.0 / (double)bytes;
  double *avg = &c->ns_per_kib[streaming];
  /* A copy of the kind tried now and then stands for that kind alone: its older cost may
   * be from another placement. The kind in use averages, and a copy the scheduler
   * interrupted (ranks outnumbering cores) counts as at most a few times the usual. */
  if (c->trying || !*avg) {
    *avg = cost;
    return;
  }
  if (cost > 4 * *avg) cost = 4 * *avg;
  *avg += NEW_WEIGHT * (cost - *avg);
}

bool collie_store_timed(const collie_store_choice_t *c, size_t bytes) {
  return bytes >= COLLIE_STORE_CHOICE_MIN && c->mode == COLLIE_STORES_AUTO;
}

collie_store_span_t collie_store_begin(collie_store_choice_t *c, size_t bytes) {
  collie_store_span_t s = {collie_store_choose(c, bytes), collie_store_timed(c, bytes), bytes, 0};
  if (s.timed) s.t0 = collie_store_clock_ns();
  return s;
}

void collie_store_end(collie_store_choice_t *c, const collie_store_span_t *s) {
  if (s->timed) collie_store_record(c, s->streaming, s->bytes, collie_store_clock_ns() - s->t0);
}

void collie_store_copy(collie_store_choice_t *c, void *dst, const void *src, size_t n) {
  const collie_store_span_t s = collie_store_begin(c, n);
  collie_copy(dst, src, n, s.streaming);
  collie_store_end(c, &s);
}
