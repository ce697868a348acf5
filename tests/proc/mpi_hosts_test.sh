#!/usr/bin/env bash
# mpirun and mpiexec across two hosts, for real: two network-namespace hosts
# (tests/common/netns_hosts.sh), the launcher started on hostA, its daemon reaching hostB
# through a stand-in for ssh that enters hostB's namespaces (Open MPI's plm_rsh_agent,
# MPICH's -launcher-exec). What README.md and docs/perf.md show must hold:
#   1. Open MPI: `mpirun -H hostA:2,hostB:2 -n 4 -x COLLIE_ROOT_ADDR=hostA:29500`:
#      coll_check with shared memory inside each host and TCP across; all_reduce_perf
#      on -H hostA:4,hostB:4 -n 8.
#   2. MPICH (hydra: a proxy per host, so the job key may not hold a host's proxy pid):
#      `mpiexec -hosts hostA:2,hostB:2 -n 4 -genv COLLIE_ROOT_ADDR hostA:29500`, the same.
#   3. Either without COLLIE_ROOT_ADDR: every rank fails saying what to set.
# Needs root, mpirun.openmpi, mpiexec.mpich, ip, unshare and nsenter; fails, never skips,
# without them.
#   mpi_hosts_test.sh BIN_DIR SOURCE_DIR
set -u
bin=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
for c in mpirun.openmpi mpiexec.mpich; do command -v $c >/dev/null || fail "$c is missing (scripts/install-deps.sh)"; done
dir=$(mktemp -d)
. "$src/tests/common/netns_hosts.sh"
netns_hosts_trap "$dir"
netns_hosts_up cmp$$ "$dir" 10.231.92 2
hostA=${holders[0]}

# The ssh stand-in: [options] HOST COMMAND... runs COMMAND by sh on HOST, as sshd would.
cat >"$dir/nsrsh" <<EOF
#!/bin/sh
while case "\$1" in -*) true ;; *) false ;; esac; do shift; done
case "\$1" in
hostA) pid=${holders[0]} ;;
hostB) pid=${holders[1]} ;;
*) echo "nsrsh: no host '\$1'" >&2; exit 255 ;;
esac
shift
exec nsenter -t \$pid -m -n -u sh -c "\$*"
EOF
chmod +x "$dir/nsrsh"
unset COLLIE_ROOT_ADDR MASTER_ADDR MASTER_PORT COLLIE_RANK COLLIE_NRANKS COLLIE_HOST_ID COLLIE_TRANSPORT \
  COLLIE_SOCKET_IFNAME COLLIE_SPIN
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 COLLIE_CONNECT_TIMEOUT=20 COLLIE_EXEC_TIMEOUT=60

# ompi OUT ARGS...: Open MPI's mpirun on hostA; mpich OUT ARGS...: MPICH's mpiexec there.
ompi() {
  local out=$1
  shift
  timeout -s KILL 90 nsenter -t "$hostA" -m -n -u mpirun.openmpi --oversubscribe --mca plm_rsh_agent "$dir/nsrsh" \
    "$@" >"$dir/$out" 2>&1
}
mpich() {
  local out=$1
  shift
  timeout -s KILL 90 nsenter -t "$hostA" -m -n -u mpiexec.mpich -launcher ssh -launcher-exec "$dir/nsrsh" "$@" \
    >"$dir/$out" 2>&1
}
# want OUT N WHAT: OUT has WHAT on N lines.
want() {
  local n
  n=$(grep -c "$3" "$dir/$1")
  [ "$n" = "$2" ] || { cat "$dir/$1"; fail "$1: $n of $2 lines said '$3'"; }
}
args=(--dtypes quick --coll allreduce,allgather,broadcast,reduce_scatter,alltoall,p2p)
# placed OUT: ranks 0 and 1 on hostA, 2 and 3 on hostB, shared memory inside, TCP across.
placed() {
  want "$1" 4 "coll_check: rank [0-3]: .* cases OK"
  want "$1" 1 "hostA:.*rank 0 of 4, 2 on this host; peers 0:self 1:shm 2:tcp 3:tcp"
  want "$1" 1 "hostB:.*rank 3 of 4, 2 on this host; peers 0:tcp 1:tcp 2:shm 3:self"
}
info=(COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=INIT)

ompi ompi.out -H hostA:2,hostB:2 -n 4 -x COLLIE_ROOT_ADDR=hostA:29500 -x "${info[0]}" -x "${info[1]}" \
  "$bin/coll_check" "${args[@]}" || { cat "$dir/ompi.out"; fail "Open MPI, 2 + 2 ranks: coll_check failed"; }
placed ompi.out
ompi ompi_perf.out -n 8 -H hostA:4,hostB:4 -x COLLIE_ROOT_ADDR=hostA:29500 "$bin/all_reduce_perf" -b 8 -e 1M -f 32 \
  -n 5 -w 1 || { cat "$dir/ompi_perf.out"; fail "Open MPI, 4 + 4 ranks: all_reduce_perf failed"; }
want ompi_perf.out 1 "^# Out of bounds values : 0 OK"
# Every rank must explain itself: mpirun would kill the ranks still starting as soon as one
# has exited with its error (once 3 of 4 lines), so it lets all of them end; it then exits
# 0 whatever theirs, and the 4 lines below are what says that every rank failed.
ompi ompi_noaddr.out --mca orte_abort_on_non_zero_status 0 -H hostA:2,hostB:2 -n 4 "$bin/p2p_check" || true
want ompi_noaddr.out 4 "collie_comm_init_env on rank [0-3]: the 4 ranks span several hosts; set COLLIE_ROOT_ADDR=host:port"
echo "PASS: Open MPI across two hosts: mpirun -H hostA:2,hostB:2 -n 4 -x COLLIE_ROOT_ADDR=hostA:29500"

mpich mpich.out -hosts hostA:2,hostB:2 -n 4 -genv COLLIE_ROOT_ADDR hostA:29500 -genv COLLIE_DEBUG INFO \
  -genv COLLIE_DEBUG_SUBSYS INIT "$bin/coll_check" "${args[@]}" ||
  { cat "$dir/mpich.out"; fail "MPICH, 2 + 2 ranks: coll_check failed"; }
placed mpich.out
mpich mpich_perf.out -hosts hostA:4,hostB:4 -n 8 -genv COLLIE_ROOT_ADDR hostA:29500 "$bin/all_reduce_perf" -b 8 -e 1M \
  -f 32 -n 5 -w 1 || { cat "$dir/mpich_perf.out"; fail "MPICH, 4 + 4 ranks: all_reduce_perf failed"; }
want mpich_perf.out 1 "^# Out of bounds values : 0 OK"
mpich mpich_noaddr.out -disable-auto-cleanup -hosts hostA:2,hostB:2 -n 4 "$bin/p2p_check" &&
  fail "MPICH across 2 hosts without an address succeeded"
want mpich_noaddr.out 4 "collie_comm_init_env on rank [0-3]: the 4 ranks span several hosts; set COLLIE_ROOT_ADDR=host:port"
echo "PASS: MPICH across two hosts: mpiexec -hosts hostA:2,hostB:2 -n 4 -genv COLLIE_ROOT_ADDR hostA:29500"
