#!/usr/bin/env bash
# What a communicator costs in /dev/shm: 8 ranks in Docker's default /dev/shm of 64 MiB
# create 6 more communicators of all 8 beside the world, each checked with an allreduce
# and a ring of 4 KiB messages, and each may take at most 12 MiB there (its rings take
# memory only as pairs use them, src/transport/shm.c). Before, each took 62 MiB and the
# first split failed for want of space. Runs in a mount namespace of its own with a private tmpfs on
# /dev/shm, so nothing outside is touched or counted.
#   shm_footprint_test.sh COLLIE_RUN COMM_MANY
set -u
run=$1
many=$2
command -v unshare >/dev/null || { echo "FAIL: unshare (util-linux) is missing" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$out" >&2; exit 1; }

timeout -s KILL 200 unshare --mount --propagation private sh -c '
  mount -t tmpfs -o size=64m tmpfs /dev/shm || exit 99
  "$1" -n 8 --timeout 150 "$2" 6 4096 world 12
  rc=$?
  left=$(ls -A /dev/shm)
  [ -z "$left" ] || { echo "left in /dev/shm: $left"; exit 98; }
  exit $rc' sh "$run" "$many" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc = 99 ] && fail "cannot mount a private /dev/shm"
[ $rc = 98 ] && fail "segments were left in /dev/shm"
[ $rc = 0 ] || fail "8 ranks with 7 communicators in a 64 MiB /dev/shm: exit $rc"
grep -q "^comm_many: OK" "$out" || fail "comm_many did not finish"
echo "PASS: 7 communicators of 8 ranks fit Docker's default /dev/shm"
