#!/usr/bin/env bash
# A /dev/shm too small for the shared-memory segments (Docker's default is 64 MiB): creation
# must fail on every rank with a sentence that says what to enlarge, not kill a rank with
# SIGBUS; the remedy it names (COLLIE_TRANSPORT=tcp) and a /dev/shm just large enough must
# work; messages that need more of a ring than /dev/shm has left (rings take their memory
# as pairs use them) must fail with such a sentence too; staging buffers too large to
# reserve (past 16 MiB) must warn. Each case runs in a mount namespace of its own with a
# private tmpfs on /dev/shm, so nothing outside is touched.
#   shm_full_test.sh COLLIE_RUN COLL_CHECK COMM_MANY
set -u
run=$1
check=$2
many=$3
command -v unshare >/dev/null || { echo "FAIL: unshare (util-linux) is missing" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# case NAME SHM_SIZE RANKS [VAR=VALUE ...]: runs $prog (coll_check unless set) in a private
# /dev/shm of SHM_SIZE; leaves the output in $dir/NAME.out, the exit status in $dir/NAME.rc
# and the entries left in that /dev/shm in $dir/NAME.left.
prog="$check --coll allreduce,allgather,p2p --dtypes quick"
case_run() {
  local name=$1 size=$2 n=$3
  shift 3
  timeout -s KILL 120 unshare --mount --propagation private env "$@" sh -c '
    mount -t tmpfs -o size="$1" tmpfs /dev/shm || exit 99
    "$2" --timeout 90 -n "$3" $4 >"$5.out" 2>&1
    echo $? >"$5.rc"
    ls -A /dev/shm >"$5.left"' sh "$size" "$run" "$n" "$prog" "$dir/$name"
  [ -s "$dir/$name.rc" ] || fail "$name: no exit status (mount refused or killed)"
  echo "== $name: /dev/shm $size, $n ranks, $*: exit $(cat "$dir/$name.rc")"
  cat "$dir/$name.out"
  [ -s "$dir/$name.left" ] && fail "$name: left in /dev/shm: $(cat "$dir/$name.left")"
  return 0
}

# 4 ranks need about 4 x 3.5 MiB; 2 MiB is far too little.
case_run small 2m 4 COLLIE_CONNECT_TIMEOUT=30
[ "$(cat "$dir/small.rc")" != 0 ] || fail "small: the job succeeded in a 2 MiB /dev/shm"
grep -q "Bus error\|signal 7" "$dir/small.out" && fail "small: a rank died of SIGBUS instead of failing creation"
n=$(grep -c "could not reserve .* MiB of shared memory for its segment .*No space left on device.*COLLIE_TRANSPORT=tcp" "$dir/small.out")
[ "$n" = 4 ] || fail "small: $n of 4 ranks named the full /dev/shm and the remedies"

# The remedy the sentence names.
case_run tcp 2m 4 COLLIE_TRANSPORT=tcp
[ "$(cat "$dir/tcp.rc")" = 0 ] || fail "tcp: COLLIE_TRANSPORT=tcp failed in a 2 MiB /dev/shm"

# Just large enough (14 MiB and a little): only the rings a rank uses are reserved. The
# collective area set to its size with a CPU per rank: with more ranks than CPUs it
# defaults to 1 MiB buffers, 20 MiB for the 4 ranks, and this machine may have either.
case_run enough 15m 4 COLLIE_SHM_COLL_SIZE=256K
[ "$(cat "$dir/enough.rc")" = 0 ] || fail "enough: 4 ranks failed in a 15 MiB /dev/shm"
grep -q "WARN" "$dir/enough.out" && fail "enough: unexpected warning"

# Rings of 16 MiB (2 MiB slots) in 12 MiB: creation reserves only the staging buffers and
# the rings' counters; a 16 MB message (no process_vm_readv) then fills the ring it takes
# until /dev/shm is full, and both ranks must say so, with the remedies, not die of SIGBUS.
prog="$many 1 16000000"
case_run rings 12m 2 COLLIE_SHM_SLOT_SIZE=2M COLLIE_SHM_CMA=0
[ "$(cat "$dir/rings.rc")" != 0 ] || fail "rings: 16 MB messages went through 16 MiB rings in a 12 MiB /dev/shm"
grep -q "Bus error\|signal 7" "$dir/rings.out" && fail "rings: a rank died of SIGBUS instead of failing the send"
n=$(grep -c "could not get the shared memory to send 16000000 bytes .*no space left on /dev/shm.*COLLIE_TRANSPORT=tcp" \
  "$dir/rings.out")
[ "$n" -ge 2 ] || fail "rings: $n of 2 ranks named the full /dev/shm and the remedies"

# 8 MiB staging buffers make 16 MiB of segment that creation does not reserve: a warning,
# and the job, whose calls use little of them, still runs.
prog="$check --coll allreduce,allgather,p2p --dtypes quick"
case_run large 12m 2 COLLIE_SHM_COLL_SIZE=8M
[ "$(cat "$dir/large.rc")" = 0 ] || fail "large: the job failed"
n=$(grep -c "WARN .*/dev/shm has .* MiB free .*killed by SIGBUS.*COLLIE_TRANSPORT=tcp" "$dir/large.out")
[ "$n" = 2 ] || fail "large: $n of 2 ranks warned that /dev/shm may run out"
echo "PASS: a full /dev/shm fails creation, or the send that needs more, with the remedies on every rank; tcp and a large enough /dev/shm work"
