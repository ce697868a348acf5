/* -J FILE: the whole run as one JSON document, for scripts (scripts/perf-report reads it).
 * Written by rank 0 after the last row; the layout is documented in docs/perf.md. */
#include <errno.h>
#include <math.h>

#include "perf.h"

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

/* JSON has no NaN or infinity. */
static void json_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.6g", v);
  else fprintf(f, "null");
}

static void json_meas(FILE *f, const char *name, const perf_meas_t *m) {
  fprintf(f, "\"%s\": {\"time_us\": ", name);
  json_num(f, m->time_us);
  fprintf(f, ", \"algbw\": ");
  json_num(f, m->algbw);
  fprintf(f, ", \"busbw\": ");
  json_num(f, m->busbw);
  if (m->wrong >= 0) fprintf(f, ", \"wrong\": %lld}", m->wrong);
  else fprintf(f, ", \"wrong\": null}");
}

int perf_write_json(const char *path, const perf_info_t *in, const perf_row_t *rows, size_t nrows, long long wrong,
                    double avg_busbw) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  const perf_opts_t *o = in->opts;
  static const char *avg[] = {"rank0", "mean", "min", "max"};
  fprintf(f, "{\n  \"tool\": \"collie-perf\",\n  \"collective\": ");
  json_str(f, in->coll->name);
  fprintf(f, ",\n  \"program\": ");
  json_str(f, in->prog);
  fprintf(f, ",\n  \"version\": ");
  json_str(f, in->version);
  fprintf(f, ",\n  \"nranks\": %d,\n  \"hosts\": %d,\n  \"transport\": ", in->nranks, in->hosts);
  json_str(f, in->transport);
  fprintf(f, ",\n  \"algo\": ");
  json_str(f, in->algo);
  fprintf(f,
          ",\n  \"options\": {\"min_bytes\": %zu, \"max_bytes\": %zu, \"step_factor\": %g, \"step_bytes\": %zu, "
          "\"iters\": %d, \"warmup_iters\": %d, \"check_iters\": %d, \"agg_iters\": %d, \"blocking\": %s, "
          "\"average\": \"%s\", \"registered\": %s},\n",
          o->min_bytes, o->max_bytes, o->step_factor > 1 ? o->step_factor : 0, o->step_factor > 1 ? 0 : o->step_bytes,
          o->iters, o->warmup, o->check_iters, o->agg, o->nonblocking ? "false" : "true", avg[o->average],
          o->registered ? "true" : "false");
  fprintf(f, "  \"results\": [");
  for (size_t i = 0; i < nrows; i++) {
    const perf_row_t *r = &rows[i];
    fprintf(f, "%s\n    {\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", \"root\": %d, ",
            i ? "," : "", r->size, r->count, collie_datatype_name(r->dt), perf_op_name(r->op), r->root);
    json_meas(f, "out_of_place", &r->m[0]);
    fprintf(f, ", ");
    json_meas(f, "in_place", &r->m[1]);
    fprintf(f, "}");
  }
  fprintf(f, "\n  ],\n  \"wrong\": %lld,\n  \"ok\": %s,\n  \"avg_busbw\": ", wrong, wrong ? "false" : "true");
  json_num(f, avg_busbw);
  fprintf(f, "\n}\n");
  int err = ferror(f);
  if (fclose(f) || err) {
    if (!errno) errno = EIO;
    return -1;
  }
  return 0;
}
