/* Logging: COLLIE_DEBUG picks the level, COLLIE_DEBUG_SUBSYS the subsystems,
 * COLLIE_DEBUG_FILE the destination. Every line names host, pid, rank and subsystem. */
#ifndef COLLIE_LOG_H
#define COLLIE_LOG_H

#include <stddef.h>

enum { COLLIE_LOG_NONE = 0, COLLIE_LOG_WARN = 1, COLLIE_LOG_INFO = 2, COLLIE_LOG_TRACE = 3 };
enum {
  COLLIE_SUB_INIT = 1,
  COLLIE_SUB_BOOTSTRAP = 2,
  COLLIE_SUB_TRANSPORT = 4,
  COLLIE_SUB_COLL = 8,
  COLLIE_SUB_TUNE = 16,
  COLLIE_SUB_ALL = 31
};

int collie_log_enabled(int level, int subsys);
void collie_log(int level, int subsys, int rank, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void collie_log_reload(void); /* tests: re-read COLLIE_DEBUG* */
/* COLLIE_DEBUG_SUBSYS names only known subsystems: 0, or -1 with a sentence in msg (an
 * unknown name, silently dropped, left a user without the logs they asked for). */
int collie_log_check_subsys(char *msg, size_t len);
const char *collie_hostname(void);

#define COLLIE_LOG_(lvl, sub, rank, ...)                                   \
  do {                                                                     \
    if (collie_log_enabled(lvl, sub)) collie_log(lvl, sub, rank, __VA_ARGS__); \
  } while (0)
#define COLLIE_WARN(sub, rank, ...) COLLIE_LOG_(COLLIE_LOG_WARN, sub, rank, __VA_ARGS__)
#define COLLIE_INFO(sub, rank, ...) COLLIE_LOG_(COLLIE_LOG_INFO, sub, rank, __VA_ARGS__)
#define COLLIE_TRACE(sub, rank, ...) COLLIE_LOG_(COLLIE_LOG_TRACE, sub, rank, __VA_ARGS__)

#endif
