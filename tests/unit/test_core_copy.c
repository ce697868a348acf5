/* The data path's copies (core/copy.h): collie_copy_stream, collie_copy_vector,
 * collie_copy (which picks among memcpy and those two) and collie_copy_twice put every
 * byte where memcpy would, whatever the alignment of either side and the length (the
 * aligned body, the head and the tail around it), and touch nothing outside the
 * destination. collie_copy_aliases names exactly the pairs memcpy is slow on. */
#include <stdint.h>
#include <stdlib.h>

#include "core/copy.h"
#include "core_unit.h"

enum { MAX = 4096 + 300, GUARD = 64, SPAN = MAX + 128 + 2 * GUARD };
enum { WAY_STREAM, WAY_VECTOR, WAY_COPY, WAY_TWICE, WAY_TWICE_STREAM, NWAYS };
static const char *way_name[NWAYS] = {"collie_copy_stream", "collie_copy_vector", "collie_copy",
                                      "collie_copy_twice", "collie_copy_twice (streaming)"};

static void copy_by(int way, unsigned char *dst, unsigned char *dst2, const unsigned char *src, size_t n) {
  switch (way) {
    case WAY_STREAM: collie_copy_stream(dst, src, n); break;
    case WAY_VECTOR: collie_copy_vector(dst, src, n); break;
    case WAY_COPY: collie_copy(dst, src, n, false); break;
    default: collie_copy_twice(dst2, dst, src, n, way == WAY_TWICE_STREAM, way == WAY_TWICE_STREAM); break;
  }
}

int main(void) {
  unsigned char *src = malloc(MAX + 128), *dst = malloc(SPAN), *dst2 = malloc(SPAN), *want = malloc(SPAN);
  if (!src || !dst || !dst2 || !want) return 2;
  for (size_t i = 0; i < MAX + 128; i++) src[i] = (unsigned char)(i * 131 + 7);
  static const size_t lens[] = {0, 1, 15, 63, 64, 65, 127, 128, 129, 191, 255, 256, 1000, 1024, 4096, 4096 + 300};
  for (int way = 0; way < NWAYS; way++)
    for (size_t so = 0; so < 70; so += 3)
      for (size_t dofs = 0; dofs < 70; dofs += 5)
        for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
          size_t n = lens[li];
          memset(dst, 0xee, SPAN);
          memset(dst2, 0xee, SPAN);
          memset(want, 0xee, SPAN);
          memcpy(want + GUARD + dofs, src + so, n);
          copy_by(way, dst + GUARD + dofs, dst2 + GUARD + dofs, src + so, n);
          EXPECTF(memcmp(dst, want, SPAN) == 0, "%s: source offset %zu, destination offset %zu, %zu bytes",
                  way_name[way], so, dofs, n);
          if (way >= WAY_TWICE)
            EXPECTF(memcmp(dst2, want, SPAN) == 0, "%s, first destination: source offset %zu, destination offset %zu, "
                    "%zu bytes", way_name[way], so, dofs, n);
        }
  /* The slow pairs: the destination 1 to 63 bytes past the source modulo 4 KiB, from
   * COLLIE_COPY_ALIAS_MIN bytes on. */
  for (uintptr_t d = 0; d < 3 * 4096; d++) {
    const uintptr_t m = d % 4096;
    const bool want_alias = m >= 1 && m <= 63;
    EXPECTF(collie_copy_aliases((void *)(0x100000 + d), (void *)0x100000, COLLIE_COPY_ALIAS_MIN) == want_alias,
            "distance %zu", (size_t)d);
    EXPECTF(!collie_copy_aliases((void *)(0x100000 + d), (void *)0x100000, COLLIE_COPY_ALIAS_MIN - 1),
            "distance %zu, short copy", (size_t)d);
    const uintptr_t back = (4096 - m) % 4096; /* the destination d bytes before the source */
    EXPECTF(collie_copy_aliases((void *)0x100000, (void *)(0x100000 + d), COLLIE_COPY_ALIAS_MIN) ==
                (back >= 1 && back <= 63),
            "negative distance %zu", (size_t)d);
  }
  /* large copies, as the collectives use them, one at a slow distance */
  size_t big = (size_t)24 << 20;
  unsigned char *a = malloc(big), *b = malloc(big + 8), *c = malloc(big + 8);
  if (!a || !b || !c) return 2;
  for (size_t i = 0; i < big; i++) a[i] = (unsigned char)(i ^ (i >> 9));
  collie_copy_stream(b + 1, a, big);
  EXPECT(memcmp(b + 1, a, big) == 0);
  collie_copy(b + 8, a, big, false);
  EXPECT(memcmp(b + 8, a, big) == 0);
  collie_copy_twice(b, c + 3, a, big, false, true);
  EXPECT(memcmp(b, a, big) == 0 && memcmp(c + 3, a, big) == 0);
  free(a);
  free(b);
  free(c);
  free(src);
  free(dst);
  free(dst2);
  free(want);
  return unit_summary("test_core_copy");
}
