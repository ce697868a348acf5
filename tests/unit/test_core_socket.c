/* Socket helpers (src/bootstrap/socket.c): COLLIE_SOCKET_IFNAME filters in NCCL's syntax and
 * host:port parsing. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#include "bootstrap/socket.h"
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

int main(void) {
  test_ifname();
  test_hostport_good();
  test_hostport_bad();
  return unit_summary("test_core_socket");
}
