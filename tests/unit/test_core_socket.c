/* Socket helpers (src/bootstrap/socket.c): COLLIE_SOCKET_IFNAME filters in NCCL's syntax,
 * host:port parsing, and collie_listen within COLLIE_PORT_RANGE when ranks listen at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/socket.h"
#include "core/params.h"
#include "core_unit.h"

static void test_ifname(void) {
  static const struct {
    const char *filter, *name;
    bool match;
  } cases[] = {
      /* prefixes */
      {"eth", "eth0", true},
      {"eth", "eth12", true},
      {"eth", "eth", true},
      {"eth", "ib0", false},
      {"eth", "veth0", false},
      {"eth0", "eth0", true},
      {"eth0", "eth01", true}, /* a prefix, not an exact name */
      {"eth0", "eth1", false},
      /* exclusion */
      {"^docker", "docker0", false},
      {"^docker", "eth0", true},
      {"^docker", "lo", true},
      {"^docker,lo", "lo", false},
      {"^docker,lo", "docker1", false},
      {"^docker,lo", "ib0", true},
      /* exact names */
      {"=eth0", "eth0", true},
      {"=eth0", "eth01", false},
      {"=eth0", "eth", false},
      {"=eth0,ib1", "ib1", true},
      {"=eth0,ib1", "ib10", false},
      {"^=eth0", "eth0", false},
      {"^=eth0", "eth01", true},
      /* lists */
      {"eth,ib", "eth0", true},
      {"eth,ib", "ib0", true},
      {"eth,ib", "lo", false},
      {"eth,ib", "enp1s0", false},
      {"en,eth,ib", "enp1s0", true},
      /* no filter: everything */
      {NULL, "eth0", true},
      {"", "lo", true},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bool got = collie_ifname_match(cases[i].filter, cases[i].name);
    EXPECTF(got == cases[i].match, "filter '%s' on '%s': %s, expected %s", cases[i].filter ? cases[i].filter : "(null)",
            cases[i].name, got ? "match" : "no match", cases[i].match ? "match" : "no match");
  }
}

static void test_hostport_good(void) {
  struct sockaddr_storage a;
  char err[256] = "", buf[80];

  memset(&a, 0xEE, sizeof(a));
  EXPECTF(collie_parse_hostport("127.0.0.1:1234", &a, err, sizeof(err)) == 0, "%s", err);
  EXPECT(a.ss_family == AF_INET);
  EXPECT(collie_addr_port(&a) == 1234);
  EXPECT(((struct sockaddr_in *)&a)->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
  EXPECT_STR(collie_addr_str(&a, buf, sizeof(buf)), "127.0.0.1:1234");
  EXPECT(collie_addr_len(&a) == sizeof(struct sockaddr_in));

  memset(&a, 0xEE, sizeof(a));
  EXPECTF(collie_parse_hostport("[::1]:80", &a, err, sizeof(err)) == 0, "%s", err);
  EXPECT(a.ss_family == AF_INET6);
  EXPECT(collie_addr_port(&a) == 80);
  EXPECT(memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr, &in6addr_loopback, 16) == 0);
  EXPECT_STR(collie_addr_str(&a, buf, sizeof(buf)), "[::1]:80");
  EXPECT(collie_addr_len(&a) == sizeof(struct sockaddr_in6));

  memset(&a, 0xEE, sizeof(a));
  EXPECTF(collie_parse_hostport("[2001:db8::7]:65535", &a, err, sizeof(err)) == 0, "%s", err);
  EXPECT(a.ss_family == AF_INET6 && collie_addr_port(&a) == 65535);
  EXPECT_STR(collie_addr_str(&a, buf, sizeof(buf)), "[2001:db8::7]:65535");

  /* a name: localhost resolves to a loopback address of either family */
  memset(&a, 0xEE, sizeof(a));
  EXPECTF(collie_parse_hostport("localhost:99", &a, err, sizeof(err)) == 0, "%s", err);
  EXPECT(collie_addr_port(&a) == 99);
  if (a.ss_family == AF_INET)
    EXPECT((ntohl(((struct sockaddr_in *)&a)->sin_addr.s_addr) >> 24) == 127);
  else
    EXPECT(a.ss_family == AF_INET6 && memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr, &in6addr_loopback, 16) == 0);

  collie_addr_set_port(&a, 4242);
  EXPECT(collie_addr_port(&a) == 4242);
}

static void test_hostport_bad(void) {
  static const char *bad[] = {
      "noport", "host:0", "host:70000", "", "127.0.0.1:", "127.0.0.1:12x", "127.0.0.1:-5",
      "[::1]80", "[::1", "::1:80x", "127.0.0.1:65536",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct sockaddr_storage a;
    char err[256] = "";
    int rc = collie_parse_hostport(bad[i], &a, err, sizeof(err));
    EXPECTF(rc != 0, "'%s' was accepted", bad[i]);
    EXPECTF(err[0] != 0, "'%s' was refused without a message", bad[i]);
  }
  struct sockaddr_storage a;
  char err[256] = "";
  EXPECT(collie_parse_hostport(NULL, &a, err, sizeof(err)) != 0);
  /* The messages say what is wrong. */
  collie_parse_hostport("noport", &a, err, sizeof(err));
  EXPECT_CONTAINS(err, "port");
  collie_parse_hostport("host:70000", &a, err, sizeof(err));
  EXPECT_CONTAINS(err, "host:70000");
}

/* Threads that call collie_listen at once, as the ranks of a host do, each get a port of a
 * range with room for all: two that bound one port (SO_REUSEADDR lets both) failed at
 * listen() with EADDRINUSE and gave up with the rest of the range free. */
#define LISTENERS 8
#define RANGE 16
static pthread_barrier_t listen_start;
static int listen_fd[LISTENERS], listen_err[LISTENERS];

static void *listen_at_once(void *arg) {
  const int i = (int)(intptr_t)arg;
  struct sockaddr_storage a;
  memset(&a, 0, sizeof(a));
  ((struct sockaddr_in *)&a)->sin_family = AF_INET;
  ((struct sockaddr_in *)&a)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  pthread_barrier_wait(&listen_start);
  listen_fd[i] = collie_listen(&a);
  listen_err[i] = errno;
  return NULL;
}

/* RANGE ports in a row that are free now, picked by the kernel (no fixed port): 0 if none. */
static int free_range(void) {
  for (int tries = 0; tries < 100; tries++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || getsockname(s, (struct sockaddr *)&a, &len)) {
      if (s >= 0) close(s);
      continue;
    }
    close(s);
    int base = ntohs(a.sin_port), ok = base + RANGE - 1 <= 65535;
    for (int p = base; ok && p < base + RANGE; p++) {
      int t = socket(AF_INET, SOCK_STREAM, 0);
      a.sin_port = htons((uint16_t)p);
      ok = t >= 0 && bind(t, (struct sockaddr *)&a, sizeof(a)) == 0;
      if (t >= 0) close(t);
    }
    if (ok) return base;
  }
  return 0;
}

static void test_listen_at_once(void) {
  int base = free_range();
  EXPECTF(base > 0, "found no %d free ports in a row", RANGE);
  if (!base) return;
  char range[32];
  snprintf(range, sizeof(range), "%d-%d", base, base + RANGE - 1);
  setenv("COLLIE_PORT_RANGE", range, 1);
  collie_params_reload();
  pthread_barrier_init(&listen_start, NULL, LISTENERS);
  int failed = 0;
  for (int round = 0; round < 300 && !failed; round++) {
    pthread_t t[LISTENERS];
    for (intptr_t i = 0; i < LISTENERS; i++) pthread_create(&t[i], NULL, listen_at_once, (void *)i);
    for (int i = 0; i < LISTENERS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < LISTENERS; i++) {
      if (listen_fd[i] < 0 && !failed++)
        EXPECTF(0, "round %d: %d threads, %d ports (%s): a listen failed: %s", round, LISTENERS, RANGE, range,
                strerror(listen_err[i]));
      if (listen_fd[i] >= 0) close(listen_fd[i]);
    }
  }
  pthread_barrier_destroy(&listen_start);
  unsetenv("COLLIE_PORT_RANGE");
  collie_params_reload();
}

int main(void) {
  test_ifname();
  test_hostport_good();
  test_hostport_bad();
  test_listen_at_once();
  return unit_summary("test_core_socket");
}
