/* collie_cgroup_cpu_limit and collie_usable_cpus (core/cpus.h): the CPU quota read from
 * fake /proc/self/cgroup, /proc/self/mountinfo and cgroup files, for cgroup v2 (cpu.max)
 * and v1 (cpu.cfs_quota_us): the tightest level of the cgroup and its parents up to the
 * mount point, rounding, no quota, a container's mount root (a whole path component),
 * both versions at once, an escaped mount point, the one of two mounts that holds the
 * cgroup, a path outside the namespace (/..), and files that are missing; then this
 * process's own answer, which must lie between 1 and its affinity mask's size. Each case
 * was checked to fail when the code it guards is broken. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cpus.h"
#include "core_unit.h"

static char top[PATH_MAX];

static void put(const char *rel, const char *text) {
  char path[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", top, rel);
  for (char *p = path + strlen(top) + 1; *p; p++) /* make the directories on the way */
    if (*p == '/') {
      *p = 0;
      mkdir(path, 0700);
      *p = '/';
    }
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  fputs(text, f);
  fclose(f);
}

/* The limit for a /proc/self/cgroup text and a mountinfo line whose mount point is
 * `mount` under the test directory. */
static int limit(const char *cgroup, const char *mountinfo_fmt, const char *mount) {
  char mi[4 * PATH_MAX], pc[PATH_MAX + 32], pm[PATH_MAX + 32], point[2 * PATH_MAX];
  snprintf(point, sizeof point, "%s/%s", top, mount);
  snprintf(mi, sizeof mi, mountinfo_fmt, point);
  put("cgroup", cgroup);
  put("mountinfo", mi);
  snprintf(pc, sizeof pc, "%s/cgroup", top);
  snprintf(pm, sizeof pm, "%s/mountinfo", top);
  return collie_cgroup_cpu_limit(pc, pm);
}

int main(void) {
  snprintf(top, sizeof top, "/tmp/collie-cpus-XXXXXX");
  if (!mkdtemp(top)) return 2;

  /* cgroup v2: the job's 2.5 CPUs bind its step, which has no quota of its own */
  const char *v2 = "30 24 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
  put("v2/job/step/cpu.max", "max 100000\n");
  put("v2/job/cpu.max", "250000 100000\n");
  put("v2/cpu.max", "max 100000\n");
  EXPECTF(limit("0::/job/step\n", v2, "v2") == 2, "v2 parent quota: %d", limit("0::/job/step\n", v2, "v2"));
  put("v2/job/step/cpu.max", "150000 100000\n");
  EXPECTF(limit("0::/job/step\n", v2, "v2") == 1, "v2 own quota 1.5 CPUs rounds down");
  put("v2/job/step/cpu.max", "20000 100000\n");
  EXPECTF(limit("0::/job/step\n", v2, "v2") == 1, "v2 a fraction of a CPU counts as 1");
  put("v2/job/step/cpu.max", "max 100000\n");
  put("v2/job/cpu.max", "max 100000\n");
  EXPECTF(limit("0::/job/step\n", v2, "v2") == 0, "v2 without quota");
  /* a container with its own cgroup namespace: it is the root of what it sees */
  put("v2/cpu.max", "400000 100000\n");
  EXPECTF(limit("0::/\n", v2, "v2") == 4, "v2 namespace root");

  /* cgroup v1, the cpu controller mounted with cpuacct, seen from a container without a
   * cgroup namespace: the mount's root is the container's cgroup */
  const char *v1 = "40 30 0:35 /docker/abc %s rw,nosuid,nodev,noexec,relatime shared:9 - cgroup cgroup "
                   "rw,cpu,cpuacct\n";
  const char *cg1 = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n";
  put("v1/cpu.cfs_quota_us", "300000\n");
  put("v1/cpu.cfs_period_us", "100000\n");
  EXPECTF(limit(cg1, v1, "v1") == 3, "v1 quota");
  put("v1/cpu.cfs_quota_us", "-1\n");
  EXPECTF(limit(cg1, v1, "v1") == 0, "v1 without quota");
  /* a cgroup outside the mount's root cannot be read */
  EXPECTF(limit("4:cpu,cpuacct:/other\n", v1, "v1") == 0, "v1 cgroup outside the mount");
  /* cpuacct alone is not cpu */
  const char *acct = "40 30 0:35 / %s rw - cgroup cgroup rw,cpuacct\n";
  put("acct/cpu.cfs_quota_us", "100000\n");
  put("acct/cpu.cfs_period_us", "100000\n");
  EXPECTF(limit("4:cpu:/\n3:cpuacct:/\n", acct, "acct") == 0, "cpuacct is not the cpu controller");
  /* the tightest level wins, wherever it is: a looser child under a tighter parent, and a
   * quota only at the mount point; nothing above the mount point is read */
  put("v2/cpu.max", "max 100000\n");
  put("v2/job/cpu.max", "200000 100000\n");
  put("v2/job/step/cpu.max", "600000 100000\n");
  EXPECTF(limit("0::/job/step\n", v2, "v2") == 2, "v2 looser child, tighter parent");
  put("deep/cpu.max", "300000 100000\n");
  put("cpu.max", "100000 100000\n"); /* above the mount point */
  EXPECTF(limit("0::/a/b/c\n", v2, "deep") == 3, "v2 quota at the mount point only");
  /* a mount root is a whole path component: /docker/abc does not hold /docker/abcdef */
  EXPECTF(limit("4:cpu,cpuacct:/docker/abcdef\n", v1, "v1") == 0, "v1 root prefix is not a component");
  /* v1 and v2 both limit (a hybrid host): the smaller counts */
  put("v1/cpu.cfs_quota_us", "300000\n");
  put("both2/cpu.max", "500000 100000\n");
  {
    char fmt[3 * PATH_MAX];
    char point1[2 * PATH_MAX];
    snprintf(point1, sizeof point1, "%s/v1", top);
    snprintf(fmt, sizeof fmt,
             "30 24 0:26 / %%s rw - cgroup2 cgroup2 rw\n40 30 0:35 /docker/abc %s rw - cgroup cgroup rw,cpu,cpuacct\n",
             point1);
    EXPECTF(limit("4:cpu,cpuacct:/docker/abc\n0::/\n", fmt, "both2") == 3, "v1 3 CPUs and v2 5: 3");
    put("v1/cpu.cfs_quota_us", "800000\n");
    EXPECTF(limit("4:cpu,cpuacct:/docker/abc\n0::/\n", fmt, "both2") == 5, "v1 8 CPUs and v2 5: 5");
  }
  /* a mount point with a space, written \040 in mountinfo */
  put("with space/cpu.max", "200000 100000\n");
  {
    char fmt[3 * PATH_MAX];
    snprintf(fmt, sizeof fmt, "30 24 0:26 / %s/with\\040space rw - cgroup2 cgroup2 rw\n", top);
    EXPECTF(limit("0::/\n", fmt, "unused") == 2, "escaped mount point");
  }
  /* two cgroup2 mounts: the first shows another subtree (a bind mount), the second holds ours */
  put("second/job/cpu.max", "100000 100000\n");
  {
    char fmt[3 * PATH_MAX];
    snprintf(fmt, sizeof fmt, "30 24 0:26 /elsewhere %s/first rw - cgroup2 cgroup2 rw\n31 24 0:26 / %%s rw - cgroup2 cgroup2 rw\n", top);
    EXPECTF(limit("0::/job\n", fmt, "second") == 1, "the mount that holds the cgroup");
  }
  /* outside the cgroup namespace's root */
  put("v2/x/cpu.max", "100000 100000\n");
  EXPECTF(limit("0::/../x\n", v2, "v2/job") == 0, "a path with /.. is not read");

  /* files that are not there */
  EXPECTF(limit("0::/nowhere\n", v2, "missing") == 0, "missing cgroup files");
  EXPECT(collie_cgroup_cpu_limit("/nonexistent/cgroup", "/nonexistent/mountinfo") == 0);

  /* this process */
  cpu_set_t set;
  int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  int usable = collie_usable_cpus();
  EXPECTF(usable >= 1 && usable <= affinity, "usable %d, affinity %d", usable, affinity);

  /* a host's ranks together: the union of their masks, within this process's quota */
  {
    int quota = collie_cgroup_cpu_limit("/proc/self/cgroup", "/proc/self/mountinfo");
    int cap = quota > 0 ? quota : 1 << 20;
    uint64_t a0[2] = {1, 0}, a1[2] = {2, 0}, b[2] = {1, 0}, far[2] = {0, 1}, none[2] = {0, 0};
    const uint64_t *apart[] = {a0, a1}, *together[] = {a0, b}, *spread[] = {a0, far}, *unknown[] = {a0, none};
    int two = cap < 2 ? cap : 2;
    EXPECTF(collie_host_usable_cpus(apart, 2, 2) == two, "CPUs 0 and 1: %d", collie_host_usable_cpus(apart, 2, 2));
    EXPECTF(collie_host_usable_cpus(together, 2, 2) == 1, "CPU 0 twice: %d", collie_host_usable_cpus(together, 2, 2));
    EXPECTF(collie_host_usable_cpus(spread, 2, 2) == two, "CPUs 0 and 64: %d", collie_host_usable_cpus(spread, 2, 2));
    EXPECT(collie_host_usable_cpus(unknown, 2, 2) == 0);
    uint64_t mine[2];
    collie_affinity_bits(mine, 2);
    const uint64_t *self[] = {mine};
    int n = collie_host_usable_cpus(self, 1, 2);
    EXPECTF(affinity > 128 || n == usable, "this process alone: %d, collie_usable_cpus %d", n, usable);
  }

  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", top);
  return unit_summary("test_core_cpus");
}
