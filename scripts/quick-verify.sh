#!/usr/bin/env bash
# quick-verify.sh N [BUILD_DIR]: a quick correctness pass over the collectives on N local
# ranks, in the spirit of hccl-test's pass/fail check. Each perf binary starts its own N
# ranks (-p N), runs a few sizes with the result check on (-c 1), and the summary says
# which collectives pass. Exit status 0 only if all do.
#
# Environment: PERF_SIZES (default "-b 8 -e 1M -f 32"), QUICK_TIMEOUT seconds per run (120).
set -uo pipefail
usage() { echo "usage: $0 NRANKS [BUILD_DIR]" >&2; exit 2; }
n=${1:-}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
build=${2:-$(cd "$(dirname "$0")/.." && pwd)/build}
bin=$build/bin
[ -x "$bin/all_reduce_perf" ] || { echo "quick-verify: no perf binaries in $bin (build first)" >&2; exit 2; }
read -r -a sizes <<<"${PERF_SIZES:--b 8 -e 1M -f 32}"
limit=${QUICK_TIMEOUT:-120}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# name | binary | extra flags: the core collectives, then every datatype x op at one size.
cases=(
  "all_reduce|all_reduce_perf|"
  "all_gather|all_gather_perf|"
  "all_gatherv|all_gatherv_perf|"
  "broadcast|broadcast_perf|-r all"
  "reduce|reduce_perf|-r all"
  "reduce_scatter|reduce_scatter_perf|"
  "reduce_scatterv|reduce_scatterv_perf|"
  "alltoall|alltoall_perf|"
  "alltoallv|alltoallv_perf|"
  "scatter|scatter_perf|-r all"
  "gather|gather_perf|-r all"
  "sendrecv|sendrecv_perf|"
  "all_reduce(types,ops)|all_reduce_perf|-d all -o all -b 4K -e 4K -n 2 -w 1"
)

printf '%-24s %6s %8s %8s %8s  %s\n' collective ranks rows wrong seconds check_result
pass=0 fail=0
for c in "${cases[@]}"; do
  IFS='|' read -r name prog extra <<<"$c"
  read -r -a more <<<"$extra"
  out=$log/$name.out
  start=$SECONDS
  timeout -k 5 "$limit" "$bin/$prog" -p "$n" "${sizes[@]}" -c 1 -n 5 -w 1 "${more[@]}" >"$out" 2>&1
  rc=$?
  rows=$(grep -vc '^#' "$out" || true)
  # Columns 9 and 13 are the out-of-place and in-place #wrong of nccl-tests' layout.
  wrong=$(awk '!/^#/ && NF == 13 { w += $9 + $13 } END { print w + 0 }' "$out")
  if [ "$rc" -eq 0 ] && [ "$wrong" -eq 0 ] && [ "$rows" -gt 0 ]; then
    result=success
    pass=$((pass + 1))
  else
    result="failed (exit $rc)"
    [ "$rc" -eq 124 ] && result="failed (timed out after ${limit}s)"
    fail=$((fail + 1))
  fi
  printf '%-24s %6d %8d %8d %8d  %s\n' "$name" "$n" "$rows" "$wrong" $((SECONDS - start)) "$result"
  # A failure shows the end of what the run said (its table rows and errors).
  [ "$result" = success ] || grep -v '^#' "$out" | tail -5 | sed 's/^/    | /'
done
echo "quick-verify: $pass passed, $fail failed on $n rank(s)"
[ "$fail" -eq 0 ]
