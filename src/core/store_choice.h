/* Ordinary or streaming stores for copies into buffers that other cores read next: chosen
 * by what such copies have cost lately. */
#ifndef COLLIE_STORE_CHOICE_H
#define COLLIE_STORE_CHOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A writer that refills a buffer another core has just read must take the lines back from
 * that core's cache. Between neighbouring cores that is cheap, and ordinary stores win:
 * the reader then finds the data in a shared cache. Between distant ones (another socket,
 * or, on the AMD EPYC VM this was measured on, vCPUs the host places far apart for minutes
 * at a time: a cache line's round trip 0.25 us instead of 0.07) a 256 KiB staging copy
 * took 110 us with ordinary stores and 12.5 with streaming ones, which skip that and leave
 * the data in memory for the reader (2-rank 1 MiB all-gather: 2.0 against 9.5 GB/s busbw).
 * Where the placement may change under a running job, each writer times its copies and
 * keeps to the cheaper kind, trying the other every COLLIE_STORE_EXPLORE copies. */
enum { COLLIE_STORE_CHOICE_MIN = 64 << 10, COLLIE_STORE_EXPLORE = 64 };

/* COLLIE_SHM_STORES */
typedef enum { COLLIE_STORES_AUTO, COLLIE_STORES_ORDINARY, COLLIE_STORES_STREAMING } collie_stores_mode_t;

typedef struct collie_store_choice {
  collie_stores_mode_t mode; /* auto: by the costs below */
  double ns_per_kib[2]; /* recent cost of ordinary [0] and streaming [1] copies; 0: none yet */
  uint32_t copies;      /* copies chosen for */
  bool trying;          /* the last choice tried the kind that currently costs more */
  bool even;            /* the cheaper kind wins, by any margin (collie_store_init_even) */
} collie_store_choice_t;

/* A choice as COLLIE_SHM_STORES sets it, with no costs yet. */
void collie_store_init(collie_store_choice_t *c);
/* The same for copies only this core reads next, out of a buffer other cores wrote into a
 * buffer larger than the caches (the shared-memory collectives' drains): there the
 * writer's clock sees the whole cost of either kind, and the cheaper wins. */
void collie_store_init_even(collie_store_choice_t *c);

/* Whether copies use streaming stores now (explorations aside), for stores that go with
 * them without being timed. */
bool collie_store_streams(const collie_store_choice_t *c);

/* Whether the next copy of `bytes` should use streaming stores. */
bool collie_store_choose(collie_store_choice_t *c, size_t bytes);

/* Whether copies of `bytes` are worth timing for the choice (large enough, and the kind
 * not fixed by COLLIE_SHM_STORES). */
bool collie_store_timed(const collie_store_choice_t *c, size_t bytes);

/* Notes what a copy of `bytes` chosen by collie_store_choose cost. */
void collie_store_record(collie_store_choice_t *c, bool streaming, size_t bytes, uint64_t ns);

/* Nanoseconds on the monotonic clock, for timing copies. */
uint64_t collie_store_clock_ns(void);

/* The copies of `bytes` made between collie_store_begin and collie_store_end count as one:
 * begin chooses their kind (`streaming`) and starts the clock where they are timed. */
typedef struct {
  bool streaming, timed;
  size_t bytes;
  uint64_t t0;
} collie_store_span_t;
collie_store_span_t collie_store_begin(collie_store_choice_t *c, size_t bytes);
void collie_store_end(collie_store_choice_t *c, const collie_store_span_t *s);

/* One copy of n bytes into such a buffer: chosen, timed and noted. */
void collie_store_copy(collie_store_choice_t *c, void *dst, const void *src, size_t n);

#endif
