/* alloc_fail_shim: an LD_PRELOAD library that makes one allocation made by libcollie fail
 * with ENOMEM, so that alloc_fail_test.sh can walk every place the library allocates.
 *
 *   ALLOC_FAIL_RANK=r        only the process whose COLLIE_RANK is r is touched (`any`: this
 *                            process, whose ranks are threads)
 *   ALLOC_FAIL_SITE=0xOFF    the call site: the return address's offset in libcollie
 *   ALLOC_FAIL_NTH=k         fail the k-th call from that site (default 1)
 *   ALLOC_FAIL_AFTER_INIT=1  count only after the program calls alloc_fail_arm() (once
 *                            its communicator exists)
 *   ALLOC_FAIL_TRACE=path    append the site of every call (counted as above) to path
 *   ALLOC_FAIL_GETADDRINFO=1 getaddrinfo fails with EAI_MEMORY, as glibc's does when its
 *                            own allocations fail
 *
 * malloc, calloc, realloc, strdup, posix_memalign, aligned_alloc, mmap (anonymous or of a
 * file: address space runs out for both, ulimit -v) and pthread_create (a thread's stack is
 * memory too: it fails with EAGAIN) are covered; a call counts when its caller lies in a library whose name holds "libcollie"
 * (the test programs link the shared library). Allocations libc makes on the library's
 * behalf (fopen, pthread_create) are not counted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static char *(*real_strdup)(const char *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static atomic_int state; /* 0 not set up, 1 setting up (dlsym may allocate), 2 ready */
static bool victim;
static uintptr_t site;
static long nth = 1;
static atomic_long calls_at_site;
static atomic_bool armed;
static int trace_fd = -1;
static bool fail_getaddrinfo;
static _Thread_local bool inside; /* our own calls (dladdr, write) are not the library's */

/* dlsym may allocate before the real functions are known: a little static memory. */
static _Alignas(16) char boot[16384];
static atomic_size_t boot_used;

static void *boot_alloc(size_t n) {
  size_t at = atomic_fetch_add(&boot_used, (n + 15) & ~(size_t)15);
  return at + n <= sizeof(boot) ? boot + at : NULL;
}

static void set_up(void) {
  int expect = 0;
  if (!atomic_compare_exchange_strong(&state, &expect, 1)) return;
  real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  real_strdup = (char *(*)(const char *))dlsym(RTLD_NEXT, "strdup");
  real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
  real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
  real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
      RTLD_NEXT, "pthread_create");
  const char *r = getenv("ALLOC_FAIL_RANK"), *me = getenv("COLLIE_RANK");
  victim = r && (strcmp(r, "any") == 0 || (me && strcmp(r, me) == 0));
  const char *s = getenv("ALLOC_FAIL_SITE"), *k = getenv("ALLOC_FAIL_NTH"), *t = getenv("ALLOC_FAIL_TRACE");
  if (s) site = (uintptr_t)strtoull(s, NULL, 0);
  if (k) nth = atol(k);
  if (victim && t) trace_fd = open(t, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  fail_getaddrinfo = victim && getenv("ALLOC_FAIL_GETADDRINFO") != NULL;
  atomic_store(&armed, getenv("ALLOC_FAIL_AFTER_INIT") == NULL);
  atomic_store(&state, 2);
}

/* Called by the test program once its communicator exists (ALLOC_FAIL_AFTER_INIT). */
void alloc_fail_arm(void) { atomic_store(&armed, true); }

/* Whether this call, made from `caller`, is the one to fail. */
static bool fail_now(const void *caller) {
  if (atomic_load(&state) != 2 || !victim || inside || !atomic_load(&armed)) return false;
  inside = true;
  bool fail = false;
  Dl_info di;
  if (dladdr(caller, &di) && di.dli_fname && strstr(di.dli_fname, "libcollie")) {
    uintptr_t off = (uintptr_t)caller - (uintptr_t)di.dli_fbase;
    if (trace_fd >= 0) {
      char line[32];
      int n = snprintf(line, sizeof(line), "%#lx\n", (unsigned long)off);
      if (write(trace_fd, line, (size_t)n) != n) {
        /* a trace line lost only shortens the walk */
      }
    }
    fail = site && off == site && atomic_fetch_add(&calls_at_site, 1) + 1 == nth;
  }
  inside = false;
  return fail;
}

void *malloc(size_t n) {
  if (atomic_load(&state) != 2) {
    set_up();
    if (atomic_load(&state) != 2) return boot_alloc(n);
  }
  if (fail_now(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_malloc(n);
}

void *calloc(size_t a, size_t b) {
  if (atomic_load(&state) != 2) {
    set_up();
    if (atomic_load(&state) != 2) return b && a > SIZE_MAX / b ? NULL : boot_alloc(a * b); /* static: zeroed */
  }
  if (fail_now(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_calloc(a, b);
}

void free(void *p) {
  if ((char *)p >= boot && (char *)p < boot + sizeof(boot)) return;
  if (atomic_load(&state) != 2) set_up();
  if (p) real_free(p);
}

void *realloc(void *p, size_t n) {
  set_up();
  if (fail_now(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_realloc(p, n);
}

char *strdup(const char *s) {
  set_up();
  if (fail_now(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_strdup(s);
}

int posix_memalign(void **p, size_t align, size_t n) {
  set_up();
  if (fail_now(__builtin_return_address(0))) return ENOMEM;
  return real_posix_memalign(p, align, n);
}

void *aligned_alloc(size_t align, size_t n) {
  set_up();
  if (fail_now(__builtin_return_address(0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_aligned_alloc(align, n);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  set_up();
  (void)flags;
  if (fail_now(__builtin_return_address(0))) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return real_mmap(addr, len, prot, flags, fd, off);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  set_up();
  if (fail_now(__builtin_return_address(0))) return EAGAIN;
  return real_pthread_create(t, attr, fn, arg);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
  set_up();
  if (fail_getaddrinfo) return EAI_MEMORY;
  int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **) =
      (int (*)(const char *, const char *, const struct addrinfo *, struct addrinfo **))dlsym(RTLD_NEXT, "getaddrinfo");
  return real(node, service, hints, res);
}
