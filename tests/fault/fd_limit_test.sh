#!/usr/bin/env bash
# Too low a limit of open files (ulimit -n) for 8 ranks over TCP: the rank that runs out must
# say so, with the limit and how to raise it, instead of spinning on a pending connection
# until the connect timeout and blaming the peers; every other rank must give that sentence
# too, at once, not after COLLIE_CONNECT_TIMEOUT. Then a limit large enough must work. Last,
# 8 ranks over shared memory that create communicator after communicator until rank 0 has
# no descriptor left must all say so, with the limit, instead of pointing at containers.
#   fd_limit_test.sh COLLIE_RUN ALL_REDUCE_PERF COMM_MANY
set -u
run=$1
perf=$2
many=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export COLLIE_TRANSPORT=tcp
# 12: rank 0 runs out while the ranks join. It tells those it has accepted; those still
# in its backlog, or not yet connected, only see it go (and retry a refused connection
# until the connect timeout, as at any start), so only its own sentence is required.
# 16 to 24: a rank runs out while the transports connect; every rank must give the
# sentence, within seconds.
for limit in 12 16 20 24; do
  timeout=30
  [ "$limit" = 12 ] && timeout=5
  start=$(date +%s.%N)
  (ulimit -n "$limit" && COLLIE_CONNECT_TIMEOUT=$timeout exec "$run" --timeout 60 -n 8 "$perf" -b 8 -e 8 -n 2 -w 1) >"$dir/out" 2>&1
  rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
  echo "== ulimit -n $limit: exit $rc after $took s"
  grep -v '^ \|^#' "$dir/out" | sort | uniq -c
  [ "$rc" != 0 ] || fail "8 ranks over TCP succeeded with ulimit -n $limit; the test needs a limit they exceed"
  [ "$rc" != 124 ] || fail "the job hung with ulimit -n $limit"
  grep -q "Too many open files; this process may have at most $limit files open (ulimit -n).*raise the limit" "$dir/out" ||
    fail "no rank named the limit of $limit open files"
  [ "$limit" = 12 ] && continue
  told=$(grep -c "creating the communicator failed: .*Too many open files; this process may have at most $limit files" "$dir/out")
  [ "$told" = 8 ] || fail "$told of 8 ranks gave the sentence naming the limit"
  (($(echo "$took < 15" | bc))) || fail "the job took $took s; the ranks waited for the connect timeout (30 s)"
done
(ulimit -n 64 && exec "$run" --timeout 60 -n 8 "$perf" -b 8 -e 8 -n 2 -w 1) >"$dir/out" 2>&1 ||
  { cat "$dir/out"; fail "8 ranks over TCP failed with ulimit -n 64"; }

# Over shared memory a communicator keeps few descriptors, but rank 0 keeps one per rank:
# 64 run out within 20 communicators of 8 ranks, in rank 0's accept or in a shm_open. The
# rank that runs out names the limit (not containers, as a failed shm_open did), and every
# rank fails that split at once: the members its new rank 0 had not accepted retried a
# refused connection until COLLIE_CONNECT_TIMEOUT (60 s) and then advised checking that
# rank 0 started, and in a split into halves the other half went on into the next split
# while this one's ranks waited in collie_comm_destroy for them (killed at 90 s).
many_run() { # LIMIT: runs the 20 splits under that limit, checks that all 8 fail at once
  local start took rc
  start=$(date +%s.%N)
  (ulimit -n "$1" && COLLIE_TRANSPORT=auto exec timeout 60 "$run" --timeout 50 -n 8 "$many" 20 0) >"$dir/out" 2>&1
  rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
  echo "== shared memory, 20 communicators, ulimit -n $1: exit $rc after $took s"
  grep -v '^ \|^#' "$dir/out" | cut -c1-200 | sort | uniq -c | head -20
  [ "$rc" != 0 ] || fail "20 communicators of 8 ranks fitted in $1 files; the test needs a limit they exceed"
  [ "$rc" != 124 ] || fail "the job hung with ulimit -n $1"
  failed=$(grep -c "^comm_many: rank [0-7]: split of communicator" "$dir/out")
  [ "$failed" = 8 ] || fail "$failed of 8 ranks reported the failed split with ulimit -n $1"
  (($(echo "$took < 15" | bc))) || fail "ulimit -n $1: the job took $took s; ranks waited for a timeout"
  if grep -q "check that rank 0 started" "$dir/out"; then fail "ulimit -n $1: a rank blamed rank 0's start"; fi
  cat "$dir/out" >>"$dir/all"
}
many_run 64
grep -q "Too many open files; this process may have at most 64 files open (ulimit -n).*destroy communicators" \
  "$dir/out" || fail "no rank named the limit of 64 open files"
grep -q "Too many open files; if the ranks run in different containers" "$dir/out" &&
  fail "a rank blamed containers for the limit of open files"
# Other limits run out elsewhere: in the accept of a split's new rank 0 (the members it had
# not accepted find its listener gone), and in one half of a split into halves (the other
# half's ranks fail that split too, and destroy the communicator they had made).
for limit in $(seq 36 2 70); do many_run "$limit"; done
grep -q "listened there before it handed out the communicator's id" "$dir/all" ||
  fail "no run had a member find its new rank 0's listener gone; move the limits"
grep -q "so the split failed on every rank; this rank's new communicator was destroyed" "$dir/all" ||
  fail "no run failed one half of a split only; move the limits"
echo "PASS: every limit too low was named on every rank at once, with how to raise it; 64 files were enough"
