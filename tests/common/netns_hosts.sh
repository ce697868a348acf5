# Sourced by tests that need several real "hosts" on this machine: network namespaces
# joined by veth pairs to a bridge (in a namespace of its own), each with its own hostname
# (hostA, hostB, ...), /etc/hosts and private /dev/shm, held by a sleeping process whose
# namespaces `on` enters. Ports inside these namespaces belong to the test alone.
#
#   . netns_hosts.sh
#   netns_hosts_up PREFIX DIR NET N [SH]  # N hosts; host i (1-based) has address NET.i;
#                                         # SH: more set-up, run by sh on each host
#   on "${holders[0]}" cmd...          # run cmd on hostA
#   netns_hosts_down                   # or, at the start: netns_hosts_trap DIR
#
# netns_hosts_up writes DIR/hosts.a, ...: hostA's own name maps to 127.0.1.1 (as Debian's
# installer writes it), every other host's name to its bridge address; a test may rewrite
# them before it starts ranks. Needs root, ip (iproute2), unshare and nsenter (util-linux):
# it fails, never skips, without them. The caller defines fail().
holders=()
netns_names=() # the namespaces created, for netns_hosts_down

netns_hosts_up() {
  local p=$1 dir=$2 net=$3 count=$4 more=${5:-true} i j h
  local letters=(a b c d e f g h)
  for c in ip unshare nsenter timeout; do command -v $c >/dev/null || fail "$c is missing (iproute2, util-linux)"; done
  [ "$(id -u)" = 0 ] || fail "must run as root to create network namespaces"
  ip netns add ${p}sw || fail "ip netns add failed"
  netns_names+=(${p}sw)
  ip -n ${p}sw link add br0 type bridge && ip -n ${p}sw link set br0 up || fail "cannot create the bridge"
  for i in $(seq "$count"); do
    h=${letters[i - 1]}
    ip netns add $p$h || fail "ip netns add $p$h failed"
    netns_names+=($p$h)
    ip link add eth0 netns $p$h type veth peer name p$h netns ${p}sw || fail "cannot create a veth pair"
    ip -n ${p}sw link set p$h master br0 && ip -n ${p}sw link set p$h up &&
      ip -n $p$h link set lo up && ip -n $p$h addr add $net.$i/24 dev eth0 &&
      ip -n $p$h link set eth0 up || fail "cannot configure host $h"
    echo "127.0.0.1 localhost" >"$dir/hosts.$h"
    for j in $(seq "$count"); do
      local name=host${letters[j - 1]^^} # hostA, hostB, ...
      if [ "$i" = 1 ] && [ "$j" = 1 ]; then echo "127.0.1.1 $name"; else echo "$net.$j $name"; fi
    done >>"$dir/hosts.$h"
    ip netns exec $p$h unshare --mount --uts --propagation private sh -c \
      "hostname host${h^^} && mount -t tmpfs tmpfs /dev/shm && mount --bind $dir/hosts.$h /etc/hosts && { $more; } && exec sleep 900" &
    holders+=($!)
    disown $! # no "Killed" notices at cleanup
  done
  for h in "${holders[@]}"; do
    for _ in $(seq 100); do [ "$(cat /proc/$h/comm 2>/dev/null)" = sleep ] && break; sleep 0.05; done
    [ "$(cat /proc/$h/comm 2>/dev/null)" = sleep ] || fail "the namespace holder $h did not start"
  done
}

on() {
  local h=$1
  shift
  nsenter -t "$h" -m -n -u "$@"
}

netns_hosts_down() {
  local h ns
  for h in "${holders[@]}"; do kill -9 "$h" 2>/dev/null; done
  for ns in "${netns_names[@]}"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
}

# netns_hosts_trap DIR: on exit (or INT, TERM) take the hosts down, wait for the test's
# children and remove DIR.
netns_hosts_trap() {
  netns_tmp=$1
  trap 'netns_hosts_down; wait 2>/dev/null; rm -rf "$netns_tmp"' EXIT
  trap 'exit 1' INT TERM
}
