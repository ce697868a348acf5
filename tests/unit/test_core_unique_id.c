/* Unique ids (src/bootstrap/unique_id.c): encode/decode round trips for IPv4 and IPv6,
 * garbage and corrupted ids refused with -1, another collie version refused with -2. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/unique_id.h"
#include "collie.h"
#include "core_unit.h"

/* The part of the 128 bytes that encode writes: everything up to its last non-zero byte
 * over many encodings (the rest is zero padding). */
static size_t g_used = 0;

static collie_id_info_t v4_info(const char *ip, uint16_t port) {
  collie_id_info_t info;
  memset(&info, 0, sizeof(info));
  struct sockaddr_in *a = (struct sockaddr_in *)&info.root;
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  inet_pton(AF_INET, ip, &a->sin_addr);
  collie_random_bytes(info.secret, sizeof(info.secret));
  info.version = COLLIE_VERSION_CODE;
  return info;
}

static collie_id_info_t v6_info(const char *ip, uint16_t port) {
  collie_id_info_t info;
  memset(&info, 0, sizeof(info));
  struct sockaddr_in6 *a = (struct sockaddr_in6 *)&info.root;
  a->sin6_family = AF_INET6;
  a->sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &a->sin6_addr);
  collie_random_bytes(info.secret, sizeof(info.secret));
  info.version = COLLIE_VERSION_CODE;
  return info;
}

static void note_used(const collie_unique_id_t *id) {
  for (size_t i = COLLIE_UNIQUE_ID_BYTES; i > g_used; i--)
    if (id->internal[i - 1]) {
      g_used = i;
      break;
    }
}

static void test_round_trip_v4(void) {
  static const struct {
    const char *ip;
    uint16_t port;
  } cases[] = {{"10.1.2.3", 4567}, {"127.0.0.1", 1}, {"255.255.255.255", 65535}, {"192.0.2.7", 29500}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    collie_id_info_t in = v4_info(cases[c].ip, cases[c].port), out;
    collie_unique_id_t id;
    memset(&id, 0xAB, sizeof(id));
    collie_id_encode(&in, &id);
    note_used(&id);
    memset(&out, 0x5A, sizeof(out));
    EXPECTF(collie_id_decode(&id, &out) == 0, "%s:%u does not decode", cases[c].ip, cases[c].port);
    const struct sockaddr_in *a = (const struct sockaddr_in *)&out.root;
    const struct sockaddr_in *b = (const struct sockaddr_in *)&in.root;
    EXPECT(out.root.ss_family == AF_INET);
    EXPECTF(a->sin_addr.s_addr == b->sin_addr.s_addr, "%s: address changed", cases[c].ip);
    EXPECTF(ntohs(a->sin_port) == cases[c].port, "port %u became %u", cases[c].port, ntohs(a->sin_port));
    EXPECT(memcmp(out.secret, in.secret, 16) == 0);
    EXPECT(out.version == (uint32_t)COLLIE_VERSION_CODE);
    /* deterministic: the same information gives the same 128 bytes */
    collie_unique_id_t id2;
    memset(&id2, 0x11, sizeof(id2));
    collie_id_encode(&in, &id2);
    EXPECT(memcmp(&id, &id2, sizeof(id)) == 0);
  }
}

static void test_round_trip_v6(void) {
  static const struct {
    const char *ip;
    uint16_t port;
  } cases[] = {{"::1", 80}, {"2001:db8::1", 4567}, {"fd00:1:2:3:4:5:6:7", 65535}, {"::ffff:10.0.0.1", 9}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    collie_id_info_t in = v6_info(cases[c].ip, cases[c].port), out;
    collie_unique_id_t id;
    collie_id_encode(&in, &id);
    note_used(&id);
    memset(&out, 0x5A, sizeof(out));
    EXPECTF(collie_id_decode(&id, &out) == 0, "[%s]:%u does not decode", cases[c].ip, cases[c].port);
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&out.root;
    const struct sockaddr_in6 *b = (const struct sockaddr_in6 *)&in.root;
    EXPECT(out.root.ss_family == AF_INET6);
    EXPECTF(memcmp(&a->sin6_addr, &b->sin6_addr, 16) == 0, "[%s]: address changed", cases[c].ip);
    EXPECTF(ntohs(a->sin6_port) == cases[c].port, "port %u became %u", cases[c].port, ntohs(a->sin6_port));
    EXPECT(memcmp(out.secret, in.secret, 16) == 0);
    EXPECT(out.version == (uint32_t)COLLIE_VERSION_CODE);
  }
}

static void test_garbage(void) {
  collie_unique_id_t id;
  collie_id_info_t out;
  memset(&id, 0, sizeof(id));
  EXPECT(collie_id_decode(&id, &out) == -1);
  memset(&id, 0xFF, sizeof(id));
  EXPECT(collie_id_decode(&id, &out) == -1);
  memcpy(id.internal, "this is not a collie unique id at all", 38);
  EXPECT(collie_id_decode(&id, &out) == -1);
  uint64_t s = 0x9E3779B97F4A7C15ull;
  int accepted = 0;
  for (int it = 0; it < 20000; it++) {
    for (size_t i = 0; i < sizeof(id); i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      id.internal[i] = (char)(s >> 24);
    }
    if (collie_id_decode(&id, &out) != -1) accepted++;
  }
  EXPECTF(accepted == 0, "%d random ids were accepted", accepted);
}

/* Every byte that the encoding uses matters: flipping any bit of any of them is refused. */
static void test_flipped(void) {
  collie_id_info_t in = v4_info("10.9.8.7", 1234), out;
  collie_unique_id_t good, bad;
  collie_id_encode(&in, &good);
  note_used(&good);
  EXPECTF(g_used >= 24, "the encoding seems to use only %zu bytes", g_used);
  for (size_t i = 0; i < g_used; i++)
    for (int bit = 0; bit < 8; bit++) {
      bad = good;
      bad.internal[i] = (char)(bad.internal[i] ^ (1 << bit));
      int rc = collie_id_decode(&bad, &out);
      EXPECTF(rc == -1, "flipping bit %d of byte %zu gave %d, expected -1", bit, i, rc);
    }
  /* An IPv6 id too. */
  in = v6_info("2001:db8::42", 80);
  collie_id_encode(&in, &good);
  for (size_t i = 0; i < g_used; i++) {
    bad = good;
    bad.internal[i] = (char)~bad.internal[i];
    int rc = collie_id_decode(&bad, &out);
    EXPECTF(rc == -1, "inverting byte %zu of an IPv6 id gave %d, expected -1", i, rc);
  }
}

static void test_version(void) {
  collie_id_info_t in = v4_info("10.0.0.1", 5000), out;
  collie_unique_id_t id;
  const uint32_t others[] = {COLLIE_VERSION_CODE + 100, COLLIE_VERSION_CODE + 10000, 0, 99, 0xFFFFFFFFu};
  for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
    if (others[k] / 100 == (uint32_t)COLLIE_VERSION_CODE / 100) continue;
    in.version = others[k];
    collie_id_encode(&in, &id);
    memset(&out, 0, sizeof(out));
    int rc = collie_id_decode(&id, &out);
    EXPECTF(rc == -2, "an id of version %u gave %d, expected -2", others[k], rc);
    EXPECTF(out.version == others[k], "the other version is reported as %u, expected %u", out.version, others[k]);
  }
  /* Another patch level of the same major.minor is compatible. */
  in.version = COLLIE_VERSION_CODE / 100 * 100 + (COLLIE_VERSION_CODE % 100 + 1) % 100;
  collie_id_encode(&in, &id);
  EXPECT(collie_id_decode(&id, &out) == 0);
}

int main(void) {
  test_round_trip_v4();
  test_round_trip_v6();
  test_garbage();
  test_flipped();
  test_version();
  return unit_summary("test_core_unique_id");
}
