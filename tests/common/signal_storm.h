/* --signal-storm of the test programs: what a profiler (SIGPROF) or a timer (SIGALRM) does
 * to a library, at a far higher rate. Handlers are installed without SA_RESTART, so any
 * blocking call of the library may return EINTR, from before the communicator is created
 * to the exit. */
#ifndef COLLIE_TEST_SIGNAL_STORM_H
#define COLLIE_TEST_SIGNAL_STORM_H

#include <stdbool.h>

/* SIGALRM and SIGPROF every 20 to 500 us (chosen per process, seeded by the pid). */
void signal_storm_start(void);
bool signal_storm_on(void);
unsigned long signal_storm_count(void); /* signals delivered so far */

#endif
