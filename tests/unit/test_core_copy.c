/* collie_copy_stream (core/copy.h): every byte lands where memcpy would put it, whatever
 * the alignment of either side and the length (the aligned body, the head and the tail
 * around it), and nothing outside the destination is touched. */
#include <stdint.h>
#include <stdlib.h>

#include "core/copy.h"
#include "core_unit.h"

int main(void) {
  enum { MAX = 4096 + 300, GUARD = 64 };
  unsigned char *src = malloc(MAX + 128), *dst = malloc(MAX + 128 + 2 * GUARD), *want = malloc(MAX + 128 + 2 * GUARD);
  if (!src || !dst || !want) return 2;
  for (size_t i = 0; i < MAX + 128; i++) src[i] = (unsigned char)(i * 131 + 7);
  static const size_t lens[] = {0, 1, 15, 63, 64, 65, 127, 128, 129, 191, 255, 256, 1000, 4096, 4096 + 300};
  for (size_t so = 0; so < 70; so += 3)
    for (size_t dofs = 0; dofs < 70; dofs += 5)
      for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t n = lens[li];
        memset(dst, 0xee, MAX + 128 + 2 * GUARD);
        memset(want, 0xee, MAX + 128 + 2 * GUARD);
        memcpy(want + GUARD + dofs, src + so, n);
        collie_copy_stream(dst + GUARD + dofs, src + so, n);
        EXPECTF(memcmp(dst, want, MAX + 128 + 2 * GUARD) == 0, "source offset %zu, destination offset %zu, %zu bytes",
                so, dofs, n);
      }
  /* a large copy, as the collectives use it */
  size_t big = (size_t)24 << 20;
  unsigned char *a = malloc(big), *b = malloc(big + 1);
  if (!a || !b) return 2;
  for (size_t i = 0; i < big; i++) a[i] = (unsigned char)(i ^ (i >> 9));
  collie_copy_stream(b + 1, a, big);
  EXPECT(memcmp(b + 1, a, big) == 0);
  free(a);
  free(b);
  free(src);
  free(dst);
  free(want);
  return unit_summary("test_core_copy");
}
