# Sourced by fuzz_campaign.sh and fault_campaign.sh.
# campaign_setup NAME SECONDS [BIN_DIR] [OUT_DIR]: reads the arguments into $bin and $out
# (a new temporary directory by default), checks the binaries, and starts the counts;
# campaign_more: whether time is left (and counts the next run in $runs).
campaign_setup() {
  name=$1
  secs=${2:?usage: $name.sh SECONDS [BIN_DIR] [OUT_DIR]}
  bin=${3:-build/bin}
  out=${4:-$(mktemp -d)}
  [ -x "$bin/collie-run" ] && [ -x "$bin/coll_check" ] || { echo "$name: no $bin/collie-run or coll_check: make build" >&2; exit 2; }
  mkdir -p "$out"
  end=$(($(date +%s) + secs))
  runs=0
  failed=0
}
campaign_more() {
  [ "$(date +%s)" -lt "$end" ] || return 1
  runs=$((runs + 1))
}

# campaign_run LIMIT_S CMD...: runs one command of a campaign within LIMIT_S seconds; a
# failure counts in $failed, and its exact command line and output go to $out/fail-$runs.
campaign_run() {
  local limit=$1
  shift
  local log rc
  log=$(timeout "$limit" "$@" 2>&1)
  rc=$?
  [ $rc = 0 ] && return 0
  failed=$((failed + 1))
  { printf '%q ' "$@"; printf '\nexit status %s\n%s\n' $rc "$log"; } >"$out/fail-$runs"
  echo "FAIL (exit status $rc), see $out/fail-$runs: $*"
}

# campaign_end: the summary line; fails when any run failed.
campaign_end() {
  echo "$name: $runs runs, $failed failed (failures in $out)"
  [ $failed = 0 ]
}
