#!/usr/bin/env bash
# Two real "hosts" on this machine: network namespaces joined by veth pairs to a bridge (in
# a third namespace), each with its own hostname, /etc/hosts and private /dev/shm (mount
# namespace held by a sleeping process). Ranks 0 and 1 on hostA, rank 2 on hostB, started
# by hand (COLLIE_RANK/COLLIE_NRANKS/COLLIE_ROOT_ADDR), without COLLIE_SOCKET_IFNAME.
#   1. COLLIE_ROOT_ADDR=hostA:PORT, where hostA's /etc/hosts maps its own name to
#      127.0.1.1 (as Debian does) and hostB's to hostA's bridge address: the interface
#      auto-selection must advertise reachable addresses; coll_check must pass, with shared
#      memory between ranks 0 and 1 and TCP to rank 2.
#   2. A root address whose packets are dropped silently: the joining rank must give up
#      within COLLIE_CONNECT_TIMEOUT (a blocking connect waited about 130 s).
#   3. Rank 1 advertises an address hostB has no working route to: every rank must give
#      rank 2's sentence ("could not connect to rank 1 ... No route to host"), not the
#      vaguer timeouts of the ranks that waited for it (which won the race before).
#   4. HostB drops off the network while its rank is in a collective: ranks 0 and 1 must
#      say that rank 2 stopped answering within COLLIE_KEEPALIVE, not after
#      COLLIE_EXEC_TIMEOUT; a rank stopped (SIGSTOP) for longer than that must not be
#      declared lost: its kernel still answers.
# Needs root, ip (iproute2) and unshare/nsenter (util-linux); fails, never skips, without.
#   netns_hosts_test.sh COLL_CHECK ALL_REDUCE_PERF
set -u
check=$1
perf=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
p=cnh$$ # names unique to this run
dir=$(mktemp -d)
. "$(dirname "$0")/../common/netns_hosts.sh"
netns_hosts_trap "$dir"
net=10.231.77
netns_hosts_up $p "$dir" $net 2

unset COLLIE_SOCKET_IFNAME COLLIE_HOST_ID COLLIE_TRANSPORT COLLIE_ROOT_ADDR MASTER_ADDR MASTER_PORT
export COLLIE_NRANKS=3 COLLIE_CONNECT_TIMEOUT=20 COLLIE_EXEC_TIMEOUT=30 COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=INIT \
  COLLIE_ROOT_ADDR=hostA:29577
args=(--dtypes quick --coll allreduce,allgather,broadcast,reduce_scatter,alltoall,p2p)
start=$(date +%s)
pids=()
for r in 0 1 2; do
  h=${holders[0]}
  [ $r = 2 ] && h=${holders[1]}
  COLLIE_RANK=$r timeout -s KILL 60 nsenter -t "$h" -m -n -u "$check" "${args[@]}" >"$dir/$r.out" 2>&1 &
  pids+=($!)
done
bad=0
for r in 0 1 2; do wait "${pids[$r]}" || bad=1; done
for r in 0 1 2; do echo "--- rank $r"; grep -v "COLLIE INFO INIT \(local rank\|pipelining\|.* ranks on this host\)" "$dir/$r.out"; done
[ $bad = 0 ] || fail "coll_check across two network namespaces failed (rank 0 root address hostA = 127.0.1.1 on hostA)"
for r in 0 1 2; do grep -q "coll_check: rank $r: .* cases OK" "$dir/$r.out" || fail "rank $r results"; done
grep -q "rank 0 of 3, 2 on this host; peers 0:self 1:shm 2:tcp" "$dir/0.out" || fail "rank 0 should use shm to rank 1, tcp to rank 2"
grep -q "rank 2 of 3, 1 on this host; peers 0:tcp 1:tcp 2:self" "$dir/2.out" || fail "rank 2 should use tcp to ranks 0 and 1"
echo "PASS: coll_check on 2+1 ranks across two network namespaces in $(($(date +%s) - start)) s"

# Packets to the root vanish: hostB routes 10.231.78.0/24 through hostA, which does not forward.
ip -n ${p}b route add 10.231.78.0/24 via $net.1 || fail "cannot add the black-hole route"
ip netns exec ${p}a sh -c 'echo 0 > /proc/sys/net/ipv4/ip_forward' || fail "cannot turn forwarding off on hostA"
start=$(date +%s)
COLLIE_CONNECT_TIMEOUT=3 COLLIE_RANK=1 COLLIE_NRANKS=2 COLLIE_ROOT_ADDR=10.231.78.1:29577 \
  timeout -s KILL 30 nsenter -t "${holders[1]}" -m -n -u "$check" --coll barrier >"$dir/bh.out" 2>&1
rc=$?
took=$(($(date +%s) - start))
cat "$dir/bh.out"
[ $rc != 0 ] && [ $rc != 137 ] || fail "joining a black-holed root ended with status $rc"
[ $took -le 8 ] || fail "joining a black-holed root took $took s with COLLIE_CONNECT_TIMEOUT=3"
grep -q "rank 1 could not reach rank 0 at 10.231.78.1:29577 within 3000 ms" "$dir/bh.out" || fail "no sentence naming the root"
echo "PASS: a black-holed root address fails after $took s (COLLIE_CONNECT_TIMEOUT=3)"

# Rank 1 listens on an address of a second interface of hostA; hostB sends packets for it
# to a neighbour that does not exist, so rank 2's connects fail until the timeout.
ip -n ${p}a link add side0 type veth peer name side1 && ip -n ${p}a addr add 10.231.80.1/24 dev side0 &&
  ip -n ${p}a link set side0 up && ip -n ${p}a link set side1 up || fail "cannot add hostA's second interface"
ip -n ${p}b route add 10.231.80.0/24 via $net.99 || fail "cannot add the route to nowhere"
start=$(date +%s)
pids=()
for r in 0 1 2; do
  h=${holders[0]}
  [ $r = 2 ] && h=${holders[1]}
  ifname=eth0
  [ $r = 1 ] && ifname='=side0' # '=': this exact name, not a prefix
  COLLIE_CONNECT_TIMEOUT=4 COLLIE_SOCKET_IFNAME=$ifname COLLIE_RANK=$r COLLIE_DEBUG=WARN \
    timeout -s KILL 30 nsenter -t "$h" -m -n -u "$check" --coll barrier >"$dir/$r.out" 2>&1 &
  pids+=($!)
done
for r in 0 1 2; do wait "${pids[$r]}"; done
took=$(($(date +%s) - start))
for r in 0 1 2; do echo "--- rank $r"; cat "$dir/$r.out"; done
[ $took -le 9 ] || fail "an unreachable rank took $took s to report with COLLIE_CONNECT_TIMEOUT=4"
for r in 0 1 2; do
  grep -q "rank 2 could not connect to rank 1 (pid [0-9]* on host hostA) at 10.231.80.1:[0-9]*: No route to host" \
    "$dir/$r.out" || fail "rank $r did not report why rank 2 could not connect to rank 1"
done
echo "PASS: every rank named rank 2's failure to reach rank 1's address after $took s (COLLIE_CONNECT_TIMEOUT=4)"

# Three ranks loop on all-reduces over TCP (ranks 0 and 1 on hostA, rank 2 on hostB).
start_loop() {
  pids=()
  for r in 0 1 2; do
    h=${holders[0]}
    [ $r = 2 ] && h=${holders[1]}
    COLLIE_KEEPALIVE=4 COLLIE_EXEC_TIMEOUT=60 COLLIE_SOCKET_IFNAME=eth0 COLLIE_TRANSPORT=tcp COLLIE_RANK=$r \
      COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=INIT timeout -s KILL 90 nsenter -t "$h" -m -n -u "$perf" -b 8 -e 8 \
      -n 1000000000 -w 1 -c 0 >"$dir/$r.out" 2>&1 &
    pids+=($!)
  done
  # The perf line comes only at the end (1e9 iterations); the INIT line on stderr says the
  # communicator is up and the loop is starting.
  for _ in $(seq 300); do
    n=$(grep -l "rank [0-2] of 3, .* peers" "$dir"/[012].out 2>/dev/null | wc -l)
    [ "$n" = 3 ] && return
    sleep 0.1
  done
  for r in 0 1 2; do echo "--- rank $r"; cat "$dir/$r.out"; done
  fail "the all-reduce loop over TCP did not start within 30 s"
}
# A stopped rank is not a lost host: 10 s stopped, with COLLIE_KEEPALIVE=4, and the loop
# must go on. Then its host goes: hostB's port on the bridge goes down, packets vanish.
start_loop
rank2=$(pgrep -P "${pids[2]}" -f all_reduce_perf | head -1) # timeout's child
[ -n "$rank2" ] || fail "cannot find rank 2's process"
kill -STOP "$rank2"
# SIGSTOP takes effect asynchronously (every thread must stop), so look for a while.
stopped=0
for _ in $(seq 50); do
  case "$(ps -o stat= -p "$rank2")" in T*) stopped=1; break ;; esac
  sleep 0.1
done
[ $stopped = 1 ] || fail "rank 2 did not stop within 5 s of SIGSTOP (state '$(ps -o stat= -p "$rank2")')"
sleep 10
kill -CONT "$rank2"
sleep 1
for r in 0 1 2; do kill -0 "${pids[$r]}" 2>/dev/null || { cat "$dir/$r.out"; fail "rank $r ended while rank 2 was stopped"; }; done
ip -n ${p}sw link set pb down || fail "cannot take hostB off the bridge"
start=$(date +%s)
for r in 0 1; do wait "${pids[$r]}"; done
took=$(($(date +%s) - start))
kill -9 "${pids[2]}" 2>/dev/null
for r in 0 1; do echo "--- rank $r"; grep -v '^ \|^#' "$dir/$r.out"; done
for r in 0 1; do
  grep -q "rank 2 (pid [0-9]* on host hostB) stopped answering: .*about 4 s" "$dir/$r.out" ||
    fail "rank $r did not say that rank 2 stopped answering"
done
[ $took -le 10 ] || fail "the lost host was reported after $took s with COLLIE_KEEPALIVE=4"
echo "PASS: a stopped rank was kept; its host, cut off, was reported lost by ranks 0 and 1 after $took s (COLLIE_KEEPALIVE=4)"
