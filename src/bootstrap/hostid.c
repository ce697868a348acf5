/* Host identity (see hostid.h). */
#include "bootstrap/hostid.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/unique_id.h"
#include "core/params.h"

void collie_host_id(char *out, size_t len) {
  const char *forced = collie_param_str(COLLIE_P_HOST_ID);
  if (forced) {
    snprintf(out, len, "id:%s", forced);
    return;
  }
  char buf[512] = "";
  size_t o = 0;
  char host[128] = "";
  gethostname(host, sizeof(host) - 1);
  o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s|", host);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    char boot[64] = "";
    if (fgets(boot, sizeof(boot), f)) o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s|", boot);
    fclose(f);
  }
  struct stat sb;
  if (stat("/dev/shm", &sb) == 0)
    o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%llu:%llu", (unsigned long long)sb.st_dev,
                          (unsigned long long)sb.st_ino);
  snprintf(out, len, "%.40s-%016llx", host, (unsigned long long)collie_hash64(buf, o, 7));
}
