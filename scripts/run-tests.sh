#!/usr/bin/env bash
# Runs the ctest suite of a build directory, then checks that the tests cleaned up after
# themselves: no collie shared-memory segment and no test process may outlive them.
set -uo pipefail
build=${1:?usage: run-tests.sh BUILD_DIR [ctest args...]}
shift
build=$(cd "$build" && pwd) # absolute: the stray-process check must not match another checkout's build
leftover_shm() { ls /dev/shm 2>/dev/null | grep -c '^collie-' || true; }
before=$(leftover_shm)
ctest --test-dir "$build" --output-on-failure --timeout 600 -j "${CTEST_JOBS:-2}" "$@"
rc=$?
after=$(leftover_shm)
if (( after > before )); then
  echo "run-tests: the tests left $((after - before)) collie segment(s) in /dev/shm:" >&2
  ls -l /dev/shm | grep collie- >&2
  rc=1
fi
if pgrep -f "$build/bin/" >/dev/null; then
  echo "run-tests: test processes are still running after the suite:" >&2
  pgrep -af "$build/bin/" >&2
  pkill -9 -f "$build/bin/"
  rc=1
fi
exit $rc
