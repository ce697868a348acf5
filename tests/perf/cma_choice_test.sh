#!/usr/bin/env bash
# COLLIE_SHM_CMA unset: at creation local ranks 0 and 1 time an exchange by
# process_vm_readv against one through the shared-memory ring (transport/shm_cma_choice.c);
# rank 0 logs the outcome once, and every other rank logs that it follows it. Whichever
# way this machine measures faster, a 2-rank broadcast across 16 MiB (where, with the ring
# chosen, the broadcast turns to CMA) and an all-to-all on 4 ranks (2 measure, 2 wait for
# the answer) must give checked results. With COLLIE_SHM_CMA set nothing is measured.
#   cma_choice_test.sh BIN_DIR
set -u
bin=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
export COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=TRANSPORT COLLIE_CONNECT_TIMEOUT=30 COLLIE_EXEC_TIMEOUT=60
unset COLLIE_SHM_CMA
fail() { cat "$out"; echo "FAIL: $*" >&2; exit 1; }
measured='measured against the shared-memory ring \(1 MiB both ways between ranks 0 and 1, best of 5\): [0-9.]+ us against [0-9.]+ us, so (on|off)'

follows='process_vm_readv (on|off) for messages, as rank 0 measured'

run() { # the rank count that measures (0: none), then the perf command
  local ranks=$1
  shift
  "$@" >"$out" 2>&1 || fail "$* exited with $?"
  grep -q '^# Out of bounds values : 0 OK' "$out" || fail "$*: wrong results"
  local got followers
  got=$(grep -cE "$measured" "$out")
  [ "$got" = "$((ranks > 0))" ] ||
    fail "$*: $got measurement line(s), expected $((ranks > 0)) (none: could the ranks read each other with process_vm_readv? the log above says)"
  followers=$(grep -cE "$follows" "$out")
  [ "$ranks" = 0 ] || [ "$followers" = "$((ranks - 1))" ] || fail "$*: $followers rank(s) said what they follow, expected $((ranks - 1))"
  if [ "$ranks" -gt 0 ]; then
    local verdict
    verdict=$(grep -oE "$measured" "$out" | grep -oE '(on|off)$')
    [ "$(grep -cE "process_vm_readv $verdict for messages, as rank 0 measured" "$out")" = "$((ranks - 1))" ] ||
      fail "$*: a rank did not follow rank 0's verdict ($verdict)"
  fi
  grep -E "$measured" "$out" | sed 's/.*COLLIE INFO TRANSPORT /  /'
}
run 2 "$bin/broadcast_perf" -p 2 -b 8M -e 32M -f 2 -r all -c 2 -n 2 -w 1
run 4 "$bin/alltoall_perf" -p 4 -b 256K -e 4M -f 4 -c 2 -n 2 -w 1
COLLIE_SHM_CMA=1 run 0 "$bin/sendrecv_perf" -p 2 -b 1M -e 1M -c 2 -n 2 -w 1
echo "PASS: measured once per communicator, results correct either way"
