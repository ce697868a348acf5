#!/usr/bin/env bash
# Out of memory, one allocation at a time: alloc_fail_shim (LD_PRELOAD) makes the first
# call from one place of libcollie that allocates fail with ENOMEM, in one rank of 3, for
# every such place the run reaches (found by a first run that only records them). Each
# run must end at once (well within the 30 s timeouts), without a crash, with every error
# sentence naming the rank that ran out, the rank's own sentence saying it ran out of
# memory and what to do, no timeout blamed on anyone, and nothing left in /dev/shm (a
# private one).
#   alloc_fail_test.sh COLLIE_RUN ALLOC_FAIL_RANK ALLOC_FAIL_SHIM [SCENARIO...]
# SCENARIO is TRANSPORT:VICTIM[:after-init] (shm or tcp; the rank that runs out; with
# after-init only the allocations once the communicator exists count), or `threads`: the 3
# ranks are threads of one process (collie_comm_init_all), any of them may run out, and its
# sentence must say so. A thread that cannot start (pthread_create) counts as an allocation.
set -u
run=$1
prog=$2
shim=$3
shift 3
scenarios=${*:-shm:1 tcp:1 shm:0 shm:0:after-init tcp:0:after-init threads}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v unshare >/dev/null || fail "unshare (util-linux) is missing"

# Everything runs in a mount namespace with a private /dev/shm, so that what a run leaves
# there is seen, and nothing outside is touched.
if [ -z "${ALLOC_FAIL_IN_NS:-}" ]; then
  exec timeout -s KILL 600 unshare --mount --propagation private env ALLOC_FAIL_IN_NS=1 bash "$0" "$run" "$prog" "$shim" $scenarios
fi
mount -t tmpfs -o size=512m tmpfs /dev/shm || fail "cannot mount a private /dev/shm"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export COLLIE_CONNECT_TIMEOUT=30 COLLIE_EXEC_TIMEOUT=30 COLLIE_SOCKET_IFNAME=lo
# ALLOC_FAIL_TUNED=1: with a tuning file and COLLIE_ALGO=ring (its reading, and schedules
# where the shared-memory collectives would serve).
if [ -n "${ALLOC_FAIL_TUNED:-}" ]; then
  printf '# collie tuning file\nshm.alpha_us 1.5\nshm.beta_us_per_byte 0.0001\ntcp.alpha_us 20\n' >"$dir/tune"
  export COLLIE_TUNING_FILE=$dir/tune COLLIE_ALGO=ring
fi
limit=10 # seconds a run may take: a third of the timeouts

# one_run OUT [VAR=VALUE...]: 3 ranks under the shim (as $launch says); sets rc and took.
one_run() {
  local out=$1
  shift
  local start=$(date +%s%N)
  env "$@" LD_PRELOAD="$shim" timeout -s KILL 60 "${launch[@]}" >"$out" 2>&1
  rc=$?
  took=$((($(date +%s%N) - start) / 1000000))
}

total=0
for sc in $scenarios; do
  IFS=: read -r tr victim phase <<<"$sc"
  launch=("$run" --timeout 45 -n 3 "$prog")
  [ "$sc" = threads ] && { victim=any; launch=("$prog" threads); }
  vars=(ALLOC_FAIL_RANK="$victim")
  [ "$tr" = tcp ] && vars+=(COLLIE_TRANSPORT=tcp)
  [ "$phase" = after-init ] && vars+=(ALLOC_FAIL_AFTER_INIT=1)
  rm -f "$dir/trace"
  one_run "$dir/out" "${vars[@]}" ALLOC_FAIL_TRACE="$dir/trace"
  [ "$rc" = 0 ] || { cat "$dir/out"; fail "$sc: the run without a failure failed"; }
  sites=$(awk '!seen[$0]++' "$dir/trace")
  [ -n "$sites" ] || fail "$sc: the shim saw no allocation of libcollie (is the program linked with the shared library?)"
  n=0
  for site in $sites; do
    n=$((n + 1))
    one_run "$dir/out" "${vars[@]}" ALLOC_FAIL_SITE="$site"
    what="$sc, allocation site $site ($n of $(echo "$sites" | wc -l))"
    show() { echo "== $what: exit $rc after $took ms"; cat "$dir/out"; }
    { [ "$rc" = 137 ] || [ "$rc" = 124 ] || [ "$took" -ge $((limit * 1000)) ]; } &&
      { show; fail "$what: the run took $took ms (hung, or waited for a timeout)"; }
    grep -q "killed by signal" "$dir/out" && { show; fail "$what: a rank crashed"; }
    [ "$rc" -lt 128 ] || { show; fail "$what: exit status $rc"; }
    errors=$(grep "^alloc_fail_rank: [^:]*: .* failed: " "$dir/out")
    if [ -n "$errors" ]; then
      echo "$errors" | grep -q "timeout expired" && { show; fail "$what: a rank waited for a timeout"; }
      echo "$errors" | grep "out of memory\|Cannot allocate memory" | grep -v "free memory" &&
        { show; fail "$what: a sentence says memory ran out but not what to do"; }
      if [ "$victim" = any ]; then
        echo "$errors" | grep -q "out of memory\|Cannot allocate memory\|could not start" ||
          { show; fail "$what: no error says that memory ran out"; }
      else
        # collie_mem_alloc belongs to no communicator: its sentence has no rank to name.
        echo "$errors" | grep -v ": mem_alloc failed: " | sed 's/^alloc_fail_rank: rank [^:]*: [^:]*: [^:]*://' |
          grep -v "rank $victim\b" &&
          { show; fail "$what: an error does not name rank $victim, the one that ran out of memory"; }
        own=$(echo "$errors" | grep "^alloc_fail_rank: rank $victim: ")
        [ -z "$own" ] || echo "$own" | grep -q "out of memory\|Cannot allocate memory\|could not start" ||
          { show; fail "$what: rank $victim's error does not say it ran out of memory"; }
      fi
    fi
    left=$(ls -A /dev/shm)
    [ -z "$left" ] || { show; fail "$what: left in /dev/shm: $left"; }
    if [ -n "${ALLOC_FAIL_VERBOSE:-}" ]; then show; fi
  done
  echo "== $sc: $n allocation sites, each failed once: every run ended at once and named rank $victim (any: threads)"
  total=$((total + n))
done
# The root address cannot be resolved for want of memory (glibc's getaddrinfo gives
# EAI_MEMORY): COLLIE_ERR_SYSTEM with what to do, not an invalid address.
COLLIE_RANK=1 COLLIE_NRANKS=2 COLLIE_ROOT_ADDR=localhost:1 ALLOC_FAIL_RANK=1 ALLOC_FAIL_GETADDRINFO=1 \
  LD_PRELOAD="$shim" timeout -s KILL 30 "$prog" >"$dir/out" 2>&1
grep -q "init failed: system call failed: .*cannot resolve host 'localhost': Memory allocation failure; free memory" \
  "$dir/out" || { cat "$dir/out"; fail "an address not resolved for want of memory was not a system error saying so"; }
echo "PASS: $total runs, each with one allocation failing; getaddrinfo out of memory"
