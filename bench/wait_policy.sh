#!/usr/bin/env bash
# The wait policy on this machine: COLLIE_SPIN x COLLIE_YIELD at 2, 4 and 8 ranks, measured
# with all_reduce_perf (8 B latency, 1 MiB busbw) and the CPU time the job used. Writes a
# Markdown table to stdout; bench/results/wait-policy.md is one such run.
#   bench/wait_policy.sh [build-dir]        (ROUNDS=3 by default: each cell keeps its best)
set -eu
build=${1:-build}
perf=$build/bin/all_reduce_perf
[ -x "$perf" ] || { echo "wait_policy.sh: $perf is missing; run make first" >&2; exit 1; }
rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spins="0 2 20 200"
yields="0 200 2000"

# Prints "latency_us busbw_gbs cpu_s" for one configuration, best of $rounds rounds.
measure() { # nranks spin yield
  local best_lat=1e9 best_bw=0 cpu=0
  for ((i = 0; i < rounds; i++)); do
    local out
    # bash's `time` reports the CPU the job and its children used
    { TIMEFORMAT='%U %S'; time COLLIE_SPIN=$2 COLLIE_YIELD=$3 "$perf" -p "$1" -b 8 -e 1M -f 131072 -w 20 -n 200 \
        -c 0 --format csv >"$tmp/out"; } 2>"$tmp/time"
    out=$(cat "$tmp/out")
    cpu=$(awk '{print $1 + $2}' "$tmp/time")
    best_lat=$(echo "$out" | awk -F, -v b="$best_lat" '$3==8 {print ($8 < b) ? $8 : b}')
    best_bw=$(echo "$out" | awk -F, -v b="$best_bw" '$3==1048576 {print ($10 > b) ? $10 : b}')
  done
  echo "$best_lat $best_bw $cpu"
}

echo "# Wait policy: COLLIE_SPIN x COLLIE_YIELD"
echo
echo "Written by \`bench/wait_policy.sh\` on $(date -u '+%Y-%m-%d %H:%M') UTC; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg) at start."
echo "\`all_reduce_perf -p N -b 8 -e 1M -w 20 -n 200\`, best of $rounds rounds per cell: 8 B latency (us),"
echo "1 MiB busbw (GB/s), and the CPU seconds the last round's job used (user + system, all ranks)."
echo "Without COLLIE_SPIN set, collie uses 20 us with a core per rank and 0 when ranks outnumber cores."
for n in 2 4 8; do
  echo
  echo "## $n ranks"
  echo
  echo "| COLLIE_SPIN (us) | COLLIE_YIELD (us) | 8 B latency (us) | 1 MiB busbw (GB/s) | CPU (s) |"
  echo "|---|---|---|---|---|"
  for s in $spins; do
    for y in $yields; do
      read -r lat bw cpu < <(measure "$n" "$s" "$y")
      echo "| $s | $y | $lat | $bw | $cpu |"
    done
  done
done
