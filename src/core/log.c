/* Log sink: a level and subsystem mask read once, lines written whole with one write. */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/params.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int level = -1;
static int subsys_mask = COLLIE_SUB_ALL;
static FILE *out_file;
static int file_opened;
static char host[64];

static const struct {
  const char *name;
  int bit;
} subsys_names[] = {{"INIT", COLLIE_SUB_INIT}, {"BOOTSTRAP", COLLIE_SUB_BOOTSTRAP},
                    {"TRANSPORT", COLLIE_SUB_TRANSPORT}, {"COLL", COLLIE_SUB_COLL},
                    {"TUNE", COLLIE_SUB_TUNE}, {"ALL", COLLIE_SUB_ALL}};

static int parse_subsys(const char *s) {
  if (!s || !*s) return COLLIE_SUB_ALL;
  int exclude = s[0] == '^';
  if (exclude) s++;
  int mask = 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", s);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    for (size_t i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
      if (strcasecmp(tok, subsys_names[i].name) == 0) mask |= subsys_names[i].bit;
  return exclude ? (COLLIE_SUB_ALL & ~mask) : mask;
}

int collie_log_check_subsys(char *msg, size_t len) {
  const char *s = collie_param_str(COLLIE_P_DEBUG_SUBSYS);
  if (!s || !*s) return 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", s[0] == '^' ? s + 1 : s);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    bool known = false;
    for (size_t i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
      if (strcasecmp(tok, subsys_names[i].name) == 0) known = true;
    if (!known) {
      snprintf(msg, len,
               "COLLIE_DEBUG_SUBSYS='%s' names an unknown subsystem '%s': use a comma list of INIT, BOOTSTRAP, "
               "TRANSPORT, COLL, TUNE or ALL, with a leading ^ to exclude them",
               s, tok);
      return -1;
    }
  }
  return 0;
}

static void init(void) {
  gethostname(host, sizeof(host) - 1);
  const char *l = collie_param_str(COLLIE_P_DEBUG);
  int lv = COLLIE_LOG_WARN;
  if (l) {
    if (!strcasecmp(l, "NONE")) lv = COLLIE_LOG_NONE;
    else if (!strcasecmp(l, "INFO")) lv = COLLIE_LOG_INFO;
    else if (!strcasecmp(l, "TRACE")) lv = COLLIE_LOG_TRACE;
  }
  subsys_mask = parse_subsys(collie_param_str(COLLIE_P_DEBUG_SUBSYS));
  atomic_store(&level, lv);
}

const char *collie_hostname(void) {
  pthread_once(&once, init);
  return host;
}

int collie_log_enabled(int lv, int subsys) {
  if (atomic_load_explicit(&level, memory_order_relaxed) < 0) pthread_once(&once, init);
  return lv <= atomic_load_explicit(&level, memory_order_relaxed) && (subsys & subsys_mask);
}

void collie_log_reload(void) {
  collie_params_reload();
  init();
}

static FILE *open_file(int rank) {
  const char *pat = collie_param_str(COLLIE_P_DEBUG_FILE);
  if (!pat) return stderr;
  char path[512];
  size_t o = 0;
  for (const char *p = pat; *p && o < sizeof(path) - 32; p++) {
    if (p[0] == '%' && p[1]) {
      p++;
      if (*p == 'h') o += snprintf(path + o, sizeof(path) - o, "%s", host);
      else if (*p == 'p') o += snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
      else if (*p == 'r') o += snprintf(path + o, sizeof(path) - o, "%d", rank);
      else path[o++] = *p;
    } else {
      path[o++] = *p;
    }
  }
  path[o] = 0;
  FILE *f = fopen(path, "a");
  return f ? f : stderr;
}

void collie_log(int lv, int subsys, int rank, const char *fmt, ...) {
  static const char *lvnames[] = {"NONE", "WARN", "INFO", "TRACE"};
  const char *sub = "INIT";
  for (size_t i = 0; i < 5; i++)
    if (subsys == subsys_names[i].bit) sub = subsys_names[i].name;
  char line[2048];
  int n = snprintf(line, sizeof(line), "%s:%d:%ld [%d] COLLIE %s %s ", host, (int)getpid(),
                   (long)syscall(SYS_gettid), rank, lvnames[lv], sub);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof(line)) n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof(line) - 1) n = sizeof(line) - 2;
  line[n++] = '\n';
  line[n] = 0;
  pthread_mutex_lock(&file_lock);
  if (!file_opened) {
    out_file = open_file(rank);
    file_opened = 1;
  }
  fputs(line, out_file);
  fflush(out_file);
  pthread_mutex_unlock(&file_lock);
}
