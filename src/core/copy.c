/* The data path's copies (copy.h). SSE2 is part of x86-64, so no dispatch is needed: these
 * copies are bound by memory and cache, not by the width of the moves. */
#include "core/copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

/* Copies with 16-byte loads from any address and stores to addresses aligned to `align`:
 * streaming stores (align 64, a whole line at a time) or ordinary ones (align 16). Always
 * inlined with constant arguments, so each caller gets its own loop. */
static inline __attribute__((always_inline)) void copy_sse2(char *d, const char *s, size_t n, size_t align,
                                                            bool stream) {
  const size_t head = (size_t)(-(uintptr_t)d & (align - 1));
  if (n < head + 64) {
    memcpy(d, s, n); /* too short for rep movsb */
    return;
  }
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
    if (stream) {
      _mm_stream_si128((__m128i *)d, a);
      _mm_stream_si128((__m128i *)(d + 16), b);
      _mm_stream_si128((__m128i *)(d + 32), c);
      _mm_stream_si128((__m128i *)(d + 48), e);
    } else {
      _mm_store_si128((__m128i *)d, a);
      _mm_store_si128((__m128i *)(d + 16), b);
      _mm_store_si128((__m128i *)(d + 32), c);
      _mm_store_si128((__m128i *)(d + 48), e);
    }
  }
  memcpy(d, s, n);
  if (stream) _mm_sfence();
}

void collie_copy_stream(void *dst, const void *src, size_t n) { copy_sse2(dst, src, n, 64, true); }

void collie_copy_vector(void *dst, const void *src, size_t n) { copy_sse2(dst, src, n, 16, false); }
#else
void collie_copy_stream(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void collie_copy_vector(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
#endif

/* The first-level data cache holds 32 KiB on the CPUs this was measured on: a chunk read
 * for the first copy is still there for the second (32 KiB chunks were no faster than two
 * whole copies). */
enum { COPY_TWICE_CHUNK = 16 << 10 };

void collie_copy_twice(void *a, void *b, const void *src, size_t n, bool stream_a, bool stream_b) {
  for (size_t off = 0; off < n; off += COPY_TWICE_CHUNK) {
    const size_t m = n - off < COPY_TWICE_CHUNK ? n - off : COPY_TWICE_CHUNK;
    collie_copy((char *)a + off, (const char *)src + off, m, stream_a);
    collie_copy((char *)b + off, (const char *)src + off, m, stream_b);
  }
}
