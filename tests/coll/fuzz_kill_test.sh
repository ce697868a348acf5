#!/usr/bin/env bash
# A rank killed in the middle of a random sequence of operations (coll_check --fuzz-kill):
# every survivor must stop with an error that names it (or the abort of a survivor that saw
# it first) within collie-run's grace, and at least one must name it.
#   fuzz_kill_test.sh COLLIE_RUN COLL_CHECK NRANKS VICTIM:K [coll_check args...]
set -u
run=$1 check=$2 n=$3 victim_at=$4
shift 4
# COLL_FAKE_HOSTS=K: the ranks split over K fake hosts by rank (COLLIE_HOST_ID), as on a
# cluster: TCP between them, and failure notices only through rank 0 (exec: the pid stays)
wrap=()
[ -n "${COLL_FAKE_HOSTS:-}" ] && wrap=(sh -c "COLLIE_HOST_ID=h\$((COLLIE_RANK % $COLL_FAKE_HOSTS)) exec \"\$0\" \"\$@\"")
out=$("$run" -n "$n" --grace 20 --timeout 100 "${wrap[@]}" "$check" --fuzz 400 --fuzz-bytes 2M --fuzz-kill "$victim_at" "$@" 2>&1)
rc=$?
echo "$out"
stopped=$(grep -cE "the death of rank|another survivor's abort" <<<"$out")
named=$(grep -c "the death of rank" <<<"$out")
# collie-run exits with the first rank's failure: the victim's SIGKILL (128 + 9)
[ "$rc" = 137 ] || { echo "FAIL: collie-run exited with $rc, expected 137 (the victim's SIGKILL first)"; exit 1; }
[ "$stopped" = $((n - 1)) ] || { echo "FAIL: $stopped of $((n - 1)) survivors stopped on the death"; exit 1; }
[ "$named" -ge 1 ] || { echo "FAIL: no survivor's error named the victim"; exit 1; }
# collie-run gives only the first failure's status: a survivor's sanitizer report would hide behind it
if grep -q "Sanitizer" <<<"$out"; then echo "FAIL: a sanitizer reported an error (above)"; exit 1; fi
echo "PASS: all $((n - 1)) survivors stopped ($named naming the victim's pid)"
