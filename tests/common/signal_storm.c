/* --signal-storm of the test programs (signal_storm.h). */
#include "signal_storm.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static atomic_ulong delivered;
static bool on;

static void count(int sig) {
  (void)sig;
  atomic_fetch_add_explicit(&delivered, 1, memory_order_relaxed);
}

void signal_storm_start(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = count; /* sa_flags 0: no SA_RESTART, interrupted calls return EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  sigaction(SIGPROF, &sa, NULL);
  srand((unsigned)getpid());
  for (int k = 0; k < 2; k++) {
    long us = 20 + rand() % 481;
    struct itimerval it = {{0, us}, {0, us}};
    setitimer(k ? ITIMER_PROF : ITIMER_REAL, &it, NULL);
  }
  on = true;
}

bool signal_storm_on(void) { return on; }

unsigned long signal_storm_count(void) { return atomic_load(&delivered); }
