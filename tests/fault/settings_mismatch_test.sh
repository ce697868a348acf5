#!/usr/bin/env bash
# Settings that ranks must share, set differently on some ranks (a variable exported on one
# host only, mpirun without -x): creation must fail on every rank at once with a sentence
# naming the variable and the ranks, where before the job hung until COLLIE_EXEC_TIMEOUT
# (COLLIE_ALGO, COLLIE_TUNING_FILE), failed later with a puzzling mismatch
# (COLLIE_CHUNK_SIZE) or waited out the connect timeout (COLLIE_TCP_NSOCKS). Settings that
# may differ, and shared-memory sizes that differ only between hosts, must still work.
#   settings_mismatch_test.sh COLLIE_RUN COLL_CHECK
set -u
run=$1
check=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
printf 'gamma_us_per_byte 0.5\n' >"$dir/slow_reduce.tune"

# job NRANKS "ENV of rank 0" "ENV of rank 1" ...: runs a few collectives on every rank,
# each with its own assignments (space-separated) on top of the common environment.
job() {
  local n=$1
  shift
  local i=0
  for e in "$@"; do export "RANK_ENV_$i=$e"; i=$((i + 1)); done
  for ((; i < n; i++)); do export "RANK_ENV_$i="; done
  start=$(date +%s.%N)
  COLLIE_CONNECT_TIMEOUT=30 COLLIE_EXEC_TIMEOUT=30 "$run" --timeout 60 -n "$n" --tag-output -- bash -c '
    v=RANK_ENV_$COLLIE_RANK
    for a in ${!v}; do export "$a"; done
    exec "$0" --dtypes quick --coll allreduce,allgather,broadcast,alltoall' "$check" >"$dir/out" 2>&1
  rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
}

# refused NRANKS VARIABLE "ranks A and B" ENVS...: every rank gives the sentence, quickly.
refused() {
  local n=$1 var=$2 pair=$3
  shift 3
  job "$n" "$@"
  echo "== $var set differently ($*): exit $rc after $took s"
  grep -v ': OK' "$dir/out" | head -3
  [ "$rc" != 0 ] || fail "the ranks ran with $var set differently ($*)"
  [ "$rc" != 124 ] || fail "the job hung with $var set differently ($*)"
  local told
  told=$(grep -c "$pair\( of host [^ ]*\)\? disagree on $var.*set it the same way everywhere (mpirun -x $var" "$dir/out")
  [ "$told" = "$n" ] || fail "$told of $n ranks said that $pair disagree on $var"
  (($(echo "$took < 10" | bc))) || fail "the refusal took $took s"
}

works() {
  local what=$1 n=$2
  shift 2
  job "$n" "$@"
  echo "== $what: exit $rc after $took s"
  [ "$rc" = 0 ] || { cat "$dir/out"; fail "$what: the job failed"; }
  local ok
  ok=$(grep -c "coll_check: rank [0-9]*: [1-9][0-9]* cases OK" "$dir/out")
  [ "$ok" = "$n" ] || { cat "$dir/out"; fail "$what: $ok of $n ranks checked their cases"; }
}

refused 3 COLLIE_ALGO "ranks 0 and 2" "" "" "COLLIE_ALGO=ring"
refused 3 COLLIE_ALGO "ranks 0 and 1" "COLLIE_ALGO=allreduce:tree" "COLLIE_ALGO=allreduce:ring" "COLLIE_ALGO=allreduce:tree"
refused 3 COLLIE_TUNING_FILE "ranks 0 and 1" "" "COLLIE_TUNING_FILE=$dir/slow_reduce.tune"
refused 3 COLLIE_CHUNK_SIZE "ranks 0 and 1" "COLLIE_CHUNK_SIZE=4K"
refused 2 COLLIE_TCP_NSOCKS "ranks 0 and 1" "COLLIE_TRANSPORT=tcp" "COLLIE_TRANSPORT=tcp COLLIE_TCP_NSOCKS=3"
# Two hosts (as COLLIE_HOST_ID says): the shared-memory sizes must agree within a host only.
refused 4 COLLIE_SHM_NSLOTS "ranks 2 and 3" "COLLIE_HOST_ID=a" "COLLIE_HOST_ID=a" "COLLIE_HOST_ID=b COLLIE_SHM_NSLOTS=4" "COLLIE_HOST_ID=b"
refused 3 COLLIE_SHM_SLOT_SIZE "ranks 0 and 1" "" "COLLIE_SHM_SLOT_SIZE=64K"
# Unset, the collective area has buffers of 1M while a host's segments fit in 48 MiB, with
# rounds of 1M where the host's ranks outnumber its online CPUs and of 256K (which no value
# sets: a value sets both) where they do not: 512K differs from every case, 1M agrees with
# unset only for more ranks than CPUs.
refused 3 COLLIE_SHM_COLL_SIZE "ranks 0 and 1" "" "COLLIE_SHM_COLL_SIZE=512K"
cpus=$(getconf _NPROCESSORS_ONLN)
if [ 3 -gt "$cpus" ]; then
  works "COLLIE_SHM_COLL_SIZE=1M (what unset means for 3 ranks on $cpus CPUs) on one rank" 3 "" "COLLIE_SHM_COLL_SIZE=1M"
else
  refused 3 COLLIE_SHM_COLL_SIZE "ranks 0 and 1" "" "COLLIE_SHM_COLL_SIZE=1M"
fi
[ 2 -le "$cpus" ] && refused 2 COLLIE_SHM_COLL_SIZE "ranks 0 and 1" "" "COLLIE_SHM_COLL_SIZE=1M"
# A value refused on one rank only (exported on one host): every rank must give its
# sentence at once; the others waited out COLLIE_CONNECT_TIMEOUT ("missing: 2").
for who in 0 2; do
  envs=("" "" "")
  envs[$who]="COLLIE_TCP_NSOCKS=99"
  job 3 "${envs[@]}"
  echo "== COLLIE_TCP_NSOCKS=99 on rank $who only: exit $rc after $took s"
  told=$(grep -c "rank $who: COLLIE_TCP_NSOCKS='99' is outside 1 to 16" "$dir/out")
  [ "$told" = 3 ] || { cat "$dir/out"; fail "$told of 3 ranks gave rank $who's sentence about COLLIE_TCP_NSOCKS=99"; }
  (($(echo "$took < 10" | bc))) || fail "the refusal took $took s"
done
works "another COLLIE_SHM_NSLOTS on the second host" 4 "COLLIE_HOST_ID=a" "COLLIE_HOST_ID=a" "COLLIE_HOST_ID=b COLLIE_SHM_NSLOTS=4" "COLLIE_HOST_ID=b COLLIE_SHM_NSLOTS=4"
works "another COLLIE_SHM_COLL_SIZE on the second host (no host has every rank: no area)" 4 "COLLIE_HOST_ID=a" "COLLIE_HOST_ID=a" "COLLIE_HOST_ID=b COLLIE_SHM_COLL_SIZE=0" "COLLIE_HOST_ID=b COLLIE_SHM_COLL_SIZE=0"
works "COLLIE_TCP_NSOCKS on one rank, one host, shared memory" 3 "" "COLLIE_TCP_NSOCKS=3"
works "COLLIE_CHUNK_SIZE=64K (what unset means on one host) on one rank" 3 "COLLIE_CHUNK_SIZE=64K"
works "COLLIE_CHUNK_SIZE=1M (what unset means with TCP) on the rank that forces TCP" 3 "" "COLLIE_TRANSPORT=tcp COLLIE_CHUNK_SIZE=1M"
works "COLLIE_ALGO written two ways" 3 "COLLIE_ALGO=allreduce:ring;allgather:ring" "COLLIE_ALGO=allreduce:ring,allgather:ring" "COLLIE_ALGO=allreduce:ring;;allgather:ring"
works "settings each rank may choose for itself" 4 "COLLIE_SHM_DIRECT=0 COLLIE_SPIN=0" "COLLIE_STREAM_BYTES=1K COLLIE_SHM_CMA=1" "COLLIE_YIELD=0 COLLIE_REDUCE_ISA=portable" "COLLIE_TCP_STRIPE_MIN=4K COLLIE_SHM_CMA=0"
echo "PASS: every setting the ranks must share was refused on every rank at once when it differed; the others ran"
