/* The tuning table: built-in defaults and the tuning file (COLLIE_TUNING_FILE, written by
 * collie-tune). The file is text, one `key value` per line; `#` starts a comment. Keys:
 *
 *   shm.alpha_us  shm.beta_us_per_byte  tcp.alpha_us  tcp.beta_us_per_byte
 *   gamma_us_per_byte  delta_us_per_byte  oversub.alpha_scale
 *   <collective>.<algorithm>.alpha_scale | beta_scale | gamma_scale   (e.g. allreduce.ring.alpha_scale 1.3)
 *
 * Keys the file does not name keep their defaults. Anything else (an unknown key, a value
 * that is not a non-negative number, extra words) is an error naming the line. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tune/tune.h"

/* Measured on a 2-core AMD EPYC VM (Debian 12, shared and noisy) with collie-tune and the
 * perf tools; docs/tuning.md has the commands and the spread. shm, gamma and delta: the
 * quiet machine, rounded up; tcp: between loopback on this VM (5 us, 8 GB/s quiet) and
 * the networks between hosts that the tcp figures are mostly used for. */
#define DEFAULT_SHM_ALPHA_US 0.6
#define DEFAULT_SHM_BETA (1.0 / 10000.0) /* 10 GB/s */
#define DEFAULT_TCP_ALPHA_US 20.0
#define DEFAULT_TCP_BETA (1.0 / 2500.0)  /* 2.5 GB/s */
#define DEFAULT_GAMMA (1.0 / 15000.0)    /* 15 GB/s */
#define DEFAULT_DELTA (1.0 / 12000.0)    /* 12 GB/s */
#define DEFAULT_OVERSUB_ALPHA_SCALE 2.0

const char *collie_link_name(collie_link_t l) { return l == COLLIE_LINK_TCP ? "tcp" : "shm"; }

void collie_tune_table_default(collie_tune_table_t *t) {
  memset(t, 0, sizeof(*t));
  t->link[COLLIE_LINK_SHM].alpha_us = DEFAULT_SHM_ALPHA_US;
  t->link[COLLIE_LINK_SHM].beta_us_per_byte = DEFAULT_SHM_BETA;
  t->link[COLLIE_LINK_TCP].alpha_us = DEFAULT_TCP_ALPHA_US;
  t->link[COLLIE_LINK_TCP].beta_us_per_byte = DEFAULT_TCP_BETA;
  t->gamma_us_per_byte = DEFAULT_GAMMA;
  t->delta_us_per_byte = DEFAULT_DELTA;
  t->oversub_alpha_scale = DEFAULT_OVERSUB_ALPHA_SCALE;
  snprintf(t->source, sizeof(t->source), "default");
}

static int coll_by_name(const char *name, size_t len) {
  for (int c = COLLIE_COLL_ALLREDUCE; c < COLLIE_NUM_COLLS; c++) {
    const char *cn = collie_coll_name((collie_coll_t)c);
    if (strlen(cn) == len && !strncmp(cn, name, len)) return c;
  }
  return -1;
}

static void algo_names(collie_coll_t coll, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (const collie_algo_t *a = collie_algos; a->name; a++)
    if (a->coll == coll && o < len)
      o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", a->name);
}

/* key -> where its value goes; -1 with err filled when the key is unknown. */
static int apply(collie_tune_table_t *t, const char *key, double v, char *err, size_t errlen) {
  static const struct {
    const char *key;
    size_t off;
  } plain[] = {
      {"shm.alpha_us", offsetof(collie_tune_table_t, link[COLLIE_LINK_SHM].alpha_us)},
      {"shm.beta_us_per_byte", offsetof(collie_tune_table_t, link[COLLIE_LINK_SHM].beta_us_per_byte)},
      {"tcp.alpha_us", offsetof(collie_tune_table_t, link[COLLIE_LINK_TCP].alpha_us)},
      {"tcp.beta_us_per_byte", offsetof(collie_tune_table_t, link[COLLIE_LINK_TCP].beta_us_per_byte)},
      {"gamma_us_per_byte", offsetof(collie_tune_table_t, gamma_us_per_byte)},
      {"delta_us_per_byte", offsetof(collie_tune_table_t, delta_us_per_byte)},
      {"oversub.alpha_scale", offsetof(collie_tune_table_t, oversub_alpha_scale)},
  };
  for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
    if (!strcmp(key, plain[i].key)) {
      *(double *)((char *)t + plain[i].off) = v;
      return 0;
    }
  /* <collective>.<algorithm>.<alpha|beta|gamma>_scale */
  const char *d1 = strchr(key, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  if (!d1 || !d2 || strchr(d2 + 1, '.')) {
    snprintf(err, errlen,
             "unknown key '%s'; valid keys: shm.alpha_us, shm.beta_us_per_byte, tcp.alpha_us, "
             "tcp.beta_us_per_byte, gamma_us_per_byte, delta_us_per_byte, oversub.alpha_scale, "
             "<collective>.<algorithm>.alpha_scale|beta_scale|gamma_scale",
             key);
    return -1;
  }
  int coll = coll_by_name(key, (size_t)(d1 - key));
  if (coll < 0) {
    snprintf(err, errlen,
             "unknown collective '%.*s' in '%s'; valid: allreduce, broadcast, reduce, allgather, allgatherv, "
             "reduce_scatter, reduce_scatterv, alltoall, alltoallv, scatter, gather, barrier",
             (int)(d1 - key), key, key);
    return -1;
  }
  char algo[32];
  size_t alen = (size_t)(d2 - d1 - 1);
  if (alen >= sizeof(algo)) alen = sizeof(algo) - 1;
  memcpy(algo, d1 + 1, alen);
  algo[alen] = 0;
  if (!collie_algo_find((collie_coll_t)coll, algo)) {
    char names[256];
    algo_names((collie_coll_t)coll, names, sizeof(names));
    snprintf(err, errlen, "'%s' is not an algorithm of %s; valid: %s", algo, collie_coll_name((collie_coll_t)coll),
             names);
    return -1;
  }
  const char *what = d2 + 1;
  int which = !strcmp(what, "alpha_scale") ? 0 : !strcmp(what, "beta_scale") ? 1 : !strcmp(what, "gamma_scale") ? 2 : -1;
  if (which < 0) {
    snprintf(err, errlen, "unknown key '%s': after %s.%s comes alpha_scale, beta_scale or gamma_scale", key,
             collie_coll_name((collie_coll_t)coll), algo);
    return -1;
  }
  int i;
  for (i = 0; i < t->noverrides; i++)
    if (t->ov[i].coll == coll && !strcmp(t->ov[i].algo, algo)) break;
  if (i == t->noverrides) {
    if (i == COLLIE_TUNE_OVERRIDES_MAX) {
      snprintf(err, errlen, "more than %d (collective, algorithm) overrides", COLLIE_TUNE_OVERRIDES_MAX);
      return -1;
    }
    t->noverrides++;
    t->ov[i].coll = coll;
    snprintf(t->ov[i].algo, sizeof(t->ov[i].algo), "%s", algo);
    t->ov[i].alpha_scale = t->ov[i].beta_scale = t->ov[i].gamma_scale = 1.0;
  }
  if (which == 0) t->ov[i].alpha_scale = v;
  else if (which == 1) t->ov[i].beta_scale = v;
  else t->ov[i].gamma_scale = v;
  return 0;
}

int collie_tune_table_parse(const char *text, const char *name, collie_tune_table_t *t, char *err, size_t errlen) {
  int lineno = 0;
  for (const char *p = text; p && *p;) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    lineno++;
    char line[1024], shown[96];
    if (len >= sizeof(line)) {
      snprintf(err, errlen, "%s line %d: the line is longer than %zu characters", name, lineno, sizeof(line) - 1);
      return -1;
    }
    memcpy(line, p, len);
    line[len] = 0;
    p = eol ? eol + 1 : NULL;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    /* What the error shows: the line without its comment and surrounding blanks. */
    char *s = line;
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
    if (!*s) continue;
    snprintf(shown, sizeof(shown), "%.*s", (int)sizeof(shown) - 1, s);
    char *save, *key = strtok_r(s, " \t", &save), *val = strtok_r(NULL, " \t", &save),
                *extra = strtok_r(NULL, " \t", &save);
    if (!val) {
      snprintf(err, errlen, "%s line %d: '%s' has no value; each line is 'key value', e.g. 'shm.alpha_us 1.5'", name,
               lineno, shown);
      return -1;
    }
    if (extra) {
      snprintf(err, errlen, "%s line %d: '%s' has more than a key and a value ('%s' is extra)", name, lineno, shown,
               extra);
      return -1;
    }
    errno = 0;
    char *end;
    double v = strtod(val, &end);
    if (errno || end == val || *end || !isfinite(v) || v < 0) {
      snprintf(err, errlen, "%s line %d: '%s': the value '%s' is not a non-negative number", name, lineno, shown, val);
      return -1;
    }
    char why[400];
    if (apply(t, key, v, why, sizeof(why)) != 0) {
      snprintf(err, errlen, "%s line %d: %s", name, lineno, why);
      return -1;
    }
  }
  return 0;
}

#define TUNING_FILE_MAX (1 << 20)

int collie_tune_table_load(const char *path, collie_tune_table_t *t, char *err, size_t errlen) {
  collie_tune_table_default(t);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "cannot open the tuning file %s: %s", path, strerror(errno));
    return -1;
  }
  char *text = malloc(TUNING_FILE_MAX + 1);
  if (!text) {
    fclose(f);
    snprintf(err, errlen, "out of memory reading the tuning file %s: " COLLIE_MEMORY_ADVICE, path);
    return -2;
  }
  size_t n = fread(text, 1, TUNING_FILE_MAX + 1, f);
  int rerr = ferror(f);
  fclose(f);
  if (rerr || n > TUNING_FILE_MAX) {
    free(text);
    snprintf(err, errlen, "cannot read the tuning file %s: %s", path, rerr ? "read error" : "larger than 1 MiB");
    return -1;
  }
  text[n] = 0;
  if (strlen(text) != n) {
    free(text);
    snprintf(err, errlen, "the tuning file %s is not text (it contains a NUL byte)", path);
    return -1;
  }
  int r = collie_tune_table_parse(text, path, t, err, errlen);
  free(text);
  if (r == 0) snprintf(t->source, sizeof(t->source), "%s", path);
  return r;
}

void collie_tune_table_write(FILE *f, const collie_tune_table_t *t) {
  for (int l = 0; l < COLLIE_NUM_LINKS; l++) {
    fprintf(f, "%s.alpha_us %.4g\n", collie_link_name((collie_link_t)l), t->link[l].alpha_us);
    fprintf(f, "%s.beta_us_per_byte %.6g\n", collie_link_name((collie_link_t)l), t->link[l].beta_us_per_byte);
  }
  fprintf(f, "gamma_us_per_byte %.6g\n", t->gamma_us_per_byte);
  fprintf(f, "delta_us_per_byte %.6g\n", t->delta_us_per_byte);
  fprintf(f, "oversub.alpha_scale %.4g\n", t->oversub_alpha_scale);
  for (int i = 0; i < t->noverrides; i++) {
    const char *c = collie_coll_name((collie_coll_t)t->ov[i].coll);
    if (t->ov[i].alpha_scale != 1.0) fprintf(f, "%s.%s.alpha_scale %.4g\n", c, t->ov[i].algo, t->ov[i].alpha_scale);
    if (t->ov[i].beta_scale != 1.0) fprintf(f, "%s.%s.beta_scale %.4g\n", c, t->ov[i].algo, t->ov[i].beta_scale);
    if (t->ov[i].gamma_scale != 1.0) fprintf(f, "%s.%s.gamma_scale %.4g\n", c, t->ov[i].algo, t->ov[i].gamma_scale);
  }
}

/* 1/beta in GB/s (beta in us per byte: 1e-3 / beta GB/s). */
static double gbps(double us_per_byte) { return us_per_byte > 0 ? 1e-3 / us_per_byte : INFINITY; }

void collie_tune_table_describe(const collie_tune_table_t *t, char *buf, size_t len) {
  size_t o = 0;
#define ADD(...)                                                          \
  do {                                                                    \
    if (o < len) o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__);    \
  } while (0)
  for (int l = 0; l < COLLIE_NUM_LINKS; l++)
    ADD("%s alpha %.3g us beta %.3g us/B (%.3g GB/s); ", collie_link_name((collie_link_t)l), t->link[l].alpha_us,
        t->link[l].beta_us_per_byte, gbps(t->link[l].beta_us_per_byte));
  ADD("gamma %.3g us/B (%.3g GB/s); delta %.3g us/B (%.3g GB/s); oversub.alpha_scale %.3g", t->gamma_us_per_byte,
      gbps(t->gamma_us_per_byte), t->delta_us_per_byte, gbps(t->delta_us_per_byte), t->oversub_alpha_scale);
  for (int i = 0; i < t->noverrides; i++)
    ADD("%s%s.%s x(alpha %.3g, beta %.3g, gamma %.3g)", i ? ", " : "; overrides ",
        collie_coll_name((collie_coll_t)t->ov[i].coll), t->ov[i].algo, t->ov[i].alpha_scale, t->ov[i].beta_scale,
        t->ov[i].gamma_scale);
  ADD("; source %s", t->source);
#undef ADD
}
