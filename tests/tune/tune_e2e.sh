#!/usr/bin/env bash
# tune_end_to_end: collie-tune measures this machine and writes a tuning file (in well
# under 20 s); all_reduce_perf on 2 ranks runs with it (COLLIE_TUNING_FILE), its checks
# pass, and the TUNE log names the file as the source of the figures. A malformed file and
# an unknown COLLIE_PROTO make communicator creation fail with a sentence that says why.
# Usage: tune_e2e.sh PATH/TO/collie-tune PATH/TO/all_reduce_perf
set -uo pipefail
tune=${1:?usage: tune_e2e.sh COLLIE_TUNE ALL_REDUCE_PERF}
perf=${2:?usage: tune_e2e.sh COLLIE_TUNE ALL_REDUCE_PERF}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/collie-tune-e2e.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset COLLIE_TUNING_FILE COLLIE_PROTO COLLIE_ALGO COLLIE_DEBUG COLLIE_DEBUG_SUBSYS COLLIE_DEBUG_FILE
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
show() { sed 's/^/    /' "$@"; }

# --- collie-tune: usage --------------------------------------------------------------------
"$tune" --help >"$tmp/help" 2>&1 || fail "collie-tune --help exited $?"
grep -q 'usage: collie-tune' "$tmp/help" || fail "collie-tune --help prints no usage"
"$tune" --bogus >"$tmp/bad" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "collie-tune --bogus exited $rc, not 2"

# --- collie-tune writes a file -------------------------------------------------------------
file=$tmp/machine.tune
start=$EPOCHREALTIME
"$tune" -o "$file" >"$tmp/tune.out" 2>"$tmp/tune.err"
rc=$?
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
echo "collie-tune took $secs s"
show "$tmp/tune.err"
if [ $rc -ne 0 ]; then
  fail "collie-tune exited $rc"
  show "$tmp/tune.out"
fi
awk -v s="$secs" 'BEGIN { exit !(s < 20) }' || fail "collie-tune took $secs s (at most 20 s allowed)"
[ -s "$file" ] || fail "collie-tune wrote no $file"
ls "$tmp" | grep -q '\.tmp\.' && fail "collie-tune left a temporary file behind"
for key in shm.alpha_us shm.beta_us_per_byte tcp.alpha_us tcp.beta_us_per_byte gamma_us_per_byte \
           delta_us_per_byte oversub.alpha_scale; do
  line=$(grep -E "^$key " "$file")
  [ -n "$line" ] || { fail "the file has no $key"; continue; }
  val=${line#"$key "}
  echo "$val" | grep -Eq '^[0-9.]+(e[-+]?[0-9]+)?$' || fail "$key has the value '$val'"
done
head -1 "$file" | grep -q '^# collie tuning file' || fail "the file has no comment header"
echo "--- $file"
show "$file"

# --- all_reduce_perf runs with it ----------------------------------------------------------
COLLIE_TUNING_FILE=$file COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=TUNE \
  "$perf" -p 2 -b 8 -e 1M -f 32 >"$tmp/perf.out" 2>"$tmp/perf.err"
rc=$?
[ $rc -eq 0 ] || fail "all_reduce_perf with COLLIE_TUNING_FILE exited $rc"
rows=$(grep -vc '^#' "$tmp/perf.out")
[ "$rows" -eq 4 ] || fail "all_reduce_perf printed $rows data rows, not 4 (8 B to 1 MiB by 32)"
awk '!/^#/ && (NF != 13 || $9 != 0 || $13 != 0) { bad = 1 } END { exit bad }' "$tmp/perf.out" ||
  fail "a data row has wrong elements or not 13 columns"
grep -q '# Out of bounds values : 0 OK' "$tmp/perf.out" || fail "all_reduce_perf's checks did not pass"
grep -q "TUNE tuning table .*source $file" "$tmp/perf.err" ||
  fail "the TUNE log does not name $file as the source of the table"
grep -q "TUNE cost model for communicator .*transport shm .*source $file" "$tmp/perf.err" ||
  fail "the TUNE log does not say the communicator weighs the shm figures from $file"
grep -Eq 'TUNE allreduce: 8 bytes on 2 ranks -> [a-z]+ \(cost model\); estimates over shm: ' "$tmp/perf.err" ||
  fail "the TUNE log shows no estimates for the 8-byte allreduce"
[ "$(grep -c 'TUNE tuning table' "$tmp/perf.err")" -eq 1 ] ||
  fail "the table is not printed exactly once (by rank 0)"
if [ $fails -ne 0 ]; then
  echo "--- all_reduce_perf stdout"; show "$tmp/perf.out"
  echo "--- all_reduce_perf stderr"; show "$tmp/perf.err"
fi
grep -m3 'TUNE' "$tmp/perf.err"

# --- a malformed file is refused, naming the line ------------------------------------------
printf '# hand edited\nshm.alpha_us 1.5\nshm.beta_us_per_byte 5GB/s\n' >"$tmp/bad.tune"
COLLIE_TUNING_FILE=$tmp/bad.tune "$perf" -p 2 -b 8 -e 8 >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
[ $rc -ne 0 ] || fail "all_reduce_perf ran with a malformed tuning file"
grep -q "invalid argument.*COLLIE_TUNING_FILE: $tmp/bad.tune line 3: 'shm.beta_us_per_byte 5GB/s'" "$tmp/bad.err" ||
  { fail "the error does not name the file and line 3"; show "$tmp/bad.err"; }

# --- an unknown protocol is refused, listing the valid ones --------------------------------
COLLIE_PROTO=ll128 "$perf" -p 2 -b 8 -e 8 >"$tmp/proto.out" 2>"$tmp/proto.err"
rc=$?
[ $rc -ne 0 ] || fail "all_reduce_perf ran with COLLIE_PROTO=ll128"
grep -q "unknown protocol 'll128'; valid names: auto (the default), simple, ll" "$tmp/proto.err" ||
  { fail "the COLLIE_PROTO error does not list the valid names"; show "$tmp/proto.err"; }
COLLIE_PROTO=ll "$perf" -p 2 -b 8 -e 64K -f 64 >"$tmp/ll.out" 2>&1 || fail "COLLIE_PROTO=ll failed"

if [ $fails -ne 0 ]; then
  echo "tune_end_to_end: $fails check(s) FAILED"
  exit 1
fi
echo "tune_end_to_end: all checks passed"
