/* Streaming copies (copy.h). SSE2 is part of x86-64, so no dispatch is needed: the copy is
 * bound by memory, not by the width of the stores. */
#include "core/copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

void collie_copy_stream(void *dst, const void *src, size_t n) {
  char *d = dst;
  const char *s = src;
  size_t head = (size_t)(-(uintptr_t)d & 63); /* streaming stores want aligned addresses */
  if (n < head + 64) {
    memcpy(d, s, n);
    return;
  }
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
    _mm_stream_si128((__m128i *)d, a);
    _mm_stream_si128((__m128i *)(d + 16), b);
    _mm_stream_si128((__m128i *)(d + 32), c);
    _mm_stream_si128((__m128i *)(d + 48), e);
  }
  memcpy(d, s, n);
  _mm_sfence();
}
#else
void collie_copy_stream(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
#endif
