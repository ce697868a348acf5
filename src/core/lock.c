/* The contended path of collie_lock (lock.h): poll, yield, then sleep.
 *
 * The unlock reads the sleeper count and then stores 0 (it may not touch the lock after the
 * store: lock.h). A thread that counts itself in between those two instructions, sees the
 * lock still held and goes to sleep is not woken: the unlocker was interrupted or
 * preempted between them. No fence closes that window in this order, so a sleep lasts at
 * most SLEEP_MS, after which the sleeper tries again. */
#include "core/lock.h"

#include <sched.h>

#include "core/futex.h"

enum {
  POLLS = 64, /* a holder that runs usually lets go within a progress pass */
  YIELDS = 8, /* then let a holder that shares this core run */
  SLEEP_MS = 1,
};

void collie_lock_wait(collie_lock_t *l) {
  for (int tries = 0;; tries++) {
    if (tries < POLLS) {
      collie_cpu_relax();
    } else if (tries < POLLS + YIELDS) {
      sched_yield();
    } else {
      atomic_fetch_add(&l->sleepers, 1);
      while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire)) collie_futex_wait(&l->held, 1, SLEEP_MS);
      atomic_fetch_sub(&l->sleepers, 1);
      return;
    }
    /* read until it looks free: an exchange per try would pull the line from the holder */
    if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
        !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
      return;
  }
}

void collie_lock_wake(collie_lock_t *l) { collie_futex_wake_n(&l->held, 1); }

int collie_lock_within(collie_lock_t *l, int ms) {
  for (int tries = 0; tries <= ms; tries++) {
    if (!atomic_exchange_explicit(&l->held, 1, memory_order_acquire)) {
      atomic_store_explicit(&l->owner, collie_thread_id(), memory_order_relaxed);
      return 1;
    }
    collie_futex_wait(&l->held, 1, 1);
  }
  return 0;
}
