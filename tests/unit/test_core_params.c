/* The parameter table (src/core/params.c): size parsing, environment overrides and the
 * reported source, caching until collie_params_reload, and collie_params_validate. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/params.h"
#include "core_unit.h"

static void test_parse_size(void) {
  static const struct {
    const char *s;
    int64_t v;
  } good[] = {
      {"0", 0},          {"17", 17},
      {"64K", 64 << 10}, {"64k", 64 << 10},
      {"2M", 2 << 20},   {"2m", 2 << 20},
      {"1G", 1 << 30},   {"3G", 3LL << 30},
      {"4096", 4096},    {"9223372036854775807", INT64_MAX},
  };
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    int64_t v = -12345;
    int rc = collie_parse_size(good[i].s, &v);
    EXPECTF(rc == 0 && v == good[i].v, "collie_parse_size(\"%s\") = %d, %lld; expected 0, %lld", good[i].s, rc,
            (long long)v, (long long)good[i].v);
  }
  static const char *bad[] = {"",    "abc", "K",   "12X",  "1.5M", "64KK", "64 K", "2M3",
                              "0x", "M2",  "--1", "1e3", "99999999999999999999"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int64_t v = -12345;
    int rc = collie_parse_size(bad[i], &v);
    EXPECTF(rc == -1, "collie_parse_size(\"%s\") = %d (value %lld); expected -1", bad[i], rc, (long long)v);
    EXPECTF(v == -12345, "collie_parse_size(\"%s\") wrote %lld on failure", bad[i], (long long)v);
  }
  int64_t v = 7;
  EXPECT(collie_parse_size(NULL, &v) == -1 && v == 7);
}

/* Every entry is well formed: what collie-info and docs/environment.md print. */
static void test_table(void) {
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++) {
    const collie_param_desc_t *d = &collie_param_table[i];
    EXPECTF(d->name && strncmp(d->name, "COLLIE_", 7) == 0, "entry %d has name '%s'", i, d->name ? d->name : "(null)");
    if (!d->name) continue;
    EXPECTF(d->doc && strlen(d->doc) > 10, "%s has no doc", d->name);
    EXPECTF(d->type == COLLIE_PT_INT || d->type == COLLIE_PT_SIZE || d->type == COLLIE_PT_STRING, "%s: type %d",
            d->name, (int)d->type);
    int64_t v;
    if (d->def && d->type != COLLIE_PT_STRING)
      EXPECTF(collie_parse_size(d->def, &v) == 0, "%s: default '%s' does not parse", d->name, d->def);
    for (int j = 0; j < i; j++)
      EXPECTF(!collie_param_table[j].name || strcmp(collie_param_table[j].name, d->name) != 0, "%s is listed twice",
              d->name);
  }
}

static void test_sources(void) {
  /* Start from a clean environment for the variables this test touches. */
  unsetenv("COLLIE_SHM_SLOT_SIZE");
  unsetenv("COLLIE_DEBUG_FILE");
  unsetenv("COLLIE_EXEC_TIMEOUT");
  unsetenv("COLLIE_TCP_NSOCKS");
  collie_params_reload();

  EXPECT_STR(collie_param_source(COLLIE_P_SHM_SLOT_SIZE), "default");
  EXPECT_STR(collie_param_str(COLLIE_P_SHM_SLOT_SIZE), "128K");
  EXPECT(collie_param_int(COLLIE_P_SHM_SLOT_SIZE) == 128 << 10);
  EXPECT_STR(collie_param_source(COLLIE_P_DEBUG_FILE), "unset");
  EXPECT(collie_param_str(COLLIE_P_DEBUG_FILE) == NULL);
  EXPECT_STR(collie_param_source(COLLIE_P_EXEC_TIMEOUT), "default");
  EXPECT(collie_param_int(COLLIE_P_EXEC_TIMEOUT) == 600);
  EXPECT(collie_param_int(COLLIE_P_TCP_NSOCKS) == 2);

  /* Values are cached: a change is seen only after collie_params_reload. */
  setenv("COLLIE_SHM_SLOT_SIZE", "2M", 1);
  setenv("COLLIE_DEBUG_FILE", "/tmp/collie-%p.log", 1);
  setenv("COLLIE_TCP_NSOCKS", "5", 1);
  EXPECT_STR(collie_param_source(COLLIE_P_SHM_SLOT_SIZE), "default");
  EXPECT(collie_param_int(COLLIE_P_SHM_SLOT_SIZE) == 128 << 10);
  collie_params_reload();
  EXPECT_STR(collie_param_source(COLLIE_P_SHM_SLOT_SIZE), "environment");
  EXPECT_STR(collie_param_str(COLLIE_P_SHM_SLOT_SIZE), "2M");
  EXPECT(collie_param_int(COLLIE_P_SHM_SLOT_SIZE) == 2 << 20);
  EXPECT_STR(collie_param_source(COLLIE_P_DEBUG_FILE), "environment");
  EXPECT_STR(collie_param_str(COLLIE_P_DEBUG_FILE), "/tmp/collie-%p.log");
  EXPECT_STR(collie_param_source(COLLIE_P_TCP_NSOCKS), "environment");
  EXPECT(collie_param_int(COLLIE_P_TCP_NSOCKS) == 5);

  /* An empty variable counts as unset. */
  setenv("COLLIE_SHM_SLOT_SIZE", "", 1);
  setenv("COLLIE_DEBUG_FILE", "", 1);
  collie_params_reload();
  EXPECT_STR(collie_param_source(COLLIE_P_SHM_SLOT_SIZE), "default");
  EXPECT(collie_param_int(COLLIE_P_SHM_SLOT_SIZE) == 128 << 10);
  EXPECT_STR(collie_param_source(COLLIE_P_DEBUG_FILE), "unset");

  /* A malformed number: reported as from the environment, the value falls back to the default
   * (communicator creation refuses it through collie_params_validate). */
  setenv("COLLIE_EXEC_TIMEOUT", "soon", 1);
  collie_params_reload();
  EXPECT_STR(collie_param_source(COLLIE_P_EXEC_TIMEOUT), "environment");
  EXPECT_STR(collie_param_str(COLLIE_P_EXEC_TIMEOUT), "soon");
  EXPECT(collie_param_int(COLLIE_P_EXEC_TIMEOUT) == 600);

  /* Back to the defaults. */
  unsetenv("COLLIE_SHM_SLOT_SIZE");
  unsetenv("COLLIE_DEBUG_FILE");
  unsetenv("COLLIE_EXEC_TIMEOUT");
  unsetenv("COLLIE_TCP_NSOCKS");
  collie_params_reload();
  EXPECT_STR(collie_param_source(COLLIE_P_TCP_NSOCKS), "default");
  EXPECT(collie_param_int(COLLIE_P_TCP_NSOCKS) == 2);
}

static void test_validate(void) {
  char msg[512];
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++) unsetenv(collie_param_table[i].name);
  msg[0] = 0;
  EXPECTF(collie_params_validate(msg, sizeof(msg)) == 0, "clean environment refused: %s", msg);

  setenv("COLLIE_EXEC_TIMEOUT", "30", 1);
  setenv("COLLIE_CHUNK_SIZE", "128K", 1);
  setenv("COLLIE_ALGO", "ring", 1); /* strings are never numbers */
  EXPECTF(collie_params_validate(msg, sizeof(msg)) == 0, "valid values refused: %s", msg);

  setenv("COLLIE_EXEC_TIMEOUT", "ten", 1);
  msg[0] = 0;
  EXPECT(collie_params_validate(msg, sizeof(msg)) == -1);
  EXPECT_CONTAINS(msg, "COLLIE_EXEC_TIMEOUT");
  EXPECT_CONTAINS(msg, "'ten'");
  EXPECT_CONTAINS(msg, "not a number");
  unsetenv("COLLIE_EXEC_TIMEOUT");

  setenv("COLLIE_CHUNK_SIZE", "64Q", 1);
  msg[0] = 0;
  EXPECT(collie_params_validate(msg, sizeof(msg)) == -1);
  EXPECT_CONTAINS(msg, "COLLIE_CHUNK_SIZE");
  unsetenv("COLLIE_CHUNK_SIZE");

  /* A short buffer is filled, truncated and terminated. */
  setenv("COLLIE_SPIN", "lots", 1);
  char small[12];
  memset(small, 'x', sizeof(small));
  EXPECT(collie_params_validate(small, sizeof(small)) == -1);
  EXPECT(memchr(small, 0, sizeof(small)) != NULL);
  unsetenv("COLLIE_SPIN");
  unsetenv("COLLIE_ALGO");
  EXPECT(collie_params_validate(msg, sizeof(msg)) == 0);
}

/* Values outside a variable's `valid` are refused with the valid ones named: taken for
 * the default or clamped, they ran something else (COLLIE_TRANSPORT=TCP ran shared
 * memory), and a malformed COLLIE_PORT_RANGE let collie listen on any port. */
static void test_bounds(void) {
  static const struct {
    const char *name, *value, *says; /* says: NULL when the value is valid */
  } cases[] = {
      {"COLLIE_TRANSPORT", "tcp", NULL},           {"COLLIE_TRANSPORT", "TCP", NULL},
      {"COLLIE_TRANSPORT", "shm", "not one of auto/tcp"},
      {"COLLIE_DEBUG", "info", NULL},              {"COLLIE_DEBUG", "verbose", "not one of NONE/WARN/INFO/TRACE"},
      {"COLLIE_REDUCE_ISA", "sse", "not one of auto/portable"},
      {"COLLIE_TCP_NSOCKS", "16", NULL},           {"COLLIE_TCP_NSOCKS", "0", "outside 1 to 16"},
      {"COLLIE_TCP_NSOCKS", "17", "outside 1 to 16"},
      {"COLLIE_SHM_NSLOTS", "1", "outside 2 to 4096"},
      {"COLLIE_SHM_SLOT_SIZE", "4K", NULL},        {"COLLIE_SHM_SLOT_SIZE", "4095", "outside 4K to 1G"},
      {"COLLIE_SHM_CMA", "3", "outside 0 to 2"},   {"COLLIE_SHM_DIRECT", "2", "outside 0 to 1"},
      {"COLLIE_EXEC_TIMEOUT", "0", "outside 1 to 2147483"},
      {"COLLIE_EXEC_TIMEOUT", "100000", NULL},     {"COLLIE_KEEPALIVE", "0", NULL},
      /* Milliseconds in an int: 4294968 s wrapped to a 704 ms connect timeout. */
      {"COLLIE_CONNECT_TIMEOUT", "2147483", NULL}, {"COLLIE_CONNECT_TIMEOUT", "4294968", "outside 1 to 2147483"},
      {"COLLIE_EXEC_TIMEOUT", "2147484", "outside 1 to 2147483"},
      {"COLLIE_CHUNK_SIZE", "0", "below its least value, 1"},
      {"COLLIE_PORT_RANGE", "50000-50010", NULL},  {"COLLIE_PORT_RANGE", "50010-50000", "not a range of ports"},
      {"COLLIE_PORT_RANGE", "50000", "not a range of ports"},
      {"COLLIE_PORT_RANGE", "1-65536", "not a range of ports"},
  };
  char msg[512];
  for (int i = 0; i < COLLIE_NUM_PARAMS; i++) unsetenv(collie_param_table[i].name);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    setenv(cases[i].name, cases[i].value, 1);
    collie_params_reload();
    msg[0] = 0;
    int r = collie_params_validate(msg, sizeof(msg));
    if (!cases[i].says) {
      EXPECTF(r == 0, "%s=%s refused: %s", cases[i].name, cases[i].value, msg);
    } else {
      EXPECTF(r == -1, "%s=%s accepted", cases[i].name, cases[i].value);
      EXPECT_CONTAINS(msg, cases[i].name);
      EXPECT_CONTAINS(msg, cases[i].says);
    }
    unsetenv(cases[i].name);
  }
  collie_params_reload();

  /* COLLIE_DEBUG_SUBSYS: known names in any case, ^ to exclude; an unknown one is named. */
  static const struct {
    const char *value;
    int ok;
  } subsys[] = {{"INIT,COLL", 1}, {"^tune", 1}, {"ALL", 1}, {"INIT,FOO", 0}, {"^NET", 0}};
  for (size_t i = 0; i < sizeof(subsys) / sizeof(subsys[0]); i++) {
    setenv("COLLIE_DEBUG_SUBSYS", subsys[i].value, 1);
    collie_params_reload();
    msg[0] = 0;
    int r = collie_log_check_subsys(msg, sizeof(msg));
    EXPECTF(r == (subsys[i].ok ? 0 : -1), "COLLIE_DEBUG_SUBSYS=%s: %d (%s)", subsys[i].value, r, msg);
    if (!subsys[i].ok) EXPECT_CONTAINS(msg, "names an unknown subsystem");
  }
  unsetenv("COLLIE_DEBUG_SUBSYS");
  collie_params_reload();
}

int main(void) {
  test_parse_size();
  test_table();
  test_sources();
  test_validate();
  test_bounds();
  return unit_summary("test_core_params");
}
