/* How many CPUs this process, or the ranks of a host together, may use: what decides
 * whether a host's ranks outnumber its cores for the wait policy (core/comm_init.c,
 * core/wait.c). The cost model counts online CPUs instead, the same on every rank
 * (tune/tune.h). */
#ifndef COLLIE_CPUS_H
#define COLLIE_CPUS_H

#include <sched.h>
#include <stdint.h>

/* The CPU that round-robin placement gives index i in mask (the (i mod count)-th CPU it
 * holds), or -1 for an empty mask: where a rank starts (COLLIE_SPREAD_RANKS) and where
 * `collie-run --bind` pins it. Inline: collie-run uses it without linking the library. */
static inline int collie_nth_cpu(const cpu_set_t *mask, int i) {
  const int count = CPU_COUNT(mask);
  if (count < 1) return -1;
  int want = i % count;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, mask) && want-- == 0) return c;
  return -1;
}

/* The CPUs in this process's affinity mask (all online ones if it cannot be read), lowered
 * to its cgroup's CPU quota when that is smaller: a container started with `docker --cpus
 * 2` or a Kubernetes limit of 2 CPUs sees every CPU of the host, but gets two CPUs' time.
 * At least 1. */
int collie_usable_cpus(void);

/* This process's affinity mask as bits (CPU c is bit c % 64 of bits[c / 64], for c below
 * 64 * words); all zero when it cannot be read. */
void collie_affinity_bits(uint64_t *bits, int words);
/* How many CPUs the ranks of one host may use together: the union of their masks (each
 * `words` long), lowered to this process's cgroup CPU quota like collie_usable_cpus. Ranks
 * that a launcher bound to one core each (mpirun --bind-to core, srun --cpu-bind) see one
 * CPU apiece, and yet do not share one. 0 when some mask is unknown (all zero). */
int collie_host_usable_cpus(const uint64_t *const *masks, int n, int words);

/* The CPU quota of the cgroup that `proc_cgroup` (the format of /proc/self/cgroup) and
 * `mountinfo` (of /proc/self/mountinfo) describe, in whole CPUs rounded down (at least 1):
 * the smallest over the cgroup and its parents, cgroup v2's cpu.max or v1's
 * cpu.cfs_quota_us / cpu.cfs_period_us. 0 when there is none or it cannot be read. */
int collie_cgroup_cpu_limit(const char *proc_cgroup, const char *mountinfo);

#endif
