#!/usr/bin/env bash
# Point-to-point figures next to the machine's own limits, measured in one run:
# the memcpy rate, a raw loopback TCP stream (iperf3), and sendrecv_perf on 2 local ranks
# over shared memory and over forced TCP.   usage: bench/p2p_baseline.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

echo "== memcpy (one thread) =="
"$build/bin/memcpy_probe" 4194304 67108864 268435456

echo
echo "== raw TCP stream over loopback (iperf3, one stream, 5 s) =="
iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
server=$!
sleep 0.5
iperf3 -c 127.0.0.1 -p "$port" -t 5 -f g | grep -E "sender|receiver"
wait "$server" 2>/dev/null || true

echo
echo "== sendrecv_perf, 2 ranks, shared memory =="
"$build/bin/sendrecv_perf" -p 2 -b 8 -e 256M -f 4 | grep -v '^#  Rank'
echo
echo "== sendrecv_perf, 2 ranks, TCP over loopback (COLLIE_TRANSPORT=tcp) =="
COLLIE_TRANSPORT=tcp "$build/bin/sendrecv_perf" -p 2 -b 8 -e 256M -f 4 | grep -v '^#  Rank'
