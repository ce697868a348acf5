#!/usr/bin/env bash
# The main job: a point-to-point perf sweep on 4 local ranks, over shared memory and TCP.
set -euo pipefail
build=${1:-build}
echo "== sendrecv_perf, 4 local ranks, shared memory =="
"$build/bin/sendrecv_perf" -p 4 -b 8 -e 64M -f 4
echo
echo "== sendrecv_perf, 4 local ranks, TCP over loopback (COLLIE_TRANSPORT=tcp) =="
COLLIE_TRANSPORT=tcp "$build/bin/sendrecv_perf" -p 4 -b 8 -e 64M -f 4
