/* What rank 0 prints. The default layout is nccl-tests' column for column, so that the
 * scripts people already have for nccl-tests logs (grep the row, awk '{print $12}') work
 * on collie's; --format hccl prints hccl-test's four columns, --format csv a plain CSV. */
#include <string.h>

#include "perf.h"

const char *perf_op_name(int op) { return op == PERF_OP_NONE ? "none" : collie_redop_name((collie_redop_t)op); }

static const char *avg_name(perf_avg_t a) {
  static const char *names[] = {"rank0", "mean", "min", "max"};
  return names[a];
}

/* Lines every layout but CSV starts with: the job, as the first lines of a log should. */
static void print_job(FILE *f, const perf_info_t *in) {
  const perf_opts_t *o = in->opts;
  fprintf(f, "# collie %s: nranks %d hosts %d version %s transport %s algo %s\n", in->prog, in->nranks, in->hosts,
          in->version, in->transport, in->algo);
  if (o->step_factor > 1)
    fprintf(f, "# minBytes %zu maxBytes %zu step: %g(factor)", o->min_bytes, o->max_bytes, o->step_factor);
  else
    fprintf(f, "# minBytes %zu maxBytes %zu step: %zu(bytes)", o->min_bytes, o->max_bytes, o->step_bytes);
  fprintf(f, " warmup iters: %d iters: %d agg iters: %d validation: %d blocking: %d average: %s buffers: %s\n",
          o->warmup, o->iters, o->agg, o->check_iters, !o->nonblocking, avg_name(o->average),
          o->registered ? "collie_mem_alloc" : "malloc");
}

void perf_print_header(FILE *f, const perf_info_t *in) {
  const perf_opts_t *o = in->opts;
  if (o->format == PERF_FMT_CSV) {
    fprintf(f, "collective,nranks,size,count,type,redop,root,time_us,algbw_gbs,busbw_gbs,wrong,"
               "ip_time_us,ip_algbw_gbs,ip_busbw_gbs,ip_wrong\n");
    return;
  }
  print_job(f, in);
  if (o->format == PERF_FMT_HCCL) {
    fprintf(f, "# the minbytes is %zu, maxbytes is %zu, iters is %d, warmup_iters is %d\n", o->min_bytes,
            o->max_bytes, o->iters, o->warmup);
    fprintf(f, "%-20s %-16s %-22s %s\n", "data_size", "avg_time(us)", "alg_bandwidth(GB/s)", "check_result");
    return;
  }
  fprintf(f, "#\n# Using ranks\n");
  for (int r = 0; r < in->nranks; r++)
    fprintf(f, "#  Rank %2d Pid %6d on %10s\n", r, (int)in->ranks[r].pid, in->ranks[r].host);
  fprintf(f, "#\n");
  /* nccl-tests' three heading lines, verbatim, so that the columns line up the same. */
  fprintf(f, "#                                                              out-of-place                       in-place\n"
             "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n");
}

/* nccl-tests' time column: fewer decimals as the number grows, always 7 wide. */
static void fmt_time(char *buf, size_t len, double us) {
  snprintf(buf, len, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
}

static void print_csv_meas(FILE *f, const perf_meas_t *m) {
  fprintf(f, ",%.3f,%.6f,%.6f,", m->time_us, m->algbw, m->busbw);
  if (m->wrong >= 0) fprintf(f, "%lld", m->wrong);
}

void perf_print_row(FILE *f, const perf_info_t *in, const perf_row_t *row) {
  const perf_opts_t *o = in->opts;
  const char *type = collie_datatype_name(row->dt), *op = perf_op_name(row->op);
  if (o->format == PERF_FMT_CSV) {
    fprintf(f, "%s,%d,%zu,%zu,%s,%s,%d", in->coll->name, in->nranks, row->size, row->count, type, op, row->root);
    print_csv_meas(f, &row->m[0]);
    print_csv_meas(f, &row->m[1]);
    fprintf(f, "\n");
  } else if (o->format == PERF_FMT_HCCL) {
    /* hccl-test has one placement and no type column: say which table follows when
     * several datatypes, ops or roots are measured. */
    static int last_dt = -2, last_op = -2, last_root = -2;
    int many = o->ndtypes > 1 || (in->coll->reduces && o->nops > 1) || (in->coll->rooted && o->root == PERF_ROOT_ALL);
    if (many && ((int)row->dt != last_dt || row->op != last_op || row->root != last_root))
      fprintf(f, "# type %s redop %s root %d\n", type, op, row->root);
    last_dt = (int)row->dt, last_op = row->op, last_root = row->root;
    long long w = row->m[0].wrong;
    if (w >= 0 && row->m[1].wrong > 0) w += row->m[1].wrong;
    fprintf(f, "%-20zu %-16.2f %-22.5f %s\n", row->size, row->m[0].time_us, row->m[0].algbw,
            w < 0 ? "NULL" : w ? "failed" : "success");
  } else {
    fprintf(f, "%12zu  %12zu  %8s  %6s  %6d", row->size, row->count, type, op, row->root);
    for (int ip = 0; ip < 2; ip++) {
      const perf_meas_t *m = &row->m[ip];
      char t[32], w[32];
      fmt_time(t, sizeof t, m->time_us);
      if (m->wrong >= 0) snprintf(w, sizeof w, "%lld", m->wrong);
      else snprintf(w, sizeof w, "N/A");
      fprintf(f, "  %7s  %6.2f  %6.2f  %5s", t, m->algbw, m->busbw, w);
    }
    fprintf(f, "\n");
  }
  fflush(f); /* a row is worth seeing as soon as it is measured */
}

void perf_print_footer(FILE *f, const perf_info_t *in, long long wrong, double avg_busbw) {
  if (in->opts->format == PERF_FMT_CSV) return;
  fprintf(f, "# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
  fprintf(f, "# Avg bus bandwidth    : %g \n#\n", avg_busbw);
  fflush(f);
}
