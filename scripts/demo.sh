#!/usr/bin/env bash
# The main job: the allreduce and allgather perf tests on 4 local ranks from 8 B to 64 MiB,
# then perf-report's comparison table (and its plot, in build/demo/busbw.png).
set -euo pipefail
build=${1:-build}
out=$build/demo
mkdir -p "$out"
for t in all_reduce_perf all_gather_perf; do
  echo "== $t -p 4 -b 8 -e 64M -f 2 =="
  "$build/bin/$t" -p 4 -b 8 -e 64M -f 2 | tee "$out/$t.txt"
  echo
done
echo "== perf-report =="
scripts/perf-report -o "$out/busbw.png" "$out/all_reduce_perf.txt" "$out/all_gather_perf.txt"
echo
echo "plot: $out/busbw.png"
