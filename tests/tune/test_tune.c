/* The tuning part of collie (src/tune/): the tuning-file parser, the cost model's choice
 * over a fake table, the transport and oversubscription a communicator weighs, COLLIE_PROTO
 * validation, and COLLIE_TUNING_FILE at communicator creation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/core_unit.h"
#include "algo/native/shm_native.h"
#include "transport/shm.h"
#include "collie.h"
#include "core/comm.h"
#include "core/log.h"
#include "core/params.h"
#include "tune/tune.h"

static char tmpdir[256];

static bool near(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b)) + 1e-15; }

static const char *write_file(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  fputs(text, f);
  fclose(f);
  return path;
}

/* ---- the parser ------------------------------------------------------------------------ */

static void test_parse_good(void) {
  collie_tune_table_t t;
  collie_tune_table_default(&t);
  EXPECT_STR(t.source, "default");
  char err[512] = "";
  const char *text =
      "# a comment line\n"
      "\n"
      "shm.alpha_us 1.25\n"
      "  shm.beta_us_per_byte\t0.0002   # trailing comment\n"
      "tcp.alpha_us 31\r\n"
      "tcp.beta_us_per_byte 4e-4\n"
      "gamma_us_per_byte 0.0001\n"
      "delta_us_per_byte 0.00005\n"
      "oversub.alpha_scale 0.75\n"
      "allreduce.ring.alpha_scale 1.3\n"
      "allreduce.ring.gamma_scale 0.5\n"
      "broadcast.chain.beta_scale 2\n"
      "shm.alpha_us 1.5\n"; /* a later line wins */
  int rc = collie_tune_table_parse(text, "good", &t, err, sizeof err);
  EXPECTF(rc == 0, "parse failed: %s", err);
  EXPECT(near(t.link[COLLIE_LINK_SHM].alpha_us, 1.5));
  EXPECT(near(t.link[COLLIE_LINK_SHM].beta_us_per_byte, 0.0002));
  EXPECT(near(t.link[COLLIE_LINK_TCP].alpha_us, 31));
  EXPECT(near(t.link[COLLIE_LINK_TCP].beta_us_per_byte, 4e-4));
  EXPECT(near(t.gamma_us_per_byte, 1e-4));
  EXPECT(near(t.delta_us_per_byte, 5e-5));
  EXPECT(near(t.oversub_alpha_scale, 0.75));
  EXPECT(t.noverrides == 2);
  EXPECT(t.ov[0].coll == COLLIE_COLL_ALLREDUCE && !strcmp(t.ov[0].algo, "ring"));
  EXPECT(near(t.ov[0].alpha_scale, 1.3) && near(t.ov[0].beta_scale, 1) && near(t.ov[0].gamma_scale, 0.5));
  EXPECT(t.ov[1].coll == COLLIE_COLL_BROADCAST && !strcmp(t.ov[1].algo, "chain") && near(t.ov[1].beta_scale, 2));

  /* What collie-tune writes reads back the same. */
  char path[512];
  snprintf(path, sizeof path, "%s/roundtrip.tune", tmpdir);
  FILE *f = fopen(path, "w");
  EXPECT(f != NULL);
  if (f) {
    fputs("# header\n", f);
    collie_tune_table_write(f, &t);
    fclose(f);
    collie_tune_table_t u;
    rc = collie_tune_table_load(path, &u, err, sizeof err);
    EXPECTF(rc == 0, "load failed: %s", err);
    EXPECT_STR(u.source, path);
    EXPECT(fabs(u.link[COLLIE_LINK_SHM].alpha_us - 1.5) < 1e-3);
    EXPECT(fabs(u.link[COLLIE_LINK_TCP].beta_us_per_byte - 4e-4) < 1e-9);
    EXPECT(u.noverrides == 2 && fabs(u.ov[0].alpha_scale - 1.3) < 1e-3 && fabs(u.ov[0].gamma_scale - 0.5) < 1e-3);
  }
}

static void test_parse_missing_keys(void) {
  collie_tune_table_t def, t;
  collie_tune_table_default(&def);
  char err[512] = "";
  const char *path = write_file("partial.tune", "# only two figures\nshm.alpha_us 3\ngamma_us_per_byte 0.001\n");
  int rc = collie_tune_table_load(path, &t, err, sizeof err);
  EXPECTF(rc == 0, "load failed: %s", err);
  EXPECT(near(t.link[COLLIE_LINK_SHM].alpha_us, 3));
  EXPECT(near(t.gamma_us_per_byte, 0.001));
  EXPECT(near(t.link[COLLIE_LINK_SHM].beta_us_per_byte, def.link[COLLIE_LINK_SHM].beta_us_per_byte));
  EXPECT(near(t.link[COLLIE_LINK_TCP].alpha_us, def.link[COLLIE_LINK_TCP].alpha_us));
  EXPECT(near(t.link[COLLIE_LINK_TCP].beta_us_per_byte, def.link[COLLIE_LINK_TCP].beta_us_per_byte));
  EXPECT(near(t.oversub_alpha_scale, def.oversub_alpha_scale));
  EXPECT(t.noverrides == 0);
  EXPECT_STR(t.source, path);
  /* An empty file is all defaults. */
  path = write_file("empty.tune", "");
  EXPECT(collie_tune_table_load(path, &t, err, sizeof err) == 0);
  EXPECT(near(t.link[COLLIE_LINK_TCP].alpha_us, def.link[COLLIE_LINK_TCP].alpha_us));
  /* Defaults are in the ranges measured on the 2-core VM (docs/tuning.md). */
  EXPECT(def.link[COLLIE_LINK_SHM].alpha_us > 0.2 && def.link[COLLIE_LINK_SHM].alpha_us < 10);
  EXPECT(def.link[COLLIE_LINK_TCP].alpha_us > def.link[COLLIE_LINK_SHM].alpha_us);
  EXPECT(def.link[COLLIE_LINK_TCP].beta_us_per_byte >= def.link[COLLIE_LINK_SHM].beta_us_per_byte);
  EXPECT(def.gamma_us_per_byte > 0 && def.delta_us_per_byte > 0);
}

static void test_parse_malformed(void) {
  static const struct {
    const char *text, *want1, *want2;
  } bad[] = {
      {"shm.alpha_us 1\nshm.alpha_us\n", "line 2", "has no value"},
      {"# c\n\nshm.alpha_us fast\n", "line 3", "'fast' is not a non-negative number"},
      {"shm.alpha_us -1\n", "line 1", "not a non-negative number"},
      {"shm.alpha_us nan\n", "line 1", "not a non-negative number"},
      {"shm.alpha_us 1.5us\n", "line 1", "not a non-negative number"},
      {"shm.alpha_us 1 2\n", "line 1", "'2' is extra"},
      {"shm.latency 1\n", "line 1", "unknown key 'shm.latency'"},
      {"bogus 1\n", "line 1", "valid keys: shm.alpha_us"},
      {"tcp.alpha_us 3\nallreduce.nosuch.alpha_scale 2\n", "line 2", "'nosuch' is not an algorithm of allreduce; valid: ring, tree, mesh, rd, hd"},
      {"allreduction.ring.alpha_scale 2\n", "line 1", "unknown collective 'allreduction'"},
      {"allreduce.ring.delta_scale 2\n", "line 1", "alpha_scale, beta_scale or gamma_scale"},
      {"allreduce.ring.alpha_scale.x 2\n", "line 1", "unknown key"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    collie_tune_table_t t;
    collie_tune_table_default(&t);
    char err[512] = "";
    int rc = collie_tune_table_parse(bad[i].text, "bad.tune", &t, err, sizeof err);
    EXPECTF(rc == -1, "'%s' was accepted", bad[i].text);
    EXPECT_CONTAINS(err, "bad.tune");
    EXPECT_CONTAINS(err, bad[i].want1);
    EXPECT_CONTAINS(err, bad[i].want2);
  }
  char err[512] = "";
  collie_tune_table_t t;
  char missing[300];
  snprintf(missing, sizeof missing, "%s/does-not-exist.tune", tmpdir);
  EXPECT(collie_tune_table_load(missing, &t, err, sizeof err) == -1);
  EXPECT_CONTAINS(err, missing);
  EXPECT_CONTAINS(err, "No such file");
}

/* ---- the choice ------------------------------------------------------------------------ */

/* A fake machine: cheap messages, 5 GB/s links, 10 GB/s reduction. */
static void fake_table(collie_tune_table_t *t) {
  collie_tune_table_default(t);
  t->link[COLLIE_LINK_SHM].alpha_us = 1.0;
  t->link[COLLIE_LINK_SHM].beta_us_per_byte = 2e-4;
  t->link[COLLIE_LINK_TCP].alpha_us = 30.0;
  t->link[COLLIE_LINK_TCP].beta_us_per_byte = 4e-4;
  t->gamma_us_per_byte = 1e-4;
  t->delta_us_per_byte = 1e-4;
  t->oversub_alpha_scale = 1.0;
  snprintf(t->source, sizeof t->source, "fake");
}

static const char *first(const collie_tune_ctx_t *ctx, const collie_algo_rules_t *rules, collie_coll_t coll,
                         size_t bytes, bool *forced) {
  const collie_algo_t *out[16];
  double est[16];
  bool f;
  int n = collie_tune_rank(rules, ctx, coll, bytes, out, est, 16, forced ? forced : &f);
  for (int i = 1; i < n; i++) EXPECTF(est[i] >= est[i - 1] || (forced && *forced && i == 1), "not sorted at %d", i);
  return n ? out[0]->name : "(none)";
}

static void test_choice(void) {
  collie_tune_table_t t;
  fake_table(&t);
  collie_algo_rules_t none = {0};
  /* no shared area: schedules only */
  collie_tune_ctx_t ctx = {&t, COLLIE_LINK_SHM, 3, 1.0, 64 << 10, 0, false, 1, 3, false};
  /* Ring wins at large sizes, recursive doubling or mesh at small ones. */
  for (int p = 3; p <= 7; p += 2) {
    ctx.nranks = p;
    const char *s = first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 8, NULL);
    EXPECTF(!strcmp(s, "rd") || !strcmp(s, "mesh"), "p=%d, 8 B: %s", p, s);
    s = first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 64u << 20, NULL);
    EXPECTF(!strcmp(s, "ring"), "p=%d, 64 MiB: %s", p, s);
  }
  ctx.nranks = 6;
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 256u << 20, NULL), "ring");
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 1024, NULL), "rd");
  /* Powers of two: rd small; large sizes go to a bandwidth-optimal algorithm. */
  for (int p = 2; p <= 8; p *= 2) {
    ctx.nranks = p;
    EXPECT_STR(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 8, NULL), "rd");
    const char *s = first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 64u << 20, NULL);
    EXPECTF(!strcmp(s, "ring") || !strcmp(s, "hd"), "p=%d, 64 MiB: %s", p, s);
  }
  /* The crossover moves with the figures: a per-algorithm override can make hd lose. */
  ctx.nranks = 4;
  t.noverrides = 1;
  t.ov[0].coll = COLLIE_COLL_ALLREDUCE;
  snprintf(t.ov[0].algo, sizeof t.ov[0].algo, "hd");
  t.ov[0].alpha_scale = 1, t.ov[0].beta_scale = 1.5, t.ov[0].gamma_scale = 1;
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 64u << 20, NULL), "ring");
  t.noverrides = 0;

  /* The crossover between rd and ring lies at larger sizes over TCP (larger alpha) and
   * when the host is oversubscribed (4 ranks per core: alpha x 13, beta and gamma x 4). */
  ctx.nranks = 5;
  t.oversub_alpha_scale = 4;
  size_t cross_shm = 0, cross_tcp = 0, cross_over = 0;
  for (size_t b = 8; b <= (1u << 30) && !(cross_shm && cross_tcp && cross_over); b *= 2) {
    ctx.link = COLLIE_LINK_SHM, ctx.ranks_per_core = 1;
    if (!cross_shm && strcmp(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, b, NULL), "rd")) cross_shm = b;
    ctx.link = COLLIE_LINK_TCP;
    if (!cross_tcp && strcmp(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, b, NULL), "rd")) cross_tcp = b;
    ctx.link = COLLIE_LINK_SHM, ctx.ranks_per_core = 4;
    if (!cross_over && strcmp(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, b, NULL), "rd")) cross_over = b;
  }
  EXPECTF(cross_shm && cross_tcp > cross_shm, "crossover shm %zu, tcp %zu", cross_shm, cross_tcp);
  EXPECTF(cross_over > cross_shm, "crossover shm %zu, oversubscribed %zu", cross_shm, cross_over);
  ctx.link = COLLIE_LINK_SHM, ctx.ranks_per_core = 1;
  t.oversub_alpha_scale = 1;
  /* Oversubscription makes everything slower, and latency most. */
  {
    collie_tune_ctx_t busy = ctx;
    busy.nranks = 8, busy.ranks_per_core = 4;
    ctx.nranks = 8;
    double quiet8 = collie_tune_estimate(&ctx, COLLIE_COLL_ALLREDUCE, "rd", 8);
    double busy8 = collie_tune_estimate(&busy, COLLIE_COLL_ALLREDUCE, "rd", 8);
    EXPECTF(near(busy8, quiet8 * 4) || busy8 > quiet8 * 3.9, "8 B: %g us on a core per rank, %g us on a quarter", quiet8,
            busy8);
  }

  /* Other collectives: latency algorithms small, bandwidth ones large. */
  ctx.nranks = 8;
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BROADCAST, 8, NULL), "binomial");
  {
    const char *s = first(&ctx, &none, COLLIE_COLL_BROADCAST, 64u << 20, NULL);
    EXPECTF(strcmp(s, "binomial"), "broadcast 64 MiB: %s", s);
  }
  {
    const char *s = first(&ctx, &none, COLLIE_COLL_ALLGATHER, 64, NULL);
    EXPECTF(!strcmp(s, "rd") || !strcmp(s, "bruck"), "allgather 64 B: %s", s);
  }
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BARRIER, 0, NULL), "dissemination");
  /* Every registered algorithm has a formula, and one rank costs nothing. The
   * shared-memory collectives have none without a shared area. */
  ctx.area_bytes = 256 << 10;
  ctx.groups = 2, ctx.group_size = ctx.nranks / 2; /* the hierarchical ones need hosts */
  for (const collie_algo_t *a = collie_algos; a->name; a++) {
    EXPECTF(collie_tune_formula(a->coll, a->name) != NULL, "no formula for %s %s", collie_coll_name(a->coll), a->name);
    EXPECTF(collie_tune_estimate(&ctx, a->coll, a->name, 1 << 20) > 0, "%s %s", collie_coll_name(a->coll), a->name);
  }
  ctx.groups = 1, ctx.group_size = ctx.nranks;
  /* Two ranks: the shared-memory broadcast shares its copying between root and receiver
   * from COLLIE_SHM_BCAST_SPLIT_BYTES where CMA reaches ordinary buffers, and then wins
   * over the binomial's one message; below that size, or without CMA, it does not. */
  ctx.nranks = 2;
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BROADCAST, 1u << 20, NULL), "binomial");
  ctx.bcast_split_min = COLLIE_SHM_BCAST_SPLIT_BYTES;
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BROADCAST, 1u << 20, NULL), "shm");
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BROADCAST, 64u << 20, NULL), "shm");
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BROADCAST, 256u << 10, NULL), "binomial");
  /* CMA measured slower than the ring: the split only beyond the caches */
  ctx.bcast_split_min = COLLIE_SHM_BCAST_CMA_FAR;
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BROADCAST, 4u << 20, NULL), "binomial");
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_BROADCAST, 16u << 20, NULL), "shm");
  ctx.bcast_split_min = 0;
  /* Oversubscribed, the rooted collectives' barrier-like algorithms pay their
   * synchronisations p times, trees do not: reduces past the inline lines go down the
   * binomial tree, large broadcasts still go through the shared area. A broadcast within
   * the inline lines is no barrier (its root runs ahead through the slots): it pays what
   * the tree pays, and takes the shared area; past them its synchronisation costs p times
   * at once (at 4 KiB its bytes already weigh: 4 ranks on 2 cores, 4200 B, staged and
   * binomial alike, 1.6 to 1.9 us). So is a reduce within them (its other ranks run ahead
   * of the root, algo/native/shm_native.c: defers_check); past them it waits. */
  {
    collie_tune_ctx_t busy = ctx;
    busy.nranks = ctx.nranks = 4, busy.ranks_per_core = 2;
    const collie_coll_t coll = COLLIE_COLL_REDUCE;
    const size_t b = 16, staged = COLLIE_SHM_INLINE_SMALL_BYTES + 4;
    double tree = collie_tune_estimate(&busy, coll, "binomial", b) / collie_tune_estimate(&ctx, coll, "binomial", b);
    double area = collie_tune_estimate(&busy, coll, "shm", b) / collie_tune_estimate(&ctx, coll, "shm", b);
    double phases =
        collie_tune_estimate(&busy, coll, "rs_gather", b) / collie_tune_estimate(&ctx, coll, "rs_gather", b);
    EXPECTF(area < 1.01 * tree && phases > 3.5 * tree,
            "reduce 16 B, oversubscribed / not: binomial %g, shm %g, rs_gather %g", tree, area, phases);
    EXPECT_STR(first(&busy, &none, coll, b, NULL), "shm");
    EXPECT_STR(first(&busy, &none, coll, COLLIE_SHM_INLINE_SMALL_BYTES, NULL), "shm");
    area = collie_tune_estimate(&busy, coll, "shm", staged) / collie_tune_estimate(&ctx, coll, "shm", staged);
    tree = collie_tune_estimate(&busy, coll, "binomial", staged) / collie_tune_estimate(&ctx, coll, "binomial", staged);
    EXPECTF(area > 3 * tree, "reduce %zu B, oversubscribed / not: binomial %g, shm %g", staged, tree, area);
    EXPECT_STR(first(&busy, &none, coll, staged, NULL), "binomial");
    const collie_coll_t bc = COLLIE_COLL_BROADCAST;
    const size_t in = COLLIE_SHM_INLINE_BYTES, past = in + 8;
    double within = collie_tune_estimate(&busy, bc, "shm", in) / collie_tune_estimate(&ctx, bc, "shm", in);
    double beyond = collie_tune_estimate(&busy, bc, "shm", past) / collie_tune_estimate(&ctx, bc, "shm", past);
    tree = collie_tune_estimate(&busy, bc, "binomial", past) / collie_tune_estimate(&ctx, bc, "binomial", past);
    phases = collie_tune_estimate(&busy, bc, "scatter_allgather", past) /
             collie_tune_estimate(&ctx, bc, "scatter_allgather", past);
    EXPECTF(beyond > 1.5 * within && beyond > 1.5 * tree && phases > 1.5 * tree,
            "broadcast, oversubscribed / not: shm %g at %zu B, %g at %zu B; binomial %g, scatter_allgather %g", within,
            in, beyond, past, tree, phases);
    EXPECT_STR(first(&busy, &none, bc, in, NULL), "shm");
    tree = collie_tune_estimate(&busy, COLLIE_COLL_BROADCAST, "binomial", 16) /
           collie_tune_estimate(&ctx, COLLIE_COLL_BROADCAST, "binomial", 16);
    area = collie_tune_estimate(&busy, COLLIE_COLL_BROADCAST, "shm", 16) /
           collie_tune_estimate(&ctx, COLLIE_COLL_BROADCAST, "shm", 16);
    EXPECTF(area < 1.01 * tree, "broadcast 16 B, oversubscribed / not: binomial %g, shm %g", tree, area);
    EXPECT_STR(first(&busy, &none, COLLIE_COLL_BROADCAST, 16, NULL), "shm");
    EXPECT_STR(first(&busy, &none, COLLIE_COLL_BROADCAST, 4u << 20, NULL), "shm");
  }
  /* The binomial reduce overlaps a sender's staging with its parent's reduction, and
   * oversubscribed only its levels with more busy ranks than cores slow down: it serves
   * 2 ranks and an oversubscribed host at every size past the inline lines (within them
   * the shared area's other ranks leave as early as the tree's leaves, and its one
   * synchronisation costs less than a message), while with a core per rank the flat
   * reductions (shm, chain) win from 16 ranks on (theirs do not grow with log p). */
  {
    collie_tune_ctx_t busy = ctx;
    busy.nranks = ctx.nranks = 2;
    for (size_t b = 8; b <= (64u << 20); b *= 8)
      EXPECTF(!strcmp(first(&ctx, &none, COLLIE_COLL_REDUCE, b, NULL),
                      b <= COLLIE_SHM_INLINE_SMALL_BYTES ? "shm" : "binomial"),
              "reduce, 2 ranks, %zu B", b);
    for (int p = 4; p <= 8; p *= 2) {
      busy.nranks = ctx.nranks = p, busy.ranks_per_core = p / 2.0;
      for (size_t b = 8; b <= (64u << 20); b *= 8)
        EXPECTF(!strcmp(first(&busy, &none, COLLIE_COLL_REDUCE, b, NULL),
                        b <= COLLIE_SHM_INLINE_SMALL_BYTES ? "shm" : "binomial"),
                "reduce, %d ranks on 2 cores, %zu B", p, b);
    }
    busy.nranks = ctx.nranks = 4, busy.ranks_per_core = 2;
    const double slowed = collie_tune_estimate(&busy, COLLIE_COLL_REDUCE, "binomial", 64u << 20) /
                          collie_tune_estimate(&ctx, COLLIE_COLL_REDUCE, "binomial", 64u << 20);
    EXPECTF(slowed > 1.2 && slowed < 1.6, "binomial reduce, 4 ranks on 2 cores against 4: x%g (one level of two)", slowed);
    ctx.nranks = 2;
    /* 2 ranks: the all-gather's single synchronisation wins up to 128 KiB a rank. */
    EXPECT_STR(first(&ctx, &none, COLLIE_COLL_ALLGATHER, 256u << 10, NULL), "shm");
    EXPECTF(strcmp(first(&ctx, &none, COLLIE_COLL_ALLGATHER, 4u << 20, NULL), "shm"), "allgather, 2 ranks, 4 MiB: %s",
            first(&ctx, &none, COLLIE_COLL_ALLGATHER, 4u << 20, NULL));
    /* ... except where messages from COLLIE_CMA_MIN are read once by process_vm_readv:
     * then only below it. */
    ctx.cma_msgs = true;
    EXPECT_STR(first(&ctx, &none, COLLIE_COLL_ALLGATHER, 2 * (COLLIE_CMA_MIN - 4), NULL), "shm");
    for (size_t b = 2 * COLLIE_CMA_MIN; b <= (4u << 20); b *= 2)
      EXPECTF(strcmp(first(&ctx, &none, COLLIE_COLL_ALLGATHER, b, NULL), "shm"), "allgather, 2 ranks, CMA, %zu B: %s",
              b, first(&ctx, &none, COLLIE_COLL_ALLGATHER, b, NULL));
    /* ... and from 16 MiB on, where the area's copies out stream, shm again, with CMA and
     * without. */
    for (size_t b = 16u << 20; b <= (64u << 20); b *= 2) {
      EXPECTF(!strcmp(first(&ctx, &none, COLLIE_COLL_ALLGATHER, b, NULL), "shm"), "allgather, 2 ranks, CMA, %zu B: %s",
              b, first(&ctx, &none, COLLIE_COLL_ALLGATHER, b, NULL));
      ctx.cma_msgs = false;
      EXPECTF(!strcmp(first(&ctx, &none, COLLIE_COLL_ALLGATHER, b, NULL), "shm"), "allgather, 2 ranks, %zu B: %s", b,
              first(&ctx, &none, COLLIE_COLL_ALLGATHER, b, NULL));
      ctx.cma_msgs = true;
    }
    EXPECTF(strcmp(first(&ctx, &none, COLLIE_COLL_ALLGATHER, 8u << 20, NULL), "shm"),
            "allgather, 2 ranks, CMA, 8 MiB: %s", first(&ctx, &none, COLLIE_COLL_ALLGATHER, 8u << 20, NULL));
    ctx.cma_msgs = false;
    /* The 2-rank all-to-all: messages from 1 MiB to 2 MiB, the area's slots from 4 MiB,
     * unless messages copy once by CMA. */
    for (size_t b = 1u << 20; b <= (64u << 20); b *= 2) {
      const bool area = b >= (4u << 20);
      EXPECTF(!strcmp(first(&ctx, &none, COLLIE_COLL_ALLTOALL, b, NULL), "shm") == area, "alltoall, 2 ranks, %zu B: %s",
              b, first(&ctx, &none, COLLIE_COLL_ALLTOALL, b, NULL));
      ctx.cma_msgs = true;
      EXPECTF(strcmp(first(&ctx, &none, COLLIE_COLL_ALLTOALL, b, NULL), "shm"), "alltoall, 2 ranks, CMA, %zu B: %s", b,
              first(&ctx, &none, COLLIE_COLL_ALLTOALL, b, NULL));
      ctx.cma_msgs = false;
    }
    ctx.nranks = 16;
    const char *flat = first(&ctx, &none, COLLIE_COLL_REDUCE, 64u << 20, NULL);
    EXPECTF(!strcmp(flat, "shm") || !strcmp(flat, "chain"), "reduce, 16 ranks with a core each, 64 MiB: %s", flat);
  }
  ctx.nranks = 8;
  ctx.area_bytes = 0;
  EXPECT(collie_tune_estimate(&ctx, COLLIE_COLL_ALLREDUCE, "shm", 8) < 0);
  EXPECT(collie_tune_estimate(&ctx, COLLIE_COLL_ALLREDUCE, "nosuch", 8) < 0);
  ctx.nranks = 1;
  EXPECT(collie_tune_estimate(&ctx, COLLIE_COLL_ALLREDUCE, "ring", 1 << 20) == 0);

  /* COLLIE_ALGO still comes first; exclusions are honoured; everything excluded keeps
   * the fallback. */
  ctx.nranks = 4;
  collie_algo_rules_t rules;
  char err[512];
  EXPECT(collie_algo_spec_parse("allreduce:tree", &rules, err, sizeof err) == 0);
  bool forced = false;
  EXPECT_STR(first(&ctx, &rules, COLLIE_COLL_ALLREDUCE, 8, &forced), "tree");
  EXPECT(forced);
  EXPECT(collie_algo_spec_parse("^rd", &rules, err, sizeof err) == 0);
  {
    const char *s = first(&ctx, &rules, COLLIE_COLL_ALLREDUCE, 8, &forced);
    EXPECTF(strcmp(s, "rd") && !forced, "^rd: %s", s);
  }
  EXPECT(collie_algo_spec_parse("^ring,^tree,^mesh,^rd,^hd,^hier,^shm", &rules, err, sizeof err) == 0);
  EXPECT_STR(first(&ctx, &rules, COLLIE_COLL_ALLREDUCE, 8, NULL), "ring");
  /* A wrong name lists the right ones: collectives too, which it once did not. */
  EXPECT(collie_algo_spec_parse("allredcue:ring", &rules, err, sizeof err) < 0);
  EXPECTF(strstr(err, "unknown collective 'allredcue'; valid names: allreduce, broadcast") &&
              strstr(err, "alltoallv, scatter, gather, barrier"), "%s", err);
  EXPECT(collie_algo_spec_parse("allreduce:rign", &rules, err, sizeof err) < 0);
  EXPECTF(strstr(err, "unknown algorithm 'rign'; valid names: ring, tree") != NULL, "%s", err);

  /* Hosts: the hierarchical allreduce only where there are several of the same size, and
   * it wins for large vectors (a host's link carries 2 (h-1)/h n instead of 2 (p-1)/p n). */
  ctx.link = COLLIE_LINK_TCP;
  ctx.chunk_bytes = 1 << 20; /* as between hosts (comm_init.c) */
  ctx.nranks = 8;
  ctx.groups = 1, ctx.group_size = 8;
  EXPECT(collie_tune_estimate(&ctx, COLLIE_COLL_ALLREDUCE, "hier", 1 << 20) < 0);
  ctx.groups = 3, ctx.group_size = 0; /* hosts of different sizes */
  EXPECT(collie_tune_estimate(&ctx, COLLIE_COLL_ALLREDUCE, "hier", 1 << 20) < 0);
  ctx.groups = 8, ctx.group_size = 1; /* one rank per host: nothing inside a host */
  EXPECT(collie_tune_estimate(&ctx, COLLIE_COLL_ALLREDUCE, "hier", 1 << 20) < 0);
  ctx.groups = 2, ctx.group_size = 4;
  EXPECT_STR(first(&ctx, &none, COLLIE_COLL_ALLREDUCE, 64u << 20, NULL), "hier");
  ctx.link = COLLIE_LINK_SHM;
  ctx.chunk_bytes = 64 << 10;
  ctx.groups = 1, ctx.group_size = ctx.nranks;
}

/* What a communicator weighs: shm when every rank is on this host, else tcp; ranks per
 * core when all share one host. A fake communicator is enough: only its topology is read. */
static void test_comm_context(void) {
  const int n = 4;
  collie_comm_t *comm = calloc(1, sizeof *comm);
  collie_tune_state_t *st = calloc(1, sizeof *st);
  comm->cards = calloc((size_t)n, sizeof(collie_card_t));
  if (!comm || !st || !comm->cards) exit(1);
  comm->nranks = n;
  comm->chunk_bytes = 64 << 10;
  comm->algo_spec = st;
  fake_table(&st->table);
  st->ncpus = 64; /* no oversubscription */
  for (int r = 0; r < n; r++) snprintf(comm->cards[r].host_id, sizeof comm->cards[r].host_id, "hostA");
  const collie_algo_t *out[16];
  bool forced;

  /* 64 KiB on 4 ranks: shm figures pick hd (bandwidth), tcp ones rd (latency). */
  comm->nlocal = n;
  collie_tune_ctx_t ctx = {&st->table, COLLIE_LINK_SHM, n, 4.0 / 64, 64 << 10, 0, false, 1, n, false};
  const collie_algo_t *want_shm = NULL, *want_tcp = NULL;
  size_t bytes = 0;
  for (size_t b = 1024; b <= (16u << 20) && !bytes; b *= 2) {
    const collie_algo_t *o1[16], *o2[16];
    double e[16];
    ctx.link = COLLIE_LINK_SHM;
    collie_tune_rank(&st->rules, &ctx, COLLIE_COLL_ALLREDUCE, b, o1, e, 16, &forced);
    ctx.link = COLLIE_LINK_TCP;
    collie_tune_rank(&st->rules, &ctx, COLLIE_COLL_ALLREDUCE, b, o2, e, 16, &forced);
    if (o1[0] != o2[0]) bytes = b, want_shm = o1[0], want_tcp = o2[0];
  }
  EXPECTF(bytes != 0, "shm and tcp figures never disagree");
  if (bytes) {
    EXPECT(collie_tune_candidates(comm, COLLIE_COLL_ALLREDUCE, bytes, out, 16, &forced) > 0);
    EXPECTF(out[0] == want_shm, "all local: %s, shm figures pick %s", out[0]->name, want_shm->name);
    comm->nlocal = 2; /* two hosts */
    for (int r = 2; r < n; r++) snprintf(comm->cards[r].host_id, sizeof comm->cards[r].host_id, "hostB");
    st->host_ranks = 0;
    EXPECT(collie_tune_candidates(comm, COLLIE_COLL_ALLREDUCE, bytes, out, 16, &forced) > 0);
    EXPECTF(out[0] == want_tcp, "two hosts: %s, tcp figures pick %s", out[0]->name, want_tcp->name);
    EXPECT(st->host_ranks == 2);
    /* Across hosts no oversubscription factor: other hosts' cores are unknown, and every
     * rank must weigh alike. */
    st->table.oversub_alpha_scale = 4;
    for (size_t b = 8; b <= (64u << 20); b *= 4) {
      const collie_algo_t *o64[16];
      st->ncpus = 64, st->host_ranks = 0;
      collie_tune_candidates(comm, COLLIE_COLL_ALLREDUCE, b, o64, 16, &forced);
      st->ncpus = 1, st->host_ranks = 0;
      collie_tune_candidates(comm, COLLIE_COLL_ALLREDUCE, b, out, 16, &forced);
      EXPECTF(out[0] == o64[0], "two hosts, %zu B: %s on 1 core, %s on 64", b, out[0]->name, o64[0]->name);
    }
    st->ncpus = 64;
    st->table.oversub_alpha_scale = 1;
  }

  /* Oversubscription: the same 4 ranks on 1 core raise alpha more than beta (scale 4:
   * alpha x 13, beta x 4), so latency-bound choices reach larger sizes. */
  st->table.oversub_alpha_scale = 4;
  for (int r = 0; r < n; r++) snprintf(comm->cards[r].host_id, sizeof comm->cards[r].host_id, "hostA");
  comm->nlocal = n;
  st->host_ranks = 0;
  size_t cross_fast = 0, cross_slow = 0;
  for (size_t b = 8; b <= (64u << 20); b *= 2) {
    st->ncpus = 64, st->host_ranks = 0;
    collie_tune_candidates(comm, COLLIE_COLL_ALLREDUCE, b, out, 16, &forced);
    if (!cross_fast && strcmp(out[0]->name, "rd")) cross_fast = b;
    st->ncpus = 1, st->host_ranks = 0;
    collie_tune_candidates(comm, COLLIE_COLL_ALLREDUCE, b, out, 16, &forced);
    if (!cross_slow && strcmp(out[0]->name, "rd")) cross_slow = b;
  }
  EXPECT(st->host_ranks == 4);
  EXPECTF(cross_fast && cross_slow > cross_fast, "rd up to %zu B on 64 cores, %zu B on 1 core", cross_fast, cross_slow);
  free(comm->cards);
  free(st);
  free(comm);
}

/* ---- COLLIE_PROTO and COLLIE_TUNING_FILE through communicator creation ------------------ */

static collie_result_t one_rank(const char *proto, collie_comm_t **comm) {
  collie_unique_id_t id;
  collie_result_t r = collie_get_unique_id(&id);
  if (r) return r;
  collie_config_t cfg = COLLIE_CONFIG_INIT;
  cfg.proto = proto;
  return collie_comm_init_rank_config(comm, 1, id, 0, &cfg);
}

static void test_proto(void) {
  collie_proto_t p;
  char err[512];
  EXPECT(collie_proto_parse(NULL, &p, err, sizeof err) == 0 && p == COLLIE_PROTO_AUTO);
  EXPECT(collie_proto_parse("", &p, err, sizeof err) == 0 && p == COLLIE_PROTO_AUTO);
  EXPECT(collie_proto_parse("Auto", &p, err, sizeof err) == 0 && p == COLLIE_PROTO_AUTO);
  EXPECT(collie_proto_parse("simple", &p, err, sizeof err) == 0 && p == COLLIE_PROTO_SIMPLE);
  EXPECT(collie_proto_parse("Simple", &p, err, sizeof err) == 0 && p == COLLIE_PROTO_SIMPLE);
  EXPECT(collie_proto_parse("LL", &p, err, sizeof err) == 0 && p == COLLIE_PROTO_LL);
  EXPECT(collie_proto_parse("ll128", &p, err, sizeof err) == -1);
  EXPECT_CONTAINS(err, "'ll128'");
  EXPECT_CONTAINS(err, "valid names: auto (the default), simple, ll");

  collie_comm_t *comm = NULL;
  collie_result_t r = one_rank(NULL, &comm);
  EXPECTF(r == COLLIE_SUCCESS, "%s", collie_get_last_error(NULL));
  if (!r) {
    EXPECT(collie_tune_proto(comm) == COLLIE_PROTO_AUTO);
    collie_comm_destroy(comm);
  }
  r = one_rank("ll", &comm);
  EXPECTF(r == COLLIE_SUCCESS, "%s", collie_get_last_error(NULL));
  if (!r) {
    EXPECT(collie_tune_proto(comm) == COLLIE_PROTO_LL);
    collie_comm_destroy(comm);
  }
  comm = NULL;
  r = one_rank("fast", &comm);
  EXPECT(r == COLLIE_ERR_INVALID_ARGUMENT && comm == NULL);
  EXPECT_CONTAINS(collie_get_last_error(NULL), "unknown protocol 'fast'; valid names: auto (the default), simple, ll");

  setenv("COLLIE_PROTO", "turbo", 1);
  collie_params_reload();
  r = one_rank(NULL, &comm);
  EXPECT(r == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(collie_get_last_error(NULL), "'turbo'");
  r = one_rank("simple", &comm); /* the config wins over the environment */
  EXPECTF(r == COLLIE_SUCCESS, "%s", collie_get_last_error(NULL));
  if (!r) collie_comm_destroy(comm);
  setenv("COLLIE_PROTO", "SIMPLE", 1);
  collie_params_reload();
  r = one_rank(NULL, &comm);
  EXPECTF(r == COLLIE_SUCCESS, "%s", collie_get_last_error(NULL));
  if (!r) {
    EXPECT(collie_tune_proto(comm) == COLLIE_PROTO_SIMPLE);
    collie_comm_destroy(comm);
  }
  unsetenv("COLLIE_PROTO");
  collie_params_reload();
}

static void test_tuning_file_env(void) {
  collie_comm_t *comm = NULL;
  const char *good = write_file("env-good.tune", "# from a test\nshm.alpha_us 7.5\nallgather.bruck.beta_scale 3\n");
  char goodpath[512];
  snprintf(goodpath, sizeof goodpath, "%s", good);
  setenv("COLLIE_TUNING_FILE", goodpath, 1);
  collie_params_reload();
  collie_result_t r = one_rank(NULL, &comm);
  EXPECTF(r == COLLIE_SUCCESS, "%s", collie_get_last_error(NULL));
  if (!r) {
    EXPECT_STR(comm->algo_spec->table.source, goodpath);
    EXPECT(near(comm->algo_spec->table.link[COLLIE_LINK_SHM].alpha_us, 7.5));
    EXPECT(comm->algo_spec->table.noverrides == 1);
    float x = 2, y = 0;
    EXPECT(collie_allreduce(&x, &y, 1, COLLIE_FLOAT32, COLLIE_SUM, comm) == COLLIE_SUCCESS && y == 2);
    collie_comm_destroy(comm);
  }
  const char *bad = write_file("env-bad.tune", "shm.alpha_us 1\n\ntcp.beta_us_per_byte quick\n");
  char badpath[512];
  snprintf(badpath, sizeof badpath, "%s", bad);
  setenv("COLLIE_TUNING_FILE", badpath, 1);
  collie_params_reload();
  comm = NULL;
  r = one_rank(NULL, &comm);
  EXPECT(r == COLLIE_ERR_INVALID_ARGUMENT && comm == NULL);
  const char *e = collie_get_last_error(NULL);
  EXPECT_CONTAINS(e, "COLLIE_TUNING_FILE");
  EXPECT_CONTAINS(e, badpath);
  EXPECT_CONTAINS(e, "line 3");
  EXPECT_CONTAINS(e, "'quick'");
  setenv("COLLIE_TUNING_FILE", "/nonexistent/collie.tune", 1);
  collie_params_reload();
  r = one_rank(NULL, &comm);
  EXPECT(r == COLLIE_ERR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(collie_get_last_error(NULL), "/nonexistent/collie.tune");
  unsetenv("COLLIE_TUNING_FILE");
  collie_params_reload();
  r = one_rank(NULL, &comm);
  EXPECTF(r == COLLIE_SUCCESS, "%s", collie_get_last_error(NULL));
  if (!r) {
    EXPECT_STR(comm->algo_spec->table.source, "default");
    collie_comm_destroy(comm);
  }
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/collie-tune-test-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  unsetenv("COLLIE_TUNING_FILE");
  unsetenv("COLLIE_PROTO");
  unsetenv("COLLIE_ALGO");
  collie_params_reload();
  test_parse_good();
  test_parse_missing_keys();
  test_parse_malformed();
  test_choice();
  test_comm_context();
  test_proto();
  test_tuning_file_env();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return unit_summary("test_tune");
}
