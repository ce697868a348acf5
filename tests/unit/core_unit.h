/* A few macros shared by the core unit tests (tests/unit/test_core_*.c): each failed
 * expectation prints where and why, the test keeps going, and main returns unit_summary(). */
#ifndef COLLIE_CORE_UNIT_H
#define COLLIE_CORE_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_failures, unit_checks;

#define EXPECT(cond) EXPECTF(cond, "%s", "")
#define EXPECTF(cond, ...)                                                  \
  do {                                                                      \
    unit_checks++;                                                          \
    if (!(cond)) {                                                          \
      unit_failures++;                                                      \
      fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond);      \
      fprintf(stderr, __VA_ARGS__);                                         \
      fputc('\n', stderr);                                                  \
    }                                                                       \
  } while (0)
#define EXPECT_STR(got, want)                                                                   \
  do {                                                                                          \
    const char *g_ = (got), *w_ = (want);                                                       \
    EXPECTF(g_ && w_ ? strcmp(g_, w_) == 0 : g_ == w_, "got '%s', expected '%s'", g_ ? g_ : "(null)", \
            w_ ? w_ : "(null)");                                                                \
  } while (0)
#define EXPECT_CONTAINS(hay, needle)                                                           \
  do {                                                                                         \
    const char *h_ = (hay);                                                                    \
    EXPECTF(h_ && strstr(h_, needle), "'%s' does not contain '%s'", h_ ? h_ : "(null)", needle); \
  } while (0)

static inline int unit_summary(const char *name) {
  if (unit_failures) {
    fprintf(stderr, "%s: %d of %d checks FAILED\n", name, unit_failures, unit_checks);
    return 1;
  }
  printf("%s: all %d checks passed\n", name, unit_checks);
  return 0;
}

#endif
