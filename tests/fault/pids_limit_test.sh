#!/usr/bin/env bash
# Too low a limit of processes and threads (a container's pids limit): 8 ranks create
# communicator after communicator, each of which runs a watchdog thread on every rank, in a
# cgroup of their own whose pids.max lets them have 3 at most. The rank whose thread cannot
# start must say so with the limit to raise (pids limit, ulimit -u) and that communicators
# no longer needed free theirs; every rank must fail that split at once, not hang.
#   pids_limit_test.sh COLLIE_RUN COMM_MANY
set -u
run=$1
many=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
# The pids controller: cgroup v1 (its own hierarchy) or v2 (the unified one, where it must
# be enabled for children).
if [ -f /sys/fs/cgroup/pids/cgroup.procs ]; then
  parent=/sys/fs/cgroup/pids
elif grep -qw pids /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  parent=/sys/fs/cgroup
  grep -qw pids /sys/fs/cgroup/cgroup.subtree_control || echo +pids >/sys/fs/cgroup/cgroup.subtree_control ||
    fail "cannot enable the pids controller for child cgroups (run as root)"
else
  fail "no cgroup pids controller at /sys/fs/cgroup/pids or in /sys/fs/cgroup (cgroup v2)"
fi
cg=$parent/collie-pids-test-$$
out=$(mktemp)
cleanup() {
  rm -f "$out" "$out.all"
  [ -d "$cg" ] || return 0
  for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$cg" 2>/dev/null && return 0; sleep 0.2; done
}
trap cleanup EXIT
mkdir "$cg" || fail "cannot create the cgroup $cg (run as root)"
# collie-run and 8 ranks of 4 threads each (main, the world's watchdog and two more
# communicators') make 33; a third communicator needs 8 more.
echo 40 >"$cg/pids.max" || fail "cannot set $cg/pids.max"
timeout -s KILL 120 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -n 8 --timeout 100 "$3" 20 0' sh "$cg" "$run" "$many" \
  >"$out" 2>&1
rc=$?
grep -v '^ \|^#' "$out" | cut -c1-300 | sort | uniq -c | head -20
[ "$rc" != 0 ] || fail "20 communicators of 8 ranks fitted in 40 processes and threads; the test needs a limit they exceed"
[ "$rc" != 137 ] || fail "the job hung (killed after 120 s)"
grep -q "could not start its watchdog thread: Resource temporarily unavailable; raise the limit of processes and threads (ulimit -u; in a container its pids limit.*destroy those no longer needed" "$out" ||
  fail "no rank named the limit of processes and threads"
failed=$(grep -c "^comm_many: rank [0-7]: split of communicator" "$out")
[ "$failed" = 8 ] || fail "$failed of 8 ranks reported the failed split"
# Other limits run out elsewhere, in one half of a split into halves among them: every rank
# must fail that split within seconds (the other half went on into the next split while
# this one's ranks waited for it in collie_comm_destroy: 29 hung until collie-run's timeout).
: >"$out.all"
for max in $(seq 20 3 80); do
  echo "$max" >"$cg/pids.max" || fail "cannot set $cg/pids.max"
  start=$(date +%s.%N)
  timeout -s KILL 60 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -n 8 --timeout 50 "$3" 20 0' sh "$cg" "$run" \
    "$many" >"$out" 2>&1
  rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
  echo "== pids.max $max: exit $rc after $took s"
  [ "$rc" != 0 ] || fail "20 communicators of 8 ranks fitted in $max processes and threads"
  failed=$(grep -c "^comm_many: rank [0-7]: split of communicator" "$out")
  [ "$failed" = 8 ] || { cat "$out"; fail "pids.max $max: $failed of 8 ranks reported the failed split"; }
  (($(echo "$took < 15" | bc))) || fail "pids.max $max: the job took $took s; ranks waited for a timeout"
  cat "$out" >>"$out.all"
done
grep -q "so the split failed on every rank; this rank's new communicator was destroyed" "$out.all" ||
  fail "no run failed one half of a split only; move the limits"
echo "PASS: a thread that could not start named the pids limit on its rank, and every rank failed the split"
