/* How many CPUs this process may use (core/cpus.h). The affinity mask says which CPUs the
 * scheduler may put us on; a cgroup CPU quota says how much of their time we get, and a
 * container with a quota of 2 CPUs on a 64-core host that polled as if it had 64 would
 * be throttled for whole scheduler periods (100 ms by default) while its peers wait. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/cpus.h"

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether the comma-separated list holds item. */
static bool has_item(const char *list, const char *item) {
  const size_t n = strlen(item);
  for (const char *p = list; p;) {
    const char *e = strchr(p, ',');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, item, n) == 0) return true;
    p = e ? e + 1 : NULL;
  }
  return false;
}

/* Decodes mountinfo's octal escapes (a space is \040, a backslash \134) in place. */
static void unescape(char *s) {
  char *w = s;
  for (const char *r = s; *r; w++) {
    if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
      *w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
      r += 4;
    } else {
      *w = *r++;
    }
  }
  *w = 0;
}

/* Where `path` of this hierarchy lies: under the mount of cgroup v2 (v1 false), or of the v1
 * hierarchy that holds the cpu controller, whose root (the cgroup it shows at its top: a
 * container without its own cgroup namespace sees its own cgroup there) holds the path.
 * Writes the mount point and returns the path below it; NULL when no mount holds it.
 * Lines of mountinfo read "id parent major:minor root mount-point options [optional
 * fields] - fstype source super-options" (proc(5)). */
static const char *find_mount(const char *mountinfo, bool v1, const char *path, char *point) {
  FILE *f = fopen(mountinfo, "r");
  if (!f) return NULL;
  char line[4096], fstype[64], source[256], super[1024], root[PATH_MAX];
  const char *rel = NULL;
  while (!rel && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *sep = strstr(line, " - ");
    if (!sep) continue;
    *sep = 0;
    super[0] = 0;
    if (sscanf(sep + 3, "%63s %255s %1023s", fstype, source, super) < 2) continue;
    if (v1 ? strcmp(fstype, "cgroup") != 0 || !has_item(super, "cpu") : strcmp(fstype, "cgroup2") != 0) continue;
    if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2) continue;
    unescape(root);
    unescape(point);
    const size_t n = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/')) rel = path + n;
  }
  fclose(f);
  return rel;
}

/* This process's cgroup path in v2 (the "0::" line), or in the v1 hierarchy with cpu. */
static bool find_cgroup(const char *proc_cgroup, bool v1, char *path) {
  FILE *f = fopen(proc_cgroup, "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || strlen(c2 + 1) >= PATH_MAX) continue;
    *c1 = *c2 = 0;
    const char *controllers = c1 + 1;
    if (v1 ? has_item(controllers, "cpu") : strcmp(line, "0") == 0 && !*controllers) {
      strcpy(path, c2 + 1);
      found = true;
    }
  }
  fclose(f);
  return found;
}

/* The first line of dir/name into buf; false when it cannot be read. */
static bool read_line(const char *dir, const char *name, char *buf, size_t len) {
  char file[2 * PATH_MAX + 64];
  if ((size_t)snprintf(file, sizeof file, "%s/%s", dir, name) >= sizeof file) return false;
  FILE *f = fopen(file, "r");
  if (!f) return false;
  bool ok = fgets(buf, (int)len, f) != NULL;
  fclose(f);
  return ok;
}

/* The quota set in one cgroup directory, in CPUs (at least 1); 0: none. v2's cpu.max reads
 * "QUOTA PERIOD" or "max PERIOD"; v1 keeps the two in files of their own (-1: none). */
static int limit_in(const char *dir, bool v1) {
  char a[64], b[64];
  long long quota = 0, period = 0;
  if (v1) {
    if (!read_line(dir, "cpu.cfs_quota_us", a, sizeof a) || !read_line(dir, "cpu.cfs_period_us", b, sizeof b))
      return 0;
    quota = strtoll(a, NULL, 10);
    period = strtoll(b, NULL, 10);
  } else {
    if (!read_line(dir, "cpu.max", a, sizeof a) || sscanf(a, "%lld %lld", &quota, &period) != 2) return 0;
  }
  if (quota <= 0 || period <= 0) return 0;
  long long cpus = quota / period; /* rounded down: a fraction of a CPU is no room to poll */
  return cpus < 1 ? 1 : cpus > INT_MAX ? INT_MAX : (int)cpus;
}

/* The smallest quota of this process's cgroup and its parents in one hierarchy. */
static int hierarchy_limit(const char *proc_cgroup, const char *mountinfo, bool v1) {
  char path[PATH_MAX], point[PATH_MAX], dir[2 * PATH_MAX];
  if (!find_cgroup(proc_cgroup, v1, path)) return 0;
  /* A process outside its cgroup namespace's root sees "/../x": not under any mount. */
  const char *dots = strstr(path, "/..");
  if (dots && (dots[3] == 0 || dots[3] == '/')) return 0;
  const char *rel = find_mount(mountinfo, v1, path, point);
  if (!rel) return 0;
  if ((size_t)snprintf(dir, sizeof dir, "%s%s", point, strcmp(rel, "/") == 0 ? "" : rel) >= sizeof dir) return 0;
  const size_t top = strlen(point);
  int best = 0;
  for (;;) {
    int l = limit_in(dir, v1);
    if (l > 0 && (best == 0 || l < best)) best = l;
    char *slash = strrchr(dir, '/');
    if (strlen(dir) <= top || !slash || (size_t)(slash - dir) < top) break;
    *slash = 0;
  }
  return best;
}

int collie_cgroup_cpu_limit(const char *proc_cgroup, const char *mountinfo) {
  int v2 = hierarchy_limit(proc_cgroup, mountinfo, false), v1 = hierarchy_limit(proc_cgroup, mountinfo, true);
  return v2 > 0 && (v1 == 0 || v2 < v1) ? v2 : v1;
}

void collie_affinity_bits(uint64_t *bits, int words) {
  memset(bits, 0, sizeof(*bits) * (size_t)words);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  for (int c = 0; c < CPU_SETSIZE && c < 64 * words; c++)
    if (CPU_ISSET(c, &set)) bits[c / 64] |= (uint64_t)1 << (c % 64);
}

/* n CPUs lowered to this process's cgroup CPU quota. */
static int within_quota(long n) {
  int quota = collie_cgroup_cpu_limit("/proc/self/cgroup", "/proc/self/mountinfo");
  return (int)(quota > 0 && quota < n ? quota : n);
}

int collie_host_usable_cpus(const uint64_t *const *masks, int n, int words) {
  uint64_t all[words];
  memset(all, 0, sizeof(all));
  for (int i = 0; i < n; i++) {
    uint64_t any = 0;
    for (int w = 0; w < words; w++) {
      any |= masks[i][w];
      all[w] |= masks[i][w];
    }
    if (!any) return 0;
  }
  int count = 0;
  for (int w = 0; w < words; w++) count += __builtin_popcountll(all[w]);
  return within_quota(count);
}

int collie_usable_cpus(void) {
  cpu_set_t set;
  long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
  return within_quota(n < 1 ? 1 : n);
}
