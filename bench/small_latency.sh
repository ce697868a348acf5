#!/usr/bin/env bash
# Small-message latency in steady state, collie against Open MPI, alternating runs:
# the median and first quartile of many runs say more on a noisy VM than make bench's
# best of 3 rounds of 20 operations. Prints one Markdown row per size.
#   bench/small_latency.sh [build-dir]
# Knobs: COLL (allreduce; or allgather, reduce_scatter, broadcast, alltoall), RANKS (2),
# SIZES ("8 64 256", bytes as the perf tests count them), RUNS (10 per implementation and
# size), ITERS (50000 operations a run), WARMUP (1000).
set -eu
build=${1:-build}
coll=${COLL:-allreduce}
case $coll in
  allreduce) perf=$build/bin/all_reduce_perf ;;
  allgather) perf=$build/bin/all_gather_perf ;;
  reduce_scatter) perf=$build/bin/reduce_scatter_perf ;;
  broadcast) perf=$build/bin/broadcast_perf ;;
  alltoall) perf=$build/bin/alltoall_perf ;;
  *) echo "small_latency.sh: COLL=$coll is not one of allreduce allgather reduce_scatter broadcast alltoall" >&2; exit 1 ;;
esac
mpib=$build/bench/mpi_coll_bench.openmpi
for f in "$perf" "$mpib"; do
  [ -x "$f" ] || { echo "small_latency.sh: $f is missing; run make build (and make bench once for the MPI program)" >&2; exit 1; }
done
ranks=${RANKS:-2} sizes=${SIZES:-"8 64 256"} runs=${RUNS:-10} iters=${ITERS:-50000} warmup=${WARMUP:-1000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Open MPI refuses root unless told; harmless otherwise
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "$coll (float32), $ranks ranks, $runs alternating runs of -n $iters per size; us per operation"
echo
echo "| size | collie median | collie p25 | Open MPI median | Open MPI p25 | collie / Open MPI (medians) |"
echo "|---|---|---|---|---|---|"
for s in $sizes; do
  : >"$tmp/collie"
  : >"$tmp/ompi"
  for ((i = 0; i < runs; i++)); do
    # collie: out-of-place and in-place times both count as samples
    "$perf" -p "$ranks" -b "$s" -e "$s" -w "$warmup" -n "$iters" -c 0 -J "$tmp/j" >/dev/null
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(r["out_of_place"]["time_us"]); print(r["in_place"]["time_us"])' \
      "$tmp/j" >>"$tmp/collie"
    mpirun.openmpi --oversubscribe -np "$ranks" "$mpib" -c "$coll" -b "$s" -e "$s" -w "$warmup" -n "$iters" 2>/dev/null |
      python3 -c 'import json,sys; [print(json.loads(l)["time_us"]) for l in sys.stdin if l.startswith("{")]' >>"$tmp/ompi"
  done
  python3 - "$s" "$tmp/collie" "$tmp/ompi" <<'EOF'
import statistics, sys
def stats(path):
    v = sorted(float(x) for x in open(path) if x.strip())
    return statistics.median(v), v[len(v) // 4]
c, o = stats(sys.argv[2]), stats(sys.argv[3])
print(f"| {sys.argv[1]} B | {c[0]:.3f} | {c[1]:.3f} | {o[0]:.3f} | {o[1]:.3f} | {c[0] / o[0]:.2f} |")
EOF
done
