#!/usr/bin/env bash
# Ranks of one host meet through /tmp/collie-UID-KEY.id, which rank 0 writes and removes
# once everyone joined. Rank 0 killed before that leaves the file behind, and a later job
# may get the same key (launchers' pids and job ids are reused). Here the same key twice:
# rank 0 of the first job is killed after publishing; in the second, rank 1 starts first
# and finds the old file. It must wait for the new rank 0's address (before, it joined the
# dead one's and failed after COLLIE_CONNECT_TIMEOUT), and both ranks must pass.
#   stale_meeting_test.sh P2P_CHECK
set -u
check=$1
dir=$(mktemp -d)
key=stale-$$
file=/tmp/collie-$(id -u)-c-$key.id
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$dir" "$file"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset COLLIE_ROOT_ADDR MASTER_ADDR MASTER_PORT COLLIE_LOCAL_SIZE
export COLLIE_JOB_ID=$key COLLIE_NRANKS=2 COLLIE_CONNECT_TIMEOUT=5 COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=BOOTSTRAP

COLLIE_RANK=0 COLLIE_CONNECT_TIMEOUT=60 "$check" >"$dir/dead.out" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -e "$file" ] && break; sleep 0.05; done
[ -e "$file" ] || { cat "$dir/dead.out"; fail "rank 0 did not publish $file within 10 s"; }
kill -9 "${pids[0]}"
wait "${pids[0]}" 2>/dev/null
[ -e "$file" ] || fail "the killed rank 0's file is gone: nothing to test"
echo "== rank 0 killed after publishing: $file left behind"

start=$(date +%s)
COLLIE_RANK=1 timeout -s KILL 60 "$check" >"$dir/1.out" 2>&1 &
r1=$!
pids+=($r1)
sleep 1 # rank 1 reads the old file first
COLLIE_RANK=0 timeout -s KILL 60 "$check" >"$dir/0.out" 2>&1 &
r0=$!
pids+=($r0)
wait $r1
rc1=$?
wait $r0
rc0=$?
took=$(($(date +%s) - start))
cat "$dir/0.out" "$dir/1.out"
[ $rc1 = 0 ] && [ $rc0 = 0 ] || fail "the second job failed (rank 0 status $rc0, rank 1 status $rc1)"
grep -q "p2p_check: rank 1 of 2 OK" "$dir/1.out" || fail "rank 1 checked nothing"
grep -q "was left by process [0-9]*, which is gone: waiting for rank 0's" "$dir/1.out" ||
  fail "rank 1 did not say that it waited past the old file"
[ -e "$file" ] && fail "the second job's rank 0 left $file behind"
echo "PASS: rank 1 waited past the dead rank 0's file; the job met and ran in $took s"
