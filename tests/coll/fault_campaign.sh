#!/usr/bin/env bash
# A random campaign of failures, for a developer hunting rare faults in the failure paths
# (not a ctest): until SECONDS have passed, runs the victim tests (fuzz_kill_test.sh and
# fuzz_stop_test.sh, the checks of the ctests coll_fuzz_kill_* and coll_fuzz_stop_*) with
# a random victim, operation, seed and rank count (2 to 6), and at random TCP,
# COLLIE_PROTO=simple, a progress thread, 2 fake hosts (COLL_FAKE_HOSTS), --fuzz-split or
# --fuzz-threads 2, and --fuzz-repeat (runs of repeated small collectives, where the
# victim strikes inside the run: the others are in the fast lane).
# Each failure's command line and output go to OUT_DIR/fail-N; the command reruns it.
# The ctests pin a few such runs; this explores others (CI once met a resumed rank that
# crashed in one of them: a receive written into a buffer the test had freed).
#   tests/coll/fault_campaign.sh SECONDS [BIN_DIR (build/bin)] [OUT_DIR (a new temporary one)]
set -u
. "$(dirname "$0")/campaign_run.sh"
campaign_setup fault_campaign "$@"
here=$(cd "$(dirname "$0")" && pwd)
while campaign_more; do
  n=$((2 + RANDOM % 5))
  victim=$((RANDOM % n)):$((1 + RANDOM % 300))
  env=(COLLIE_EXEC_TIMEOUT=6)
  case $((RANDOM % 5)) in
  0) env+=(COLLIE_TRANSPORT=tcp) ;;
  1) env+=(COLLIE_PROTO=simple) ;;
  2) env+=(COLLIE_PROGRESS_THREAD=1) ;;
  esac
  if [ $((RANDOM % 2)) = 0 ]; then test=fuzz_kill_test.sh; else test=fuzz_stop_test.sh; fi
  args=(--seed $RANDOM$RANDOM)
  case $((RANDOM % 4)) in
  0) args+=(--fuzz-split) ;;
  1) args+=(--fuzz-threads 2) ;;
  esac
  [ $((RANDOM % 2)) = 0 ] && args+=(--fuzz-repeat)
  [ $((RANDOM % 4)) = 0 ] && env+=(COLL_FAKE_HOSTS=2)
  cmd=(env "${env[@]}" bash "$here/$test" "$bin/collie-run" "$bin/coll_check" $n $victim "${args[@]}")
  campaign_run 200 "${cmd[@]}"
done
campaign_end
