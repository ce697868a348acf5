/* The communicator's lock: one exchange to take it, a plain store to give it back.
 *
 * Every call and every progress pass takes comm->lock, and the common case has one thread
 * per communicator, so it is rarely contended. A pthread mutex gives itself back with a
 * locked instruction through a call into libc; this lock gives itself back with a release
 * store (and one load of its sleeper count). 2 ranks, 8 B all-reduce, 12 alternating runs of
 * -n 50000: medians 0.165 -> 0.151 us with a first version that had no sleepers; the
 * sleeper count then read 0.163 against its 0.160 (10 runs).
 *
 * A thread that finds it taken polls, then yields a few times, then sleeps on a futex
 * (collie_lock_wait, lock.c). It is usually held for a post or a progress pass, but
 * sometimes longer: a large message's copies in one pass, a failure's notice to the other
 * ranks, a TCP peer's failure waiting up to 300 ms for the real cause (tcp.c). Contention
 * comes from the threads of one process: a progress thread, user threads sharing a
 * communicator, an abort. Not reentrant. */
#ifndef COLLIE_LOCK_H
#define COLLIE_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct {
  _Atomic uint32_t held;     /* a futex word when contended */
  _Atomic uint32_t sleepers; /* threads that may be asleep on `held` */
  /* The holder (collie_thread_id), 0 when free: collie_comm_abort called from a signal
   * handler that interrupted the holder must not wait for the lock (comm_destroy.c). Relaxed
   * stores, read only by such an abort. */
  _Atomic uintptr_t owner;
} collie_lock_t;

/* This thread's id for lock owners and the like: the thread pointer, read without a call
 * where the compiler offers it. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
#define COLLIE_HAVE_THREAD_POINTER 1
#endif
#endif
#ifdef COLLIE_HAVE_THREAD_POINTER
static inline uintptr_t collie_thread_id(void) { return (uintptr_t)__builtin_thread_pointer(); }
#else
#include <pthread.h>
static inline uintptr_t collie_thread_id(void) { return (uintptr_t)pthread_self(); }
#endif

/* One poll of a busy wait: tells the CPU (and a hyperthread sibling) that this is a spin. */
static inline void collie_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void collie_lock_wait(collie_lock_t *l); /* the contended path */
/* Takes the lock if it comes free within ms milliseconds; returns whether it did. */
int collie_lock_within(collie_lock_t *l, int ms);
void collie_lock_wake(collie_lock_t *l);

static inline void collie_lock(collie_lock_t *l) {
  if (atomic_exchange_explicit(&l->held, 1, memory_order_acquire)) collie_lock_wait(l);
  atomic_store_explicit(&l->owner, collie_thread_id(), memory_order_relaxed);
}

/* Takes l if it is free now; returns whether it did. */
static inline int collie_lock_try(collie_lock_t *l) {
  if (atomic_exchange_explicit(&l->held, 1, memory_order_acquire)) return 0;
  atomic_store_explicit(&l->owner, collie_thread_id(), memory_order_relaxed);
  return 1;
}

/* Whether this thread holds l: true only in a signal handler that interrupted a holder. */
static inline int collie_lock_mine(collie_lock_t *l) {
  return atomic_load_explicit(&l->owner, memory_order_relaxed) == collie_thread_id();
}

/* The sleeper count is read before the lock is given back: collie_comm_release drops its
 * reference under the lock, so once the lock is free another thread may take it, drop the
 * last reference and free the communicator. The wake-up is a system call on the address,
 * which is harmless on freed memory (the kernel at most fails to find the page). */
static inline void collie_unlock(collie_lock_t *l) {
  uint32_t sleepers = atomic_load_explicit(&l->sleepers, memory_order_relaxed);
  atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
  atomic_store_explicit(&l->held, 0, memory_order_release);
  if (sleepers) collie_lock_wake(l);
}

#endif
