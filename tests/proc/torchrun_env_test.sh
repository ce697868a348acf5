#!/usr/bin/env bash
# Ranks started the torchrun way (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) call
# collie_comm_init_env. Under torchrun, its elastic agent holds MASTER_PORT with its
# rendezvous store (TORCHELASTIC_USE_AGENT_STORE=True): collie must meet on MASTER_PORT + 1
# (rank 0 failed with "Address already in use"). Without torchrun's variables MASTER_PORT is
# used as given, and a port another program holds is named with what to do.
#   torchrun_env_test.sh COLL_CHECK
set -u
check=$1
dir=$(mktemp -d)
holder=
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || fail "python3 is missing (scripts/install-deps.sh installs it)"

# Two free neighbouring ports, picked now: MASTER_PORT and the one above.
port=$(python3 "$(dirname "$0")/../common/free_ports.py" 2)
[ -n "$port" ] || fail "found no two free neighbouring ports"

# ranks N VAR=VALUE...: N ranks of coll_check with the torchrun variables and these.
ranks() {
  local n=$1
  shift
  pids=()
  for r in $(seq 0 $((n - 1))); do
    env -u COLLIE_ROOT_ADDR RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port COLLIE_CONNECT_TIMEOUT=5 "$@" timeout -s KILL 60 "$check" --dtypes quick \
      --coll allreduce,broadcast >"$dir/$r.out" 2>&1 &
    pids+=($!)
  done
  bad=0
  for r in $(seq 0 $((n - 1))); do wait "${pids[$r]}" || bad=1; done
}

# The agent's store: a socket listening on MASTER_PORT, as torchrun's agent holds it.
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(16)
open('$dir/ready', 'w').close()
time.sleep(120)" &
holder=$!
for _ in $(seq 100); do [ -e "$dir/ready" ] && break; sleep 0.05; done
[ -e "$dir/ready" ] || fail "the stand-in for torchrun's store did not start"

ranks 3 TORCHELASTIC_RUN_ID=job-$$ TORCHELASTIC_USE_AGENT_STORE=True
for r in 0 1 2; do echo "--- rank $r"; cat "$dir/$r.out"; done
[ $bad = 0 ] || fail "3 ranks under torchrun's variables failed while its store held MASTER_PORT $port"
for r in 0 1 2; do grep -q "coll_check: rank $r: .* cases OK" "$dir/$r.out" || fail "rank $r checked nothing"; done
echo "== under torchrun: collie met on MASTER_PORT + 1 while MASTER_PORT was held"

ranks 2
cat "$dir/0.out"
[ $bad = 1 ] || fail "2 ranks ran on MASTER_PORT $port while another program held it"
grep -q "rank 0 could not listen on 127.0.0.1:$port from the unique id: Address already in use; another program holds that port .*COLLIE_ROOT_ADDR=host:port" "$dir/0.out" ||
  fail "rank 0 did not say that another program holds MASTER_PORT"
echo "== without torchrun's variables a held MASTER_PORT is named"

kill "$holder"
wait "$holder" 2>/dev/null
holder=
ranks 2
[ $bad = 0 ] || { cat "$dir/0.out" "$dir/1.out"; fail "2 ranks failed on a free MASTER_PORT $port"; }
echo "PASS: torchrun's held MASTER_PORT avoided, a held port named, a free one used"
