/* Public API errors that need no peer: a garbage unique id is refused at once (not waited
 * on) with a sentence; bad ranks, NULL pointers, another version's id, a malformed
 * COLLIE_* number; error strings, version, datatype and op names; 2 ranks (threads) with
 * the longest connect timeout. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap/unique_id.h"
#include "collie.h"
#include "core_unit.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static collie_unique_id_t garbage_id(void) {
  collie_unique_id_t id;
  for (size_t i = 0; i < sizeof(id.internal); i++) id.internal[i] = (char)(i * 37 + 11);
  return id;
}

static void test_garbage_id(void) {
  collie_unique_id_t id = garbage_id();
  for (int rank = 0; rank < 2; rank++) {
    collie_comm_t *comm = (collie_comm_t *)&id; /* must be overwritten with NULL */
    double t0 = now_s();
    collie_result_t r = collie_comm_init_rank(&comm, 2, id, rank);
    double dt = now_s() - t0;
    EXPECTF(r == COLLIE_ERR_INVALID_ARGUMENT, "rank %d: got %d (%s)", rank, r, collie_get_error_string(r));
    EXPECTF(dt < 1.0, "rank %d: refusing a garbage id took %.3f s", rank, dt);
    EXPECT(comm == NULL);
    EXPECT_CONTAINS(collie_get_last_error(NULL), "unique id");
  }
  /* all zeros (an id never filled in) */
  collie_unique_id_t zero;
  memset(&zero, 0, sizeof(zero));
  collie_comm_t *comm = NULL;
  double t0 = now_s();
  collie_config_t cfg = COLLIE_CONFIG_INIT;
  collie_result_t r = collie_comm_init_rank_config(&comm, 4, zero, 3, &cfg);
  EXPECTF(r == COLLIE_ERR_INVALID_ARGUMENT && now_s() - t0 < 1.0, "zero id: %d", r);
  EXPECT_CONTAINS(collie_get_last_error(NULL), "unique id");
}

static void test_bad_arguments(collie_unique_id_t id) {
  collie_comm_t *comm = NULL;
  static const int bad[][2] = {{2, 2}, {2, -1}, {2, 7}, {0, 0}, {-3, 0}, {1, 1}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    comm = (collie_comm_t *)&comm;
    collie_result_t r = collie_comm_init_rank(&comm, bad[i][0], id, bad[i][1]);
    EXPECTF(r == COLLIE_ERR_INVALID_ARGUMENT, "nranks %d rank %d: got %d", bad[i][0], bad[i][1], r);
    EXPECT(comm == NULL);
    EXPECT_CONTAINS(collie_get_last_error(NULL), "rank");
  }
  EXPECT(collie_comm_init_rank(NULL, 2, id, 0) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT(collie_comm_init_all(NULL, 2) == COLLIE_ERR_INVALID_ARGUMENT);
  collie_comm_t *comms[2];
  EXPECT(collie_comm_init_all(comms, 0) == COLLIE_ERR_INVALID_ARGUMENT);

  collie_config_t cfg = COLLIE_CONFIG_INIT;
  cfg.struct_size = 0; /* not initialised with COLLIE_CONFIG_INIT */
  EXPECT(collie_comm_init_rank_config(&comm, 2, id, 0, &cfg) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(collie_get_last_error(NULL), "COLLIE_CONFIG_INIT");

  /* A malformed number in the environment is refused before anything waits. */
  setenv("COLLIE_EXEC_TIMEOUT", "forever", 1);
  double t0 = now_s();
  collie_result_t r = collie_comm_init_rank(&comm, 2, id, 1);
  EXPECTF(r == COLLIE_ERR_INVALID_ARGUMENT && now_s() - t0 < 1.0, "COLLIE_EXEC_TIMEOUT=forever: %d", r);
  EXPECT_CONTAINS(collie_get_last_error(NULL), "COLLIE_EXEC_TIMEOUT");
  unsetenv("COLLIE_EXEC_TIMEOUT");

  /* Queries on NULL */
  int x;
  EXPECT(collie_comm_rank(NULL, &x) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT(collie_comm_size(NULL, &x) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT(collie_get_unique_id(NULL) == COLLIE_ERR_INVALID_ARGUMENT);
}

static void test_other_version(void) {
  collie_id_info_t info;
  collie_unique_id_t id = garbage_id();
  memset(&info, 0, sizeof(info));
  info.root.ss_family = AF_INET;
  info.version = COLLIE_VERSION_CODE + 100;
  collie_id_encode(&info, &id);
  collie_comm_t *comm = NULL;
  double t0 = now_s();
  collie_result_t r = collie_comm_init_rank(&comm, 2, id, 1);
  EXPECTF(r == COLLIE_ERR_INVALID_USAGE && now_s() - t0 < 1.0, "other version: %d", r);
  EXPECT(comm == NULL);
  EXPECT_CONTAINS(collie_get_last_error(NULL), "version");
}

static void test_strings(void) {
  const char *s[COLLIE_ERR_INTERNAL + 1];
  for (int r = COLLIE_SUCCESS; r <= COLLIE_ERR_INTERNAL; r++) {
    s[r] = collie_get_error_string((collie_result_t)r);
    EXPECTF(s[r] && *s[r], "collie_get_error_string(%d) is empty", r);
    for (int q = 0; q < r && s[r]; q++)
      EXPECTF(!s[q] || strcmp(s[q], s[r]) != 0, "codes %d and %d share the string '%s'", q, r, s[r]);
  }
  const char *unknown = collie_get_error_string((collie_result_t)4711);
  EXPECT(unknown && *unknown);

  int v = -1;
  EXPECT(collie_get_version(&v) == COLLIE_SUCCESS);
  EXPECT(v == COLLIE_VERSION_CODE);
  EXPECT(v == COLLIE_VERSION_MAJOR * 10000 + COLLIE_VERSION_MINOR * 100 + COLLIE_VERSION_PATCH);
  EXPECT(collie_get_version(NULL) == COLLIE_ERR_INVALID_ARGUMENT);

  static const struct {
    collie_datatype_t dt;
    size_t size;
    const char *name;
  } dts[] = {{COLLIE_INT8, 1, "int8"},         {COLLIE_UINT8, 1, "uint8"},       {COLLIE_INT32, 4, "int32"},
             {COLLIE_UINT32, 4, "uint32"},     {COLLIE_INT64, 8, "int64"},       {COLLIE_UINT64, 8, "uint64"},
             {COLLIE_FLOAT16, 2, "float16"},   {COLLIE_BFLOAT16, 2, "bfloat16"}, {COLLIE_FLOAT32, 4, "float32"},
             {COLLIE_FLOAT64, 8, "float64"}};
  EXPECT(sizeof(dts) / sizeof(dts[0]) == COLLIE_NUM_DATATYPES);
  for (size_t i = 0; i < sizeof(dts) / sizeof(dts[0]); i++) {
    EXPECTF(collie_datatype_size(dts[i].dt) == dts[i].size, "size of %s", dts[i].name);
    EXPECT_STR(collie_datatype_name(dts[i].dt), dts[i].name);
  }
  EXPECT(collie_datatype_size(COLLIE_NUM_DATATYPES) == 0);
  EXPECT(collie_datatype_size((collie_datatype_t)-1) == 0);
  EXPECT_STR(collie_datatype_name(COLLIE_NUM_DATATYPES), "invalid");
  EXPECT_STR(collie_datatype_name((collie_datatype_t)-1), "invalid");
  static const char *ops[] = {"sum", "prod", "max", "min", "avg"};
  for (int op = 0; op < COLLIE_NUM_OPS; op++) EXPECT_STR(collie_redop_name((collie_redop_t)op), ops[op]);
  EXPECT_STR(collie_redop_name(COLLIE_NUM_OPS), "invalid");
}

/* The thread's last error is the thread's: another thread's failure does not replace it. */
static void *fail_in_thread(void *arg) {
  (void)arg;
  collie_comm_t *comm;
  collie_comm_init_rank(&comm, 2, garbage_id(), 0);
  return NULL;
}

static void test_last_error_per_thread(collie_unique_id_t id) {
  collie_comm_t *comm;
  EXPECT(collie_comm_init_rank(&comm, 3, id, 5) == COLLIE_ERR_INVALID_ARGUMENT);
  char mine[1024];
  snprintf(mine, sizeof(mine), "%s", collie_get_last_error(NULL));
  pthread_t t;
  pthread_create(&t, NULL, fail_in_thread, NULL);
  pthread_join(t, NULL);
  EXPECT_STR(collie_get_last_error(NULL), mine);
}

/* The longest connect timeout a config can give works: the set-up waits that add
 * COLLIE_SETUP_GRACE_MS to it overflowed an int, and 2 ranks failed at once with "rank 1
 * did not answer in time". */
static collie_unique_id_t long_id;
static collie_result_t long_res[2];
static char long_err[2][1024];
static void *init_long_timeout(void *arg) {
  const int rank = (int)(intptr_t)arg;
  collie_config_t cfg = COLLIE_CONFIG_INIT;
  cfg.connect_timeout_ms = INT32_MAX;
  collie_comm_t *comm = NULL;
  long_res[rank] = collie_comm_init_rank_config(&comm, 2, long_id, rank, &cfg);
  snprintf(long_err[rank], sizeof(long_err[rank]), "%s", long_res[rank] ? collie_get_last_error(NULL) : "");
  if (comm) collie_comm_destroy(comm);
  return NULL;
}

static void test_longest_connect_timeout(void) {
  EXPECT(collie_get_unique_id(&long_id) == COLLIE_SUCCESS);
  pthread_t t[2];
  for (intptr_t r = 0; r < 2; r++) pthread_create(&t[r], NULL, init_long_timeout, (void *)r);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < 2; r++)
    EXPECTF(long_res[r] == COLLIE_SUCCESS, "rank %d with connect_timeout_ms=INT32_MAX: %s", r, long_err[r]);
}

/* collie_mem_alloc / collie_mem_free: usable memory, clear errors for misuse. */
static void test_mem(void) {
  void *p = (void *)1;
  EXPECT(collie_mem_alloc(NULL, 64) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT(collie_mem_alloc(&p, 0) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT(p == NULL);
  EXPECT(strstr(collie_get_last_error(NULL), "size is 0") != NULL);
  EXPECT(collie_mem_alloc(&p, (size_t)-1) == COLLIE_ERR_INVALID_ARGUMENT);
  /* More than the machine's memory and swap: refused at once. It was granted (the memory
   * file reserves nothing), and writing it would have killed the process later. */
  EXPECT(collie_mem_alloc(&p, (size_t)1 << 46) == COLLIE_ERR_INVALID_ARGUMENT); /* 64 TiB */
  EXPECT(p == NULL);
  EXPECT(strstr(collie_get_last_error(NULL), "more than this machine's memory and swap") != NULL);
  EXPECT(collie_mem_alloc(&p, 100000) == COLLIE_SUCCESS);
  EXPECT(p != NULL && ((uintptr_t)p & 4095) == 0); /* page aligned */
  memset(p, 0xab, 100000);
  EXPECT(((unsigned char *)p)[99999] == 0xab);
  void *q;
  EXPECT(collie_mem_alloc(&q, 1) == COLLIE_SUCCESS);
  EXPECT(q != p);
  char stack;
  EXPECT(collie_mem_free(&stack) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT(strstr(collie_get_last_error(NULL), "not returned by collie_mem_alloc") != NULL);
  EXPECT(collie_mem_free((char *)p + 8) == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT(collie_mem_free(p) == COLLIE_SUCCESS);
  EXPECT(collie_mem_free(p) == COLLIE_ERR_INVALID_ARGUMENT); /* twice */
  EXPECT(collie_mem_free(q) == COLLIE_SUCCESS);
  EXPECT(collie_mem_free(NULL) == COLLIE_SUCCESS);
}

int main(void) {
  unsetenv("COLLIE_EXEC_TIMEOUT");
  /* A real id for the argument checks, so that only the argument under test is wrong. */
  collie_unique_id_t id;
  collie_result_t r = collie_get_unique_id(&id);
  EXPECTF(r == COLLIE_SUCCESS, "collie_get_unique_id: %s", collie_get_last_error(NULL));
  collie_id_info_t info;
  EXPECT(collie_id_decode(&id, &info) == 0);
  test_garbage_id();
  test_bad_arguments(id);
  test_other_version();
  test_strings();
  test_last_error_per_thread(id);
  test_mem();
  test_longest_connect_timeout();
  return unit_summary("test_core_api_errors");
}
