#!/usr/bin/env bash
# scripts/perf-report on real results: a text log and a -J file from two runs go in; a
# markdown table with both runs and a PNG plot must come out; labels given before each
# file name the columns.
# usage: report_test.sh BIN_DIR PERF_REPORT PYTHON
set -euo pipefail
bin=${1:?usage: report_test.sh BIN_DIR PERF_REPORT PYTHON} report=${2:?} python=${3:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/md" ] && cat "$tmp/md" >&2; exit 1; }

"$bin/all_reduce_perf" -p 2 -b 1K -e 64K -f 8 -n 3 -w 1 >"$tmp/ring.txt"
"$bin/all_reduce_perf" -p 2 -b 1K -e 64K -f 8 -n 3 -w 1 -A tree -J "$tmp/tree.json" >/dev/null
"$bin/all_gather_perf" -p 2 -b 1K -e 64K -f 8 -n 3 -w 1 --format hccl >"$tmp/ag.txt"

plot=(-o "$tmp/plot.png")
"$python" -c 'import matplotlib' 2>/dev/null || plot=(--no-plot)
"$python" "$report" "${plot[@]}" "$tmp/ring.txt" "$tmp/tree.json" "$tmp/ag.txt" >"$tmp/md" || fail "perf-report failed"
grep -q '^| size |' "$tmp/md" || fail "no comparison table"
grep -q 'algo=tree' "$tmp/md" || fail "the JSON run is not labelled with its algorithm"
[ "$(grep -c '^## ' "$tmp/md")" -eq 4 ] || fail "expected a comparison and 3 run sections"
# 1K, 8K, 64K: three rows in each run's table.
[ "$(grep -c '^| 8192 |' "$tmp/md")" -eq 3 ] || fail "a run lacks its 8192-byte row"
if [ "${plot[0]}" = -o ]; then
  [ -s "$tmp/plot.png" ] || fail "no plot written"
  head -c 8 "$tmp/plot.png" | od -An -c | grep -q 'P   N   G' || fail "the plot is not a PNG"
fi
# A label before each file, as docs/perf.md shows it (argparse refused a file after -l).
"$python" "$report" --no-plot -l "first run" "$tmp/ring.txt" -l "second run" "$tmp/tree.json" >"$tmp/md" ||
  fail "perf-report refused a label before each file"
grep -q '^| size | first run | second run |' "$tmp/md" || fail "the labels are not the columns, in order"
echo "ok: perf-report"
