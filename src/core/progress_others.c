/* Progress across communicators (progress_others.h). */
#include "core/progress_others.h"

#include <pthread.h>
#include <stdbool.h>

#include "core/comm_internal.h"
#include "sched/executor.h"

enum { OTHERS_MAX = 8 }; /* a thread with more communicators in flight skips the rest */

typedef struct {
  collie_comm_t *comm[OTHERS_MAX];
  int n;
} others_t;

static _Thread_local others_t others;
static pthread_key_t others_key;
static bool others_key_ok;
static pthread_once_t others_once = PTHREAD_ONCE_INIT;

/* At thread exit: the references go (the key's value only makes the destructor run). */
static void others_exit(void *unused) {
  (void)unused;
  for (int i = 0; i < others.n; i++) collie_comm_release(others.comm[i]);
  others.n = 0;
}

static void others_key_make(void) { others_key_ok = pthread_key_create(&others_key, others_exit) == 0; }

static void drop(int i) {
  collie_comm_t *c = others.comm[i];
  others.comm[i] = others.comm[--others.n];
  collie_comm_release(c);
}

/* Whether c has no operation in flight (when its lock is free: else it is busy). */
static bool idle(collie_comm_t *c) {
  if (!collie_lock_try(&c->lock)) return false;
  const bool none = c->ops == NULL;
  collie_unlock(&c->lock);
  return none;
}

void collie_others_note(collie_comm_t *comm) {
  if (atomic_load(&comm->has_progress_thread)) return;
  for (int i = 0; i < others.n; i++)
    if (others.comm[i] == comm) return;
  /* A full list makes room: a communicator destroyed, or with nothing in flight (a post
   * notes it again). Kept until destroyed, eight long-lived communicators shut every later
   * one out, and its waits ran into COLLIE_EXEC_TIMEOUT again. */
  for (int i = others.n - 1; i >= 0 && others.n == OTHERS_MAX; i--)
    if (atomic_load(&others.comm[i]->destroyed) || idle(others.comm[i])) drop(i);
  if (others.n == OTHERS_MAX) return;
  pthread_once(&others_once, others_key_make);
  /* without the key nothing would release the references at thread exit: no list then */
  if (!others_key_ok || pthread_setspecific(others_key, &others)) return;
  collie_comm_retain(comm);
  others.comm[others.n++] = comm;
}

/* After a pass over c that moved nothing, c's idle time runs as in a wait on c
 * (collie_check_idle), so that a question about what this process waits for
 * (core/own_waits.c) sees c's stall, and c asks its own question each report interval:
 * moved only from here, its count of progress stayed ahead of the count last seen, and c
 * never looked stalled (a rank waiting on B with A's operation stuck on a stopped rank
 * answered with B's wait for the asker, a cycle, and no survivor named the stopped rank: 6
 * ranks, tests/coll/fault_campaign.sh); and a wait on c that came later timed out at once,
 * before its first question could be answered, naming only the peer (5 ranks over TCP).
 * No timeout here: only a wait on c ends c. */
int collie_others_progress(collie_comm_t *waiting) {
  int state = -1;
  for (int i = others.n - 1; i >= 0; i--) {
    collie_comm_t *c = others.comm[i];
    if (c == waiting) continue;
    if (atomic_load(&c->destroyed)) {
      drop(i);
      continue;
    }
    if (atomic_load(&c->has_progress_thread) || !collie_lock_try(&c->lock)) continue;
    /* destroyed meanwhile: its own thread finishes it, and its segments may be gone */
    if (c->ops && !atomic_load(&c->destroyed)) {
      const int moved = collie_progress(c) > 0;
      if (!moved) collie_check_idle(c, true, false); /* a clock read: this runs every 16th pass */
      if (moved > state) state = moved;
    }
    collie_unlock(&c->lock);
  }
  return state;
}

int collie_others_idle(void) { return collie_others_progress(NULL); }

void collie_others_forget(collie_comm_t *comm) {
  for (int i = 0; i < others.n; i++)
    if (others.comm[i] == comm) {
      drop(i);
      return;
    }
}
