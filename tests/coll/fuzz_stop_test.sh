#!/usr/bin/env bash
# A rank frozen in the middle of a random sequence of operations (coll_check --fuzz-stop):
# SIGSTOP, as a debugger, a paused container or a swapping host would. Every other rank
# must stop with an error that names it (a timeout after COLLIE_EXEC_TIMEOUT, which the
# caller sets low) or another's abort, and at least one must name it. This script then
# resumes the frozen rank (SIGCONT), whose next operations must fail saying why, not hang:
# collie-run then exits 0, every rank having passed its verdict.
#   fuzz_stop_test.sh COLLIE_RUN COLL_CHECK NRANKS VICTIM:K [coll_check args...]
set -u
run=$1 check=$2 n=$3 victim_at=$4
shift 4
# COLL_FAKE_HOSTS=K: the ranks split over K fake hosts by rank (COLLIE_HOST_ID), as on a
# cluster: TCP between them, and failure notices only through rank 0 (exec: the pid stays)
wrap=()
[ -n "${COLL_FAKE_HOSTS:-}" ] && wrap=(sh -c "COLLIE_HOST_ID=h\$((COLLIE_RANK % $COLL_FAKE_HOSTS)) exec \"\$0\" \"\$@\"")
log=$(mktemp)
"$run" -n "$n" --timeout 100 "${wrap[@]}" "$check" --fuzz 400 --fuzz-bytes 2M --fuzz-stop "$victim_at" "$@" >"$log" 2>&1 &
job=$!
verdicts() { grep -cE "the stop of rank|another survivor's abort|FAILED" "$log"; }
for _ in $(seq 600); do # the survivors' verdicts, within 60 s
  [ "$(verdicts)" -ge $((n - 1)) ] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
# counted before the resume: a survivor that stops only once the frozen rank runs again
# waited for it with no timeout (a synchronize on a reduce's comparison with a frozen root)
before_resume=$(verdicts)
victim=$(sed -n 's/^coll_check: rank [0-9]* (pid \([0-9]*\)) stops itself.*/\1/p' "$log" | head -n 1)
[ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null # also when something failed: collie-run's timeout ends it then
wait "$job"
rc=$?
out=$(cat "$log")
rm -f "$log"
echo "$out"
stopped=$(grep -cE "the stop of rank|another survivor's abort" <<<"$out")
named=$(grep -c "the stop of rank" <<<"$out")
resumed=$(grep -c "resumed, the stopped rank was told" <<<"$out")
[ -n "$victim" ] || { echo "FAIL: the victim never stopped"; exit 1; }
[ "$stopped" = $((n - 1)) ] || { echo "FAIL: $stopped of $((n - 1)) survivors stopped on the frozen rank"; exit 1; }
[ "$before_resume" -ge $((n - 1)) ] || { echo "FAIL: only $before_resume of $((n - 1)) survivors had stopped while the rank was frozen (60 s)"; exit 1; }
[ "$named" -ge 1 ] || { echo "FAIL: no survivor's error named the frozen rank"; exit 1; }
# collie-run gives only the first failure's status: a survivor's sanitizer report would hide behind it
if grep -q "Sanitizer" <<<"$out"; then echo "FAIL: a sanitizer reported an error (above)"; exit 1; fi
[ "$resumed" = 1 ] || { echo "FAIL: the frozen rank, resumed, did not fail with a reason"; exit 1; }
[ "$rc" = 0 ] || { echo "FAIL: collie-run exited with $rc, expected 0 (every rank passed its verdict)"; exit 1; }
echo "PASS: all $((n - 1)) survivors stopped ($named naming the frozen rank's pid), and the rank, resumed, failed"
