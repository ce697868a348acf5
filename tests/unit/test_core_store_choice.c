/* The choice between ordinary and streaming stores (core/store_choice.h), fed with the
 * costs measured on the AMD VM: with neighbouring cores it keeps ordinary stores, with
 * distant ones it moves to streaming stores, and it comes back within a few explorations
 * when the placement changes back; copies below COLLIE_STORE_CHOICE_MIN never stream, and
 * one interrupted copy does not turn the choice; an even choice takes the cheaper kind by
 * any margin; COLLIE_SHM_STORES fixes the kind. */
#include <stdlib.h>

#include "core/params.h"
#include "core/store_choice.h"
#include "core_unit.h"

enum { PIECE = 256 << 10 };

/* Runs `copies` copies whose cost is `ordinary` or `streamed` ns/KiB by kind; returns how
 * many streamed among the last `tail`. */
static int run(collie_store_choice_t *c, int copies, double ordinary, double streamed, int tail) {
  int streamed_tail = 0;
  for (int i = 0; i < copies; i++) {
    const bool s = collie_store_choose(c, PIECE);
    collie_store_record(c, s, PIECE, (uint64_t)((s ? streamed : ordinary) * PIECE / 1024));
    if (i >= copies - tail) streamed_tail += s;
  }
  return streamed_tail;
}

int main(void) {
  collie_store_choice_t c;
  collie_store_init(&c);
  /* Neighbouring vCPUs: ordinary 50, streaming 60 ns/KiB; and the worst pair seen there
   * (ordinary 133, streaming 33): ordinary stores but for the explorations. */
  int s = run(&c, 640, 50, 60, 512);
  EXPECTF(s <= 512 / COLLIE_STORE_EXPLORE + 1, "neighbours: %d of the last 512 copies streamed", s);
  s = run(&c, 640, 133, 33, 512);
  EXPECTF(s <= 512 / COLLIE_STORE_EXPLORE + 1, "neighbours, worst pair: %d of the last 512 copies streamed", s);
  /* Distant vCPUs: ordinary 600, streaming 40: streaming but for the explorations. */
  s = run(&c, 3 * COLLIE_STORE_EXPLORE, 600, 40, 2 * COLLIE_STORE_EXPLORE);
  EXPECTF(s >= 2 * COLLIE_STORE_EXPLORE - 2, "distant: only %d of the last %d copies streamed", s,
          2 * COLLIE_STORE_EXPLORE);
  /* Back to neighbours: ordinary again from the first exploration on (its copy stands
   * for the kind alone: averaged with the older costs, it would take three). */
  s = run(&c, COLLIE_STORE_EXPLORE + 9, 50, 60, 8);
  EXPECTF(s <= 1, "neighbours again: %d of the last 8 copies streamed", s);
  /* One copy interrupted for 4 ms (ranks outnumbering cores), away from an exploration,
   * does not turn the choice. */
  s = run(&c, COLLIE_STORE_EXPLORE - 9 + 2, 50, 60, 0);
  collie_store_record(&c, false, PIECE, 4000000);
  s = run(&c, COLLIE_STORE_EXPLORE - 4, 50, 60, COLLIE_STORE_EXPLORE - 4);
  EXPECTF(s <= 1, "after an interrupted copy: %d of %d copies streamed", s, COLLIE_STORE_EXPLORE - 4);
  /* An even choice (copies out of staging) takes the cheaper kind by any margin, where
   * the biased one above keeps ordinary stores: streaming but for the explorations at 60
   * against 50 ns/KiB, ordinary at 50 against 60, and streaming again. */
  collie_store_choice_t even;
  collie_store_init_even(&even);
  s = run(&even, 640, 60, 50, 512);
  EXPECTF(s >= 512 - 512 / COLLIE_STORE_EXPLORE - 1, "even, streaming cheaper: only %d of the last 512 streamed", s);
  s = run(&even, 640, 50, 60, 512);
  EXPECTF(s <= 512 / COLLIE_STORE_EXPLORE + 1, "even, ordinary cheaper: %d of the last 512 copies streamed", s);
  s = run(&even, 3 * COLLIE_STORE_EXPLORE, 60, 50, 2 * COLLIE_STORE_EXPLORE);
  EXPECTF(s >= 2 * COLLIE_STORE_EXPLORE - 2, "even, streaming cheaper again: only %d of the last %d streamed", s,
          2 * COLLIE_STORE_EXPLORE);
  /* Small copies are never timed and never stream. */
  collie_store_choice_t small;
  collie_store_init(&small);
  for (int i = 0; i < 200; i++) {
    EXPECT(!collie_store_choose(&small, COLLIE_STORE_CHOICE_MIN - 1));
    collie_store_record(&small, false, COLLIE_STORE_CHOICE_MIN - 1, 1000000000);
  }
  EXPECT(small.copies == 0 && small.ns_per_kib[0] == 0);
  /* COLLIE_SHM_STORES fixes the kind, whatever the copies cost. */
  setenv("COLLIE_SHM_STORES", "streaming", 1);
  collie_params_reload();
  collie_store_choice_t fixed;
  collie_store_init(&fixed);
  EXPECT(run(&fixed, 200, 50, 600, 200) == 200);
  EXPECT(!collie_store_choose(&fixed, COLLIE_STORE_CHOICE_MIN - 1));
  setenv("COLLIE_SHM_STORES", "ordinary", 1);
  collie_params_reload();
  collie_store_init(&fixed);
  EXPECT(run(&fixed, 200, 600, 40, 200) == 0);
  return unit_summary("test_core_store_choice");
}
