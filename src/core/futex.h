/* Futex wait and wake on a 32-bit word: the shared-memory doorbells (transport/shm.c),
 * the progress thread's kick (wait.c) and the communicator's lock (lock.c). Process-shared
 * operations, which work on private memory too. */
#ifndef COLLIE_FUTEX_H
#define COLLIE_FUTEX_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void collie_futex_wait_us(_Atomic uint32_t *addr, uint32_t val, long timeout_us) {
  struct timespec ts = {timeout_us / 1000000, (timeout_us % 1000000) * 1000L};
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static inline void collie_futex_wait(_Atomic uint32_t *addr, uint32_t val, int timeout_ms) {
  collie_futex_wait_us(addr, val, (long)timeout_ms * 1000);
}

/* Wakes up to n waiters. */
static inline void collie_futex_wake_n(_Atomic uint32_t *addr, int n) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, n, NULL, NULL, 0);
}

static inline void collie_futex_wake(_Atomic uint32_t *addr) { collie_futex_wake_n(addr, 0x7fffffff); }

#endif
