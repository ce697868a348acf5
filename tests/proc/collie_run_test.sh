#!/usr/bin/env bash
# Tests collie-run with small shell programs as ranks.
# Usage: collie_run_test.sh PATH/TO/collie-run
#
# Every process a test starts carries UNIQ in its command line (in the rank's script or
# as a sleep duration such as 900.<UNIQ>1), so "is anything left behind?" is a pgrep
# for UNIQ, and the exit trap can clean up after a failed test without touching
# anybody else's processes.
set -euo pipefail
export LC_ALL=C # sort order of the expected output

RUN=${1:?usage: collie_run_test.sh PATH/TO/collie-run}
[ -x "$RUN" ] || { echo "FAIL: '$RUN' is not an executable" >&2; exit 1; }
UNIQ="$$$RANDOM"
TMP=$(mktemp -d)
unset COLLIE_RUN_GRACE COLLIE_ROOT_LISTEN_FD

cleanup() {
  local pids
  pids=$(pgrep -f "$UNIQ" || true)
  [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "$TMP"/out "$TMP"/err; do
    [ -s "$f" ] && { echo "--- ${f##*/}:" >&2; cat "$f" >&2; }
  done
  exit 1
}

# run EXPECTED_STATUS ARGS...: runs collie-run with stdout/stderr in $TMP/out, $TMP/err.
# A collie-run that hangs is killed after 20 s (its ranks die with it), so that a hang
# is reported as such rather than by the ctest timeout.
run() {
  local want=$1 got=0 start=$SECONDS
  shift
  timeout -s KILL 20 "$RUN" "$@" >"$TMP/out" 2>"$TMP/err" || got=$?
  [ $((SECONDS - start)) -lt 20 ] || fail "collie-run $* hung"
  [ "$got" = "$want" ] || fail "collie-run $* exited with $got, expected $want"
}

expect_out() { # expect_out EXPECTED: sorted stdout must equal EXPECTED
  local got
  got=$(sort "$TMP/out")
  [ "$got" = "$1" ] || fail "stdout was:"$'\n'"$got"$'\n'"expected:"$'\n'"$1"
}

expect_err() { # expect_err EXTENDED_REGEX: some line of stderr must match
  grep -Eq -- "$1" "$TMP/err" || fail "stderr has no line matching '$1'"
}

# wait_gone SECONDS: every process of this test must disappear within SECONDS.
wait_gone() {
  local tries=$(($1 * 10))
  while pgrep -f "$UNIQ" >/dev/null; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || fail "processes left behind: $(pgrep -af "$UNIQ" | tr '\n' ';')"
    sleep 0.1
  done
}

# wait_count N SECONDS: waits until at least N processes of this test exist.
wait_count() {
  local tries=$(($2 * 10))
  until [ "$(pgrep -fc "$UNIQ" || true)" -ge "$1" ]; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || fail "only $(pgrep -fc "$UNIQ" || true) of $1 processes started"
    sleep 0.1
  done
}

# finish PID EXPECTED_STATUS: the background collie-run PID must exit within 5 s with
# EXPECTED_STATUS.
finish() {
  local tries=50 got=0
  while kill -0 "$1" 2>/dev/null && [ "$tries" -gt 0 ]; do
    tries=$((tries - 1))
    sleep 0.1
  done
  if [ "$tries" = 0 ]; then
    kill -KILL "$1" 2>/dev/null || true
    fail "collie-run did not exit within 5 s"
  fi
  wait "$1" || got=$?
  [ "$got" = "$2" ] || fail "collie-run exited with $got, expected $2"
}

echo "environment, 1 rank"
run 0 -n 1 -- sh -c 'echo "$COLLIE_RANK $COLLIE_NRANKS $COLLIE_LOCAL_RANK $COLLIE_LOCAL_SIZE"'
expect_out "0 1 0 1"

echo "--bind: rank i on the i-th CPU of collie-run's mask, round robin"
# The first two CPUs this test may use; collie-run starts with just those two, so that the
# expected placement does not depend on the machine's size.
read -r CPU0 CPU1 < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')
[ -n "${CPU1:-}" ] || fail "--bind needs 2 CPUs to tell ranks apart; this test may use only CPU $CPU0"
# One write(2) per line: under PYTHONUNBUFFERED (set on some machines) print() writes each
# field apart, and two ranks' lines interleaved ("10  00  11").
cat >"$TMP/print_cpus.py" <<'PY'
import os
cpus = [str(c) for c in sorted(os.sched_getaffinity(0))]
os.write(1, (" ".join([os.environ["COLLIE_RANK"]] + cpus) + "\n").encode())
PY
PRINT_CPUS="python3 $TMP/print_cpus.py"
on_two() { # on_two ARGS...: collie-run ARGS, itself on CPU0 and CPU1 only
  timeout -s KILL 20 taskset -c "$CPU0,$CPU1" "$RUN" "$@" >"$TMP/out" 2>"$TMP/err" || fail "collie-run $* failed"
}
on_two -n 3 --bind -- sh -c "$PRINT_CPUS"
expect_out "0 $CPU0
1 $CPU1
2 $CPU0"
on_two -n 2 -- sh -c "$PRINT_CPUS"
expect_out "0 $CPU0 $CPU1
1 $CPU0 $CPU1"

echo "environment, 4 ranks"
PRINT_ENV='echo "$COLLIE_RANK $COLLIE_NRANKS $COLLIE_LOCAL_RANK $COLLIE_LOCAL_SIZE"'
run 0 -n 4 -- sh -c "$PRINT_ENV"
expect_out "0 4 0 4
1 4 1 4
2 4 2 4
3 4 3 4"

echo "root address and job id are shared by all ranks and unique per job"
run 0 -n 4 sh -c 'echo "$COLLIE_ROOT_ADDR $COLLIE_JOB_ID"'
[ "$(sort -u "$TMP/out" | wc -l)" = 1 ] || fail "ranks disagree on COLLIE_ROOT_ADDR or COLLIE_JOB_ID"
read -r addr job1 <"$TMP/out"
[[ $addr =~ ^127\.0\.0\.1:[0-9]+$ ]] && [ "${addr#*:}" -gt 0 ] || fail "bad COLLIE_ROOT_ADDR '$addr'"
[[ $job1 =~ ^run-[0-9]+-[0-9a-f]+$ ]] || fail "bad COLLIE_JOB_ID '$job1'"
run 0 -n 1 sh -c 'echo "$COLLIE_JOB_ID"'
[ "$(cat "$TMP/out")" != "$job1" ] || fail "two jobs got the same COLLIE_JOB_ID"

echo "the listening socket reaches rank 0 only"
# Sockets are counted against a baseline, in case the test itself inherited some.
base=$(sh -c 'ls -l /proc/$$/fd | grep -c "socket:" || true')
run 0 -n 4 -- bash -c '
  n=$(ls -l /proc/$$/fd | grep -c "socket:" || true)
  if [ "$COLLIE_RANK" = 0 ]; then
    fd=$COLLIE_ROOT_LISTEN_FD
    [ -n "$fd" ] && [ -e /proc/self/fd/$fd ] || { echo "rank 0: no fd \"$fd\""; exit 1; }
    case $(readlink /proc/$$/fd/$fd) in socket:*) ;; *) echo "rank 0: fd $fd is no socket"; exit 1;; esac
    # Connecting completes in the backlog without accept(): proves it listens on the address.
    exec 9<>"/dev/tcp/${COLLIE_ROOT_ADDR%:*}/${COLLIE_ROOT_ADDR#*:}" || { echo "rank 0: cannot connect"; exit 1; }
    echo "0 $((n - '"$base"'))"
  else
    [ -z "${COLLIE_ROOT_LISTEN_FD+set}" ] || { echo "rank $COLLIE_RANK: has COLLIE_ROOT_LISTEN_FD"; exit 1; }
    echo "$COLLIE_RANK $((n - '"$base"'))"
  fi'
expect_out "0 1
1 0
2 0
3 0"

echo "exit status of the failing rank"
run 3 -n 3 -- sh -c '[ "$COLLIE_RANK" = 1 ] && exit 3; exit 0'
expect_err '^collie-run: rank 1 \(pid [0-9]+\) exited with status 3$'

echo "rank killed by a signal"
run 137 -n 2 -- sh -c '[ "$COLLIE_RANK" = 1 ] && kill -9 $$; exit 0'
expect_err '^collie-run: rank 1 \(pid [0-9]+\) was killed by signal 9 \(Killed\)$'

echo "of several ranks found dead at once, the one killed by a signal is blamed"
# collie-run is stopped while rank 3 dies by SIGKILL and the others exit with 3 after it
# (as ranks whose library saw the peer die do): it then finds all four exits at once,
# and the kernel hands back the lowest pid first.
"$RUN" -n 4 -- sh -c "sleep 1.${UNIQ}; [ \$COLLIE_RANK = 3 ] && kill -9 \$\$; sleep 0.3; exit 3" \
  >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_count 5 5
kill -STOP "$pid"
sleep 2
kill -CONT "$pid"
finish "$pid" 137
expect_err '^collie-run: rank 3 \(pid [0-9]+\) was killed by signal 9 \(Killed\)$'
wait_gone 2

echo "program not found"
run 127 -n 2 -- ./no-such-program-"$UNIQ"
expect_err "^collie-run: cannot execute './no-such-program-$UNIQ': No such file or directory$"

echo "--timeout kills ranks and their children"
start=$SECONDS
run 124 --timeout 2 -n 3 -- sh -c "sleep 900.${UNIQ}1; :"
[ $((SECONDS - start)) -le 5 ] || fail "--timeout 2 took $((SECONDS - start)) s"
expect_err '^collie-run: timeout after 2 s; killing 3 ranks still running$'
wait_gone 2

echo "--timeout escalates to SIGKILL for ranks that ignore SIGTERM"
start=$SECONDS
run 124 --timeout 1 -n 2 -- sh -c "trap '' TERM; sleep 900.${UNIQ}2; :"
[ $((SECONDS - start)) -le 6 ] || fail "SIGKILL escalation took $((SECONDS - start)) s"
wait_gone 2

echo "--grace: survivors of a failure are terminated"
start=$SECONDS
run 5 --grace 1 -n 3 -- sh -c "[ \"\$COLLIE_RANK\" = 2 ] && exit 5; sleep 900.${UNIQ}3; :"
[ $((SECONDS - start)) -le 5 ] || fail "--grace 1 took $((SECONDS - start)) s"
expect_err '^collie-run: rank 2 \(pid [0-9]+\) exited with status 5$'
expect_err 'still running 1 s after rank 2 failed'
wait_gone 2

echo "COLLIE_RUN_GRACE, and survivors that finish on their own keep the first status"
start=$SECONDS
COLLIE_RUN_GRACE=20 run 4 -n 2 -- sh -c '[ "$COLLIE_RANK" = 0 ] && exit 4; sleep 1; exit 6'
[ $((SECONDS - start)) -le 5 ] || fail "a survivor that exits on its own was not waited for promptly"
COLLIE_RUN_GRACE=0 run 4 -n 2 -- sh -c "[ \"\$COLLIE_RANK\" = 0 ] && exit 4; sleep 900.${UNIQ}4; :"
wait_gone 2

echo "--tag-output"
run 0 --tag-output -n 3 -- sh -c 'echo "out $COLLIE_RANK"; echo "err $COLLIE_RANK" >&2; printf "a\nno newline"'
expect_out "[0] a
[0] no newline
[0] out 0
[1] a
[1] no newline
[1] out 1
[2] a
[2] no newline
[2] out 2"
[ "$(sort "$TMP/err")" = "[0] err 0
[1] err 1
[2] err 2" ] || fail "tagged stderr was: $(cat "$TMP/err")"

echo "without --tag-output the ranks write directly"
run 0 -n 2 -- sh -c 'echo "plain $COLLIE_RANK"'
expect_out "plain 0
plain 1"

echo "SIGTERM to collie-run reaches the ranks"
"$RUN" -n 2 -- sh -c "sleep 900.${UNIQ}5; :" >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_count 5 5 # collie-run, 2 shells, 2 sleeps
kill -TERM "$pid"
finish "$pid" 143
wait_gone 2

echo "SIGKILL to collie-run kills the ranks too"
"$RUN" -n 3 -- sleep "900.${UNIQ}6" >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_count 4 5 # collie-run, 3 sleeps
{ kill -KILL "$pid"; wait "$pid" || true; } 2>/dev/null # no "Killed" from bash
wait_gone 2

# Background jobs of a script start with SIGINT ignored; env gives collie-run the
# default disposition, as it would have in a terminal.
echo "SIGINT is forwarded to the ranks"
env --default-signal=INT "$RUN" -n 2 -- sh -c "trap 'echo got SIGINT; exit 7' INT; sleep 900.${UNIQ}7 & wait" \
  >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_count 5 5
kill -INT "$pid"
finish "$pid" 7
expect_out "got SIGINT
got SIGINT"
wait_gone 2 # the background sleeps ignore SIGINT: only the cleanup of each group ends them

echo "SIGINT reaches ranks even when collie-run starts with it ignored"
# This background job starts with SIGINT ignored (no env --default-signal); collie-run
# still forwards it, and the ranks must not inherit the ignoring (they once did, and the
# job ran on).
"$RUN" -n 2 -- sh -c "sleep 900.${UNIQ}0; :" >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_count 5 5
kill -INT "$pid"
finish "$pid" 130
wait_gone 2

echo "a second SIGINT kills the ranks"
env --default-signal=INT "$RUN" -n 2 -- sh -c "trap '' INT; sleep 900.${UNIQ}8; :" >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_count 5 5
kill -INT "$pid"
sleep 0.5 # two SIGINTs pending at once would count as one
[ "$(pgrep -fc "$UNIQ" || true)" -ge 5 ] || fail "ranks that ignore SIGINT did not survive the first one"
kill -INT "$pid"
finish "$pid" 137
wait_gone 2

echo "processes a rank leaves behind are killed with it"
run 0 --tag-output -n 2 -- sh -c "sleep 900.${UNIQ}9 & echo started"
expect_out "[0] started
[1] started"
wait_gone 2

echo "waiting does not spin"
TIMEFORMAT='%U %S'
cpu=$( { time "$RUN" -n 4 -- sleep 1.5 >/dev/null 2>&1; } 2>&1 )
awk -v u="${cpu% *}" -v s="${cpu#* }" 'BEGIN { exit !(u + s < 0.5) }' ||
  fail "collie-run and 4 sleeping ranks used $cpu s of CPU in 1.5 s"

echo "usage errors"
run 2 --bogus -n 1 true
expect_err '^Usage: collie-run'
run 2 true
expect_err 'the number of ranks \(-n N\) is required'
run 2 -n 0 true
run 2 -n 2
expect_err 'no program to run'
run 2 -n 1 --timeout abc true
run 0 --help
grep -q -- '--tag-output' "$TMP/out" && grep -q -- '--timeout' "$TMP/out" &&
  grep -q -- '--grace' "$TMP/out" || fail "--help does not explain every option"

wait_gone 1
echo "PASS"
