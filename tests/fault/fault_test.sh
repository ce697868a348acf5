#!/usr/bin/env bash
# Failure scenarios with ranks started by hand (COLLIE_RANK/COLLIE_NRANKS/COLLIE_ROOT_ADDR),
# judged from outside: a killed peer, timeouts, a stranger on the bootstrap port.
#
#   fault_test.sh BIN kill NRANKS VICTIM shm|tcp ring|allreduce|broadcast [forked]
#     forked: the victim first forks a child that outlives it, holding copies of its
#     descriptors (as a data-loader worker does)
#   fault_test.sh BIN exec-timeout | test-timeout | connect-timeout | junk | slow-destroy
#   fault_test.sh BIN dead-in-destroy NRANKS VICTIM shm|tcp
#   fault_test.sh BIN other-build OTHER_BUILD_BIN
set -u
bin=$1
scenario=$2
other_build=${3:-}
shift 2
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -s "$dir/child.pid" ] && kill -9 "$(cat "$dir/child.pid")" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
die() { echo "FAIL: $*" >&2; for f in "$dir"/*.out; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
export COLLIE_ROOT_ADDR=127.0.0.1:$port COLLIE_JOB_ID=fault-$$ COLLIE_SOCKET_IFNAME=lo COLLIE_CONNECT_TIMEOUT=20

start_rank() { # rank nranks args...
  local r=$1 n=$2
  shift 2
  COLLIE_RANK=$r COLLIE_NRANKS=$n "$bin" "$@" >"$dir/$r.out" 2>&1 &
  pids[$r]=$!
}

# Waits until pid exits or the deadline (epoch seconds) passes; sets st to the exit status
# or "alive". (Not in a subshell: only this shell can wait for its children.)
wait_until() {
  local pid=$1 deadline=$2
  while kill -0 "$pid" 2>/dev/null; do
    if (($(echo "$(date +%s.%N) > $deadline" | bc))); then
      st=alive
      return
    fi
    sleep 0.05
  done
  wait "$pid"
  st=$?
}

# Two ranks run the same scenario; both must pass within 30 s.
run_pair() { # scenario, what a pass means
  start_rank 0 2 "$1"
  start_rank 1 2 "$1"
  local deadline
  deadline=$(echo "$(date +%s.%N) + 30" | bc)
  for r in 0 1; do
    wait_until "${pids[$r]}" "$deadline"
    [ "$st" = 0 ] || die "rank $r: $st"
  done
  cat "$dir"/*.out
  echo "PASS: $2"
}

case $scenario in
kill)
  n=$1 victim=$2 transport=$3 mode=$4 forked=${5:-}
  [ "$transport" = tcp ] && export COLLIE_TRANSPORT=tcp
  [ "$forked" = forked ] && export FAULT_FORK_CHILD=$dir/child.pid
  for ((r = 0; r < n; r++)); do start_rank $r $n loop "$victim" "$mode"; done
  for _ in $(seq 300); do
    ready=$(cat "$dir"/*.out 2>/dev/null | grep -c ready)
    [ "$ready" -eq "$n" ] && break
    sleep 0.1
  done
  [ "$ready" -eq "$n" ] || die "only $ready of $n ranks became ready"
  if [ "$forked" = forked ]; then
    [ -s "$dir/child.pid" ] && kill -0 "$(cat "$dir/child.pid")" || die "the victim's child is not running"
  fi
  sleep 0.5
  kill -9 "${pids[$victim]}"
  killed_at=$(date +%s.%N)
  deadline=$(echo "$killed_at + 10" | bc)
  for ((r = 0; r < n; r++)); do
    [ $r -eq "$victim" ] && continue
    wait_until "${pids[$r]}" "$deadline"
    [ "$st" = alive ] && die "rank $r did not report the death of rank $victim within 10 s"
    [ "$st" = 0 ] || die "rank $r exited with $st"
  done
  took=$(echo "$(date +%s.%N) - $killed_at" | bc)
  cat "$dir"/*.out | grep error
  echo "PASS: every survivor reported rank $victim within ${took} s ($n ranks, $transport, $mode)"
  ;;
exec-timeout | test-timeout)
  export COLLIE_EXEC_TIMEOUT=2
  run_pair "$scenario" "exec timeout reported on both ranks"
  ;;
slow-destroy)
  export COLLIE_EXEC_TIMEOUT=2
  run_pair slow-destroy "destroy is bounded by the exec timeout"
  ;;
dead-in-destroy)
  # The victim exits without destroying while the others are in their destroy: they must
  # finish within 5 s (not after COLLIE_EXEC_TIMEOUT, 60 s here) and log its death.
  n=$1 victim=$2 transport=$3
  [ "$transport" = tcp ] && export COLLIE_TRANSPORT=tcp
  export COLLIE_EXEC_TIMEOUT=60
  for ((r = 0; r < n; r++)); do start_rank $r $n dead-in-destroy "$victim"; done
  deadline=$(echo "$(date +%s.%N) + 30" | bc)
  for ((r = 0; r < n; r++)); do
    wait_until "${pids[$r]}" "$deadline"
    [ "$st" = 0 ] || die "rank $r: $st"
    [ $r -eq "$victim" ] && continue
    grep -q "rank $victim (pid .*died or closed its connection" "$dir/$r.out" ||
      die "rank $r did not name rank $victim's death"
  done
  cat "$dir"/*.out
  echo "PASS: the destroys ended and named rank $victim ($n ranks, $transport)"
  ;;
connect-timeout)
  # Nobody listens on the port: rank 1 must give up after COLLIE_CONNECT_TIMEOUT. A socket
  # bound to the port without listening holds it meanwhile (connections are refused), so
  # that no test running beside this one can take it and answer.
  export COLLIE_CONNECT_TIMEOUT=2
  /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); print("held", flush=True); time.sleep(60)' "$port" \
    >"$dir/hold.out" 2>&1 &
  pids[100]=$! # killed by cleanup
  for _ in $(seq 100); do grep -q held "$dir/hold.out" 2>/dev/null && break; sleep 0.05; done
  grep -q held "$dir/hold.out" || die "could not hold port $port"
  start_rank 1 2 connect-timeout
  wait_until "${pids[1]}" "$(echo "$(date +%s.%N) + 15" | bc)"
  [ "$st" = 0 ] || die "rank 1: $st"
  cat "$dir"/1.out
  echo "PASS: connect timeout"
  ;;
junk)
  # A stranger connects to rank 0's bootstrap port and sends garbage before rank 1 joins.
  start_rank 0 2 join
  for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/$port && printf 'GET / HTTP/1.0\r\n\r\nnot a collie rank' >&3 && sleep 0.2) 2>/dev/null && break
    sleep 0.1
  done
  (exec 3<>/dev/tcp/127.0.0.1/$port && head -c 100000 /dev/urandom >&3) 2>/dev/null
  start_rank 1 2 join
  deadline=$(echo "$(date +%s.%N) + 20" | bc)
  for r in 0 1; do
    wait_until "${pids[$r]}" "$deadline"
    [ "$st" = 0 ] || die "rank $r: $st"
  done
  grep -q "dropped a connection" "$dir/0.out" || die "rank 0 did not log the dropped stranger"
  cat "$dir"/*.out
  echo "PASS: the stranger was dropped and the ranks met"
  ;;
other-build)
  # Rank 1 runs another build of the same version (its greeting has another size): rank 0
  # must refuse it at once, naming the builds, where it dropped it as a stranger and
  # waited for the connect timeout (20 s here).
  start=$(date +%s.%N)
  start_rank 0 2 join
  COLLIE_RANK=1 COLLIE_NRANKS=2 "$other_build" >"$dir/1.out" 2>&1 &
  pids[1]=$!
  deadline=$(echo "$start + 10" | bc)
  for r in 0 1; do
    wait_until "${pids[$r]}" "$deadline"
    [ "$st" != alive ] || die "rank $r still runs after 10 s"
  done
  wait "${pids[1]}"; st1=$?
  [ "$st1" = 0 ] || die "the other build was not told that the builds differ"
  grep -q "different builds of the same version" "$dir/0.out" || die "rank 0 did not name the different builds"
  cat "$dir"/*.out
  echo "PASS: the other build was refused at once on both sides"
  ;;
*)
  echo "unknown scenario $scenario" >&2
  exit 2
  ;;
esac
