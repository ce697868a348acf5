#!/usr/bin/env bash
# COLLIE_PORT_RANGE: a malformed range is refused on every rank (it was ignored, and collie
# listened on any port, past what a firewall opens); a range too small for the ranks of a
# host makes the rank left without a port say so, and every other rank repeat its sentence
# at once (they waited out COLLIE_CONNECT_TIMEOUT after "rank 0 died, dropped us").
# A split whose new rank 0 finds no port fails on every rank at once, saying so (the
# other members waited out COLLIE_EXEC_TIMEOUT).
#   port_range_test.sh COLLIE_RUN COLL_CHECK FAULT_RANK
set -u
run=$1
check=$2
fault_rank=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ranks() { COLLIE_CONNECT_TIMEOUT=20 "$run" --timeout 60 --grace 30 -n 3 --tag-output "$check" --dtypes quick --coll allreduce >"$out" 2>&1; }

for range in 29800-29700 abc 0-10 100-70000 100-200x; do
  COLLIE_PORT_RANGE=$range ranks && fail "COLLIE_PORT_RANGE=$range was accepted"
  told=$(grep -c "COLLIE_PORT_RANGE='$range' is not a range of ports: write LOW-HIGH" "$out")
  [ "$told" = 3 ] || { cat "$out"; fail "$told of 3 ranks refused COLLIE_PORT_RANGE=$range"; }
done
echo "== malformed ranges refused on every rank"

# Six free neighbouring ports, picked now (no fixed port): the first two are one short for
# 3 ranks over TCP, all six enough.
port=$(python3 "$(dirname "$0")/../common/free_ports.py" 6)
[ -n "$port" ] || fail "found no six free neighbouring ports"
range=$port-$((port + 1))
start=$(date +%s)
COLLIE_TRANSPORT=tcp COLLIE_PORT_RANGE=$range ranks && { cat "$out"; fail "3 ranks over TCP ran with 2 ports"; }
took=$(($(date +%s) - start))
cat "$out"
told=$(grep -c "found no free port in COLLIE_PORT_RANGE=$range on .* widen the range" "$out")
[ "$told" = 3 ] || fail "$told of 3 ranks named the range that was too small"
# Only the rank without a port had a system call fail; the others report a peer's failure.
own=$(grep -c "init_env: system call failed: rank [0-9]* found no free port" "$out")
relayed=$(grep -c "init_env: remote peer failed or closed its connection: .*rank [0-9]* failed while \(joining\|creating\)" "$out")
[ "$own" = 1 ] && [ "$relayed" = 2 ] || fail "$own rank(s) returned COLLIE_ERR_SYSTEM for its own failure and $relayed COLLIE_ERR_REMOTE for it (want 1 and 2)"
[ $took -le 10 ] || fail "the ranks took $took s (COLLIE_CONNECT_TIMEOUT=20)"
COLLIE_TRANSPORT=tcp COLLIE_PORT_RANGE=$port-$((port + 5)) ranks || { cat "$out"; fail "6 ports were not enough for 3 ranks"; }
# The unique id's socket takes a port of the range too: 2 ranks of collie_comm_init_all
# need 3, and the sentence must say so (it said one per rank).
threads() { COLLIE_TRANSPORT=tcp COLLIE_CONNECT_TIMEOUT=20 COLLIE_PORT_RANGE=$port-$1 timeout 60 "$check" --threads 2 --dtypes quick --coll allreduce >"$out" 2>&1; }
threads $((port + 1)) && { cat "$out"; fail "2 threads over TCP ran with 2 ports (one was the unique id's)"; }
grep -q "widen the range (every rank of a host needs a port of it per communicator, and the unique id or split being created one more)" "$out" || { cat "$out"; fail "the sentence did not count the unique id's port"; }
threads $((port + 2)) || { cat "$out"; fail "3 ports were not enough for 2 threads"; }
# 3 ranks over shared memory: a port each (rank 0's bootstrap socket is collie-run's), none
# left for the split's new rank 0.
COLLIE_EXEC_TIMEOUT=60 COLLIE_PORT_RANGE=$port-$((port + 2)) "$run" --timeout 60 -n 3 --tag-output "$fault_rank" split >"$out" 2>&1 ||
  { cat "$out"; fail "a split without a port for its rank 0 did not fail on every rank within 5 s, saying why"; }
cat "$out"
echo "PASS: malformed ranges refused; a range one port short named by all 3 ranks after $took s; 6 ports enough; a split without a port named on every rank"
