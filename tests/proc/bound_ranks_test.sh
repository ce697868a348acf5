#!/usr/bin/env bash
# Ranks a launcher bound to a core each (mpirun --bind-to core, srun --cpu-bind=cores) see one
# CPU apiece in their affinity masks, yet do not share one: the wait policy must count the
# cores of the host's ranks together (it took 2 ranks on 2 cores for oversubscribed, and
# stopped polling). Ranks bound to one CPU together do share it. Needs two CPUs.
#   bound_ranks_test.sh COLLIE_RUN ALL_REDUCE_PERF
set -u
run=$1
perf=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v taskset >/dev/null || fail "taskset (util-linux) is missing"
read -r -a cpus <<<"$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')"
[ ${#cpus[@]} = 2 ] || fail "this test binds 2 ranks to 2 CPUs, and this process may use only ${cpus[*]}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
unset COLLIE_SPIN

# bound CPU0 CPU1 WANT: rank 0 on CPU0, rank 1 on CPU1; both must say WANT and check their sums.
bound() {
  "$run" -n 2 --timeout 60 --tag-output sh -c "c=\$((COLLIE_LOCAL_RANK == 0 ? $1 : $2)); exec taskset -c \$c env \
    COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=INIT '$perf' -b 8 -e 64K -w 2 -n 5 -c 1" >"$out" 2>&1 ||
    { cat "$out"; fail "2 ranks on CPUs $1 and $2 failed"; }
  grep -q "Out of bounds values : 0 OK" "$out" || { cat "$out"; fail "2 ranks on CPUs $1 and $2: wrong results"; }
  n=$(grep -c "COLLIE INFO INIT 2 ranks on this host, $3" "$out")
  [ "$n" = 2 ] || { grep "ranks on this host" "$out"; fail "2 ranks on CPUs $1 and $2: $n of 2 said '2 ranks on this host, $3'"; }
  echo "CPUs $1 and $2: both ranks said '$3'"
}
bound "${cpus[0]}" "${cpus[1]}" "2 cores: poll 20 us"
bound "${cpus[0]}" "${cpus[0]}" "1 cores: poll 0 us"
echo "PASS"
