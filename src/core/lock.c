/* The contended path of collie_lock (lock.h): poll, yield, then sleep.
 *
 * The unlock reads the sleeper count and then stores 0 (it may not touch the lock after the
 * store: lock.h). A thread that counts itself in between those two instructions, sees the
 * lock still held and goes to sleep is not woken: the unlocker was interrupted or
 * preempted between them. No fence closes that window in this order, so a sleep lasts at
 * most SLEEP_MS, after which the sleeper tries again. */
#include "core/lock.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum {
  POLLS = 64, /* a holder that runs usually lets go within a progress pass */
  YIELDS = 8, /* then let a holder that shares this core run */
  SLEEP_MS = 1,
};

static inline void pause_once(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void collie_lock_wait(collie_lock_t *l) {
  for (int tries = 0;; tries++) {
    if (tries < POLLS) {
      pause_once();
    } else if (tries < POLLS + YIELDS) {
      sched_yield();
    } else {
      atomic_fetch_add(&l->sleepers, 1);
      struct timespec ts = {0, SLEEP_MS * 1000000L};
      while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
        syscall(SYS_futex, (int *)&l->held, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
      atomic_fetch_sub(&l->sleepers, 1);
      return;
    }
    /* read until it looks free: an exchange per try would pull the line from the holder */
    if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
        !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
      return;
  }
}

void collie_lock_wake(collie_lock_t *l) { syscall(SYS_futex, (int *)&l->held, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }
