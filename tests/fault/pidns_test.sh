#!/usr/bin/env bash
# Two ranks of one host that cannot open each other's /proc/<pid>/fd (rank 1 in its own
# PID namespace, /dev/shm shared): the single-copy probes (collie_mem_alloc mappings and
# process_vm_readv) must turn single copy off on both ranks, say so, and collie_mem_alloc
# and ordinary buffers must still give correct results (staged).
#   pidns_test.sh COLL_CHECK
set -u
check=$1
command -v unshare >/dev/null || { echo "FAIL: unshare (util-linux) is missing" >&2; exit 1; }
dir=$(mktemp -d)
pid0=
cleanup() {
  [ -n "$pid0" ] && kill -9 "$pid0" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export COLLIE_ROOT_ADDR=127.0.0.1:$port COLLIE_JOB_ID=pidns-$$ COLLIE_SOCKET_IFNAME=lo COLLIE_NRANKS=2 \
       COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=TRANSPORT COLLIE_CONNECT_TIMEOUT=30 COLLIE_EXEC_TIMEOUT=60
args=(--register --big --dtypes quick --coll allreduce,allgather,broadcast,p2p)
export COLLIE_SHM_CMA=2 # would read every message of 64 KiB and more, were it allowed
COLLIE_RANK=0 "$check" "${args[@]}" >"$dir/0.out" 2>&1 &
pid0=$!
COLLIE_RANK=1 timeout -s KILL 120 unshare --pid --fork --mount-proc "$check" "${args[@]}" >"$dir/1.out" 2>&1
rc1=$?
wait "$pid0"
rc0=$?
pid0=
cat "$dir"/0.out "$dir"/1.out
[ "$rc0" = 0 ] && [ "$rc1" = 0 ] || { echo "FAIL: ranks exited with $rc0 and $rc1" >&2; exit 1; }
for r in 0 1; do
  grep -q "single copy of collie_mem_alloc buffers off: rank $r cannot reach" "$dir/$r.out" ||
    { echo "FAIL: rank $r did not turn single copy off" >&2; exit 1; }
  grep -q "process_vm_readv off: rank $r cannot reach" "$dir/$r.out" ||
    { echo "FAIL: rank $r did not turn process_vm_readv off" >&2; exit 1; }
  grep -q "coll_check: rank $r: .* cases OK" "$dir/$r.out" || { echo "FAIL: rank $r results" >&2; exit 1; }
done
echo "PASS: single copy off on both ranks, results correct"
