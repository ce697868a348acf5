#!/usr/bin/env bash
# collie_info_cli: the command line and report of collie-info.
# Usage: collie_info_test.sh PATH/TO/collie-info
set -uo pipefail
info=${1:?usage: collie_info_test.sh PATH/TO/collie-info}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# run EXPECTED_STATUS [VAR=value...] -- ARGS: output in $tmp/out, $tmp/err
run() {
  local want=$1 got=0
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env -u COLLIE_SOCKET_IFNAME -u COLLIE_EXEC_TIMEOUT -u COLLIE_SHM_SLOT_SIZE ${envs[@]+"${envs[@]}"} \
    "$info" "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
  [ "$got" = "$want" ] || { fail "collie-info $* (${envs[*]-}) exited $got, expected $want"; cat "$tmp/out" "$tmp/err"; }
}
has() { grep -Eq -- "$1" "$tmp/${2:-out}" || { fail "output lacks /$1/:"; cat "$tmp/${2:-out}"; }; }

run 0 -- --version
[ "$(cat "$tmp/out")" = "$(head -1 "$tmp/out")" ] || fail "--version printed more than one line"
has '^collie [0-9]+\.[0-9]+\.[0-9]+$'
version=$(cat "$tmp/out")

run 0 -- --help
has '^usage: collie-info'
run 0 -- -h
has '--markdown'
run 2 -- --bogus
has "unknown argument '--bogus'" err
has '^usage: collie-info' err
run 2 -- extra

run 0 -- --markdown
has '^\| Variable \| Type \| Default \| Description \|$'
has '^\|---\|---\|---\|---\|$'
has '^\| `COLLIE_SHM_SLOT_SIZE` \| size, 4K to 1G \| `128K` \| '
has '^\| `COLLIE_DEBUG_FILE` \| string \| \(unset\) \| '
rows=$(grep -c '^| `COLLIE_' "$tmp/out")
cp "$tmp/out" "$tmp/md"

run 0 COLLIE_SHM_SLOT_SIZE=1M COLLIE_SOCKET_IFNAME=lo --
[ "$(head -1 "$tmp/out")" = "$version" ] || fail "report does not start with '$version'"
has '^  COLLIE_SHM_SLOT_SIZE +size +1M +environment \(1048576 bytes\)$'
has '^  COLLIE_EXEC_TIMEOUT +int +600 +default$'
has '^  COLLIE_DEBUG_FILE +string +- +unset$'
has '^  COLLIE_SHM_COLL_SIZE +size +\(computed\) +default$' # not the 256K the code falls back to
has '^  COLLIE_SOCKET_IFNAME +string +lo +environment$'
# every parameter of the markdown table appears in the report, and nothing else does
listed=$(grep -c '^  COLLIE_[A-Z_]* ' "$tmp/out")
[ "$listed" = "$rows" ] || fail "report lists $listed parameters, --markdown $rows"
has '^  self +available$'
has '^  shm +(available|unavailable)'
has "^  tcp +interfaces matching COLLIE_SOCKET_IFNAME='lo':$"
has '^ +lo +(127\.0\.0\.1|::1) \(loopback\)$'
has 'collie_get_unique_id advertises (127\.0\.0\.1|\[::1\])$'
has '^  single-copy \(process_vm_readv\) +(available|unavailable)'
has '^Reduction ISA: (avx2|portable)$'
[ -z "$(ls /dev/shm 2>/dev/null | grep '^collie-info-' || true)" ] || fail "collie-info left a segment in /dev/shm"

run 0 COLLIE_SOCKET_IFNAME==no-such-interface0 --
has 'none: TCP is unavailable'
has 'collie_get_unique_id would fail'

run 1 COLLIE_EXEC_TIMEOUT=soon COLLIE_NO_SUCH_THING=1 --
has '^  COLLIE_EXEC_TIMEOUT +int +soon +environment  <- MALFORMED'
has "COLLIE_EXEC_TIMEOUT='soon' is not a number"
has '^  COLLIE_NO_SUCH_THING=1$'

if [ "$fails" -gt 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "collie-info: all checks passed"
