/* The data path's copies: into destinations larger than the caches, into two places at
 * once, and around a memcpy slow path. */
#ifndef COLLIE_COPY_H
#define COLLIE_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* memcpy with non-temporal (streaming) stores where the CPU has them (x86-64): the
 * destination is not read into the cache before it is written, which saves a third of the
 * memory traffic of a large copy (64 MiB on this machine kind: 14 to 17 GB/s against
 * memcpy's 9 to 10). Only for destinations nobody reads again soon: the data ends in
 * memory, not in the cache. Ends with a store fence, so the data is visible to other
 * cores once a later release store is. */
void collie_copy_stream(void *dst, const void *src, size_t n);

/* A copy with vector loads and stores, never `rep movsb` (memcpy elsewhere). */
void collie_copy_vector(void *dst, const void *src, size_t n);

/* Whether memcpy may take its slow path for this pair: glibc (2.36, x86-64) copies from a
 * few KiB up with `rep movsb`, which on the AMD EPYC machines this runs on moves 3.4 GB/s
 * instead of 56 when the destination lies 1 to 15 bytes past the source modulo 4 KiB, and
 * half speed up to 63 bytes (from 4 KiB to about 1 MiB; bench/page_offset_probe.c shows
 * it). User buffers meet that whenever their offsets differ by a few elements: a 2-rank
 * int8 all-gather of 1 MiB + 16 bytes ran at a fifth of the speed of 1 MiB. The vector loop
 * runs at memcpy's speed there (and about 5% below it above 1 MiB, where memcpy is fast). */
enum { COLLIE_COPY_ALIAS_MIN = 1024 };
static inline bool collie_copy_aliases(const void *dst, const void *src, size_t n) {
  return n >= COLLIE_COPY_ALIAS_MIN && ((((uintptr_t)dst - (uintptr_t)src) & 4095) - 1) < 63;
}

/* memcpy, or collie_copy_stream when `stream` (the destination is larger than the caches;
 * out of a staging buffer hot in a core's cache, only where timing chose it). */
static inline void collie_copy(void *dst, const void *src, size_t n, bool stream) {
  if (stream)
    collie_copy_stream(dst, src, n);
  else if (collie_copy_aliases(dst, src, n))
    collie_copy_vector(dst, src, n);
  else
    memcpy(dst, src, n);
}

/* Copies src to both a and b (each with streaming stores when stream_a, stream_b), reading src
 * once: in chunks that stay in the first-level cache between the two copies. A staged
 * all-gather or broadcast root fills its staging buffer and its own receive block from the
 * same bytes (256 KiB: 8.3 us against 9.9 for two memcpy calls; 512 KiB: 19.4 against
 * 22.2; 2 ranks pinned to one CPU, all-gather of 1 MiB: 7.56 against 7.06 GB/s busbw). */
void collie_copy_twice(void *a, void *b, const void *src, size_t n, bool stream_a, bool stream_b);

#endif
