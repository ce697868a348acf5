#!/usr/bin/env bash
# Too low a limit of open files (ulimit -n) for 8 ranks over TCP: the rank that runs out must
# say so, with the limit and how to raise it, instead of spinning on a pending connection
# until the connect timeout and blaming the peers. Then a limit large enough must work.
#   fd_limit_test.sh COLLIE_RUN ALL_REDUCE_PERF
set -u
run=$1
perf=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLLIE_TRANSPORT=tcp COLLIE_CONNECT_TIMEOUT=5
for limit in 12 16 20 24; do
  (ulimit -n "$limit" && exec "$run" --timeout 60 -n 8 "$perf" -b 8 -e 8 -n 2 -w 1) >"$dir/out" 2>&1
  rc=$?
  echo "== ulimit -n $limit: exit $rc"
  grep -v '^ \|^#' "$dir/out" | sort | uniq -c
  [ "$rc" != 0 ] || fail "8 ranks over TCP succeeded with ulimit -n $limit; the test needs a limit they exceed"
  [ "$rc" != 124 ] || fail "the job hung with ulimit -n $limit"
  grep -q "Too many open files; this process may have at most $limit files open (ulimit -n).*raise the limit" "$dir/out" ||
    fail "no rank named the limit of $limit open files"
done
(ulimit -n 64 && exec "$run" --timeout 60 -n 8 "$perf" -b 8 -e 8 -n 2 -w 1) >"$dir/out" 2>&1 ||
  { cat "$dir/out"; fail "8 ranks over TCP failed with ulimit -n 64"; }
echo "PASS: every limit too low was named, with how to raise it; 64 files were enough"
