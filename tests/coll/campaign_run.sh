# Sourced by fuzz_campaign.sh and fault_campaign.sh: campaign_run LIMIT_S CMD... runs one
# command of a campaign within LIMIT_S seconds; a failure counts in $failed, and its exact
# command line and output go to $out/fail-$runs.
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
