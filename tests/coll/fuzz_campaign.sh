#!/usr/bin/env bash
# A random fuzz campaign, for a developer hunting rare failures (not a ctest): until
# SECONDS have passed, runs coll_check --fuzz 300 with a random seed on 2 to 12 ranks, with
# at random TCP, COLLIE_PROTO=simple or ll, a progress thread, process_vm_readv forced on
# or off, 1 to 3 fake hosts (COLLIE_HOST_ID), --fuzz-split, --register mixed or
# --fuzz-threads 2, and --fuzz-repeat. Each failure's command line and output go to OUT_DIR/fail-N; the
# command reruns it exactly.
#   tests/coll/fuzz_campaign.sh SECONDS [BIN_DIR (build/bin)] [OUT_DIR (a new temporary one)]
set -u
. "$(dirname "$0")/campaign_run.sh"
campaign_setup fuzz_campaign "$@"
while campaign_more; do
  env=(COLLIE_EXEC_TIMEOUT=60)
  case $((RANDOM % 6)) in
  0) env+=(COLLIE_TRANSPORT=tcp) ;;
  1) env+=(COLLIE_PROTO=simple) ;;
  2) env+=(COLLIE_PROTO=ll) ;;
  3) env+=(COLLIE_PROGRESS_THREAD=1) ;;
  esac
  case $((RANDOM % 5)) in
  0) env+=(COLLIE_SHM_CMA=1) ;;
  1) env+=(COLLIE_SHM_CMA=0) ;;
  esac
  cmd=(env "${env[@]}" "$bin/collie-run" -n $((2 + RANDOM % 11)) --timeout 200)
  hosts=$((1 + RANDOM % 3))
  [ $hosts -gt 1 ] && cmd+=(sh -c "COLLIE_HOST_ID=h\$((COLLIE_RANK % $hosts)) exec \"\$0\" \"\$@\"")
  cmd+=("$bin/coll_check" --fuzz 300 --fuzz-bytes 2M --seed $RANDOM$RANDOM)
  case $((RANDOM % 5)) in
  0) cmd+=(--fuzz-split) ;;
  1) cmd+=(--register mixed) ;;
  2) cmd+=(--fuzz-threads 2) ;;
  esac
  [ $((RANDOM % 2)) = 0 ] && cmd+=(--fuzz-repeat)
  campaign_run 250 "${cmd[@]}"
done
campaign_end
