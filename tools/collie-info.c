/* collie-info: what collie would do on this machine, with this environment.
 *
 *   collie-info             version, every COLLIE_* parameter with its value and where it came
 *                           from, the transports available here, the reduction ISA
 *   collie-info --version   "collie X.Y.Z"
 *   collie-info --markdown  the parameter table as markdown (docs/environment.md is made of it)
 *
 * Exit status: 0; 1 when a COLLIE_* variable is malformed (communicator creation would
 * refuse it); 2 on a bad command line. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap/socket.h"
#include "collie.h"
#include "core/params.h"
#include "reduce/reduce.h"

extern char **environ;

static void usage(FILE *f) {
  fprintf(f,
          "usage: collie-info [--version | --markdown | -h]\n"
          "  (no option)  print the collie version, every COLLIE_* parameter with its current\n"
          "               value and source (default, environment or unset), the transports\n"
          "               available on this machine and the reduction ISA\n"
          "  --version    print \"collie X.Y.Z\"\n"
          "  --markdown   print the parameter table as markdown (for docs/environment.md)\n"
          "  -h, --help   print this help\n"
          "Exit status: 0; 1 if a COLLIE_* variable is malformed; 2 on a bad command line.\n");
}

static const char *type_name(collie_param_type_t t) {
  switch (t) {
    case COLLIE_PT_INT: return "int";
    case COLLIE_PT_SIZE: return "size";
    case COLLIE_PT_STRING: return "string";
  }
  return "?";
}

static void version_string(char *buf, size_t len) {
  int v = 0;
  if (collie_get_version(&v) != COLLIE_SUCCESS) v = COLLIE_VERSION_CODE;
  snprintf(buf, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

/* Markdown table cell: '|' would end the cell, so it is escaped. */
static void md_cell(const char *s) {
  for (; *s; s++) {
    if (*s == '|') fputs("\\|", stdout);
    else if (*s == '\n') fputc(' ', stdout);
    else fputc(*s, stdout);
  }
}

static void print_markdown(void) {
  printf("| Variable | Type | Default | Description |\n");
  printf("|---|---|---|---|\n");
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++) {
    const collie_param_desc_t *d = &collie_param_table[i];
    printf("| `%s` | %s", d->name, type_name(d->type));
    if (d->valid && d->type == COLLIE_PT_STRING) { /* what creation accepts */
      fputs(": ", stdout);
      for (const char *c = d->valid; *c; c++) fputc(*c == ',' ? '/' : *c, stdout);
    } else if (d->valid) {
      const char *dash = strchr(d->valid, '-');
      if (dash[1]) printf(", %.*s to %s", (int)(dash - d->valid), d->valid, dash + 1);
      else printf(", at least %.*s", (int)(dash - d->valid), d->valid);
    }
    fputs(" | ", stdout);
    const char *shown = collie_param_shown_default((collie_param_id_t)i);
    if (shown != d->def) {
      md_cell(shown);
    } else if (d->def) {
      fputc('`', stdout);
      md_cell(d->def);
      fputc('`', stdout);
    } else {
      fputs("(unset)", stdout);
    }
    fputs(" | ", stdout);
    md_cell(d->doc);
    fputs(" |\n", stdout);
  }
}

/* --- parameters ------------------------------------------------------------------------ */

static bool param_malformed(int i) {
  const collie_param_desc_t *d = &collie_param_table[i];
  const char *env = getenv(d->name);
  int64_t v;
  return d->type != COLLIE_PT_STRING && env && *env && collie_parse_size(env, &v) != 0;
}

/* Parameter i's value as the report shows it: what creation computes where it is left to
 * compute it (*computed), else its text (NULL when unset without a default). */
static const char *report_value(int i, bool *computed) {
  const collie_param_id_t id = (collie_param_id_t)i;
  *computed = !collie_param_from_env(id) && collie_param_shown_default(id) != collie_param_table[i].def;
  return *computed ? collie_param_shown_default(id) : collie_param_str(id);
}

static int print_params(void) {
  int bad = 0, w = 0, vw = 7;
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++) {
    int l = (int)strlen(collie_param_table[i].name);
    if (l > w) w = l;
    bool computed;
    const char *val = report_value(i, &computed);
    l = val ? (int)strlen(val) : 0;
    if (l > vw && l <= 24) vw = l;
  }
  printf("Parameters:\n  %-*s  %-6s  %-*s  %s\n", w, "variable", "type", vw, "value", "source");
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++) {
    const collie_param_desc_t *d = &collie_param_table[i];
    bool computed;
    const char *val = report_value(i, &computed);
    const char *src = collie_param_source((collie_param_id_t)i);
    printf("  %-*s  %-6s  %-*s  %s", w, d->name, type_name(d->type), vw, val ? val : "-", src);
    if (param_malformed(i)) {
      printf("  <- MALFORMED: not a number");
      bad = 1;
    } else if (val && d->type == COLLIE_PT_SIZE && !computed) {
      printf(" (%lld bytes)", (long long)collie_param_int((collie_param_id_t)i));
    }
    printf("\n");
  }
  /* COLLIE_* variables that no parameter reads: most likely a typo. */
  int unknown = 0;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "COLLIE_", 7) != 0) continue;
    size_t n = strcspn(*e, "=");
    bool known = false;
    for (int i = 0; i < COLLIE_NUM_PARAMS && !known; i++)
      known = strlen(collie_param_table[i].name) == n && strncmp(collie_param_table[i].name, *e, n) == 0;
    if (known) continue;
    if (!unknown++) printf("Set in the environment but not in collie's parameter table:\n");
    printf("  %s\n", *e);
  }
  char msg[512];
  if (collie_params_validate(msg, sizeof(msg)) != 0) {
    printf("error: %s\n", msg);
    bad = 1;
  }
  return bad;
}

/* --- transports ------------------------------------------------------------------------ */

static void check_shm(void) {
  char name[64];
  snprintf(name, sizeof(name), "/collie-info-%ld", (long)getpid());
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    printf("  shm    unavailable: shm_open(%s) failed: %s (is /dev/shm mounted and writable?)\n", name,
           strerror(errno));
    return;
  }
  int ok = ftruncate(fd, 4096) == 0;
  int err = errno;
  void *p = ok ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (ok && p == MAP_FAILED) {
    ok = 0;
    err = errno;
  }
  if (p != MAP_FAILED) munmap(p, 4096);
  close(fd);
  shm_unlink(name);
  if (ok) printf("  shm    available (/dev/shm is writable)\n");
  else printf("  shm    unavailable: cannot size or map a segment in /dev/shm: %s\n", strerror(err));
}

static bool usable_addr(const struct ifaddrs *i) {
  if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) return false;
  if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) return false;
  if (i->ifa_addr->sa_family == AF_INET6 &&
      IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
    return false;
  return true;
}

static void check_tcp(void) {
  const char *filter = collie_param_str(COLLIE_P_SOCKET_IFNAME);
  if (filter) printf("  tcp    interfaces matching COLLIE_SOCKET_IFNAME='%s':\n", filter);
  else
    printf("  tcp    interfaces (COLLIE_SOCKET_IFNAME unset: the non-loopback ones, else loopback; a rank\n"
           "         listens on the one its route to the root uses):\n");
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) != 0) {
    printf("           getifaddrs failed: %s\n", strerror(errno));
    return;
  }
  /* The same selection as collie_pick_local_addr: with a filter, every interface passing
   * it; without, the non-loopback interfaces, and loopback only when there is no other. */
  int listed = 0;
  for (int pass = 0; pass < 2 && !listed; pass++) {
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
      if (!usable_addr(i)) continue;
      bool lo = (i->ifa_flags & IFF_LOOPBACK) != 0;
      if (filter ? !collie_ifname_match(filter, i->ifa_name) : (pass == 0 ? lo : !lo)) continue;
      char ip[INET6_ADDRSTRLEN] = "?";
      if (i->ifa_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
      else
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, ip, sizeof(ip));
      printf("           %-12s %s%s\n", i->ifa_name, ip, lo ? " (loopback)" : "");
      listed++;
    }
    if (filter) break;
  }
  freeifaddrs(ifs);
  if (!listed)
    printf("           none: TCP is unavailable%s\n",
           filter ? "; check COLLIE_SOCKET_IFNAME against `ip addr`" : "");
  struct sockaddr_storage a;
  char err[256], buf[80];
  if (collie_pick_local_addr(&a, err, sizeof(err)) == 0) {
    collie_addr_set_port(&a, 0);
    collie_addr_str(&a, buf, sizeof(buf));
    char *colon = strrchr(buf, ':'); /* the port is meaningless here */
    if (colon) *colon = 0;
    printf("         collie_get_unique_id advertises %s\n", buf);
  } else {
    printf("         collie_get_unique_id would fail: %s\n", err);
  }
}

static void check_single_copy(void) {
  char src[64] = "collie single-copy probe", dst[64] = {0};
  struct iovec local = {dst, sizeof(dst)}, remote = {src, sizeof(src)};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n == (ssize_t)sizeof(src) && memcmp(src, dst, sizeof(src)) == 0)
    printf("  single-copy (process_vm_readv)  available\n");
  else if (n < 0)
    printf("  single-copy (process_vm_readv)  unavailable: %s%s\n", strerror(errno),
           errno == EPERM ? " (ptrace restrictions: see /proc/sys/kernel/yama/ptrace_scope, seccomp)" : "");
  else
    printf("  single-copy (process_vm_readv)  unavailable: short read (%zd bytes)\n", n);
}

int main(int argc, char **argv) {
  enum { REPORT, VERSION, MARKDOWN } mode = REPORT;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--version")) mode = VERSION;
    else if (!strcmp(argv[i], "--markdown")) mode = MARKDOWN;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "collie-info: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  char ver[32];
  version_string(ver, sizeof(ver));
  if (mode == VERSION) {
    printf("collie %s\n", ver);
    return 0;
  }
  if (mode == MARKDOWN) {
    print_markdown();
    return 0;
  }
  printf("collie %s\n\n", ver);
  int bad = print_params();
  printf("\nTransports:\n");
  printf("  self   available\n");
  check_shm();
  check_tcp();
  check_single_copy();
  printf("\nReduction ISA: %s\n", collie_reduce_isa());
  return bad ? 1 : 0;
}
