#!/usr/bin/env bash
# Writes docs/environment.md from collie's parameter table (src/core/params.c), through
# `collie-info --markdown`, so that the document never drifts from the code.
#
# Usage: scripts/gen-env-doc.sh [COLLIE_INFO [OUTPUT]]
#   COLLIE_INFO  the collie-info binary (default: build/bin/collie-info)
#   OUTPUT       where to write (default: docs/environment.md; - for stdout)
# The test docs_environment_current runs this into a temporary file and compares.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
info=${1:-$root/build/bin/collie-info}
out=${2:-$root/docs/environment.md}
[ -x "$info" ] || { echo "gen-env-doc: '$info' is not an executable; build collie first" >&2; exit 1; }

generate() {
  cat <<'INTRO'
# Environment variables

Every `COLLIE_*` variable that collie reads is listed below, with its type, its default and
what it does. Each is read once, the first time it is needed, and then cached. Sizes take the
suffixes `K`, `M` and `G` (powers of 1024; `64K` is 65536 bytes). A malformed number, a
number outside the range its Type column gives, or a word not among those listed there (any
case) makes communicator creation fail with `COLLIE_ERR_INVALID_ARGUMENT` and a sentence
naming the variable. `collie-info` prints the values in effect on a machine and where each came from
(default, environment or unset). This file is generated from the table in
`src/core/params.c` by `scripts/gen-env-doc.sh` (which runs `collie-info --markdown`); edit
the table, not this file.

Each rank reads the variables of its own process, and most may differ between ranks. These
may not: `COLLIE_ALGO`, `COLLIE_PROTO`, `COLLIE_TUNING_FILE` (its figures, wherever the file
lies), `COLLIE_CHUNK_SIZE` (the size in effect), `COLLIE_TCP_NSOCKS` (between ranks that talk
TCP), `COLLIE_SHM_NSLOTS` and `COLLIE_SHM_SLOT_SIZE` (among the ranks of one host that use shared
memory), and `COLLIE_SHM_COLL_SIZE` (only when every rank shares one host: its area exists only
then). Rank 0 compares them when the ranks join; where two ranks differ, creation fails
on every rank with `COLLIE_ERR_INVALID_USAGE` and a sentence naming the variable, the two ranks
and their values. Across hosts this usually means the variable was exported on one host only:
`mpirun` passes it to the others with `-x NAME`.

INTRO
  "$info" --markdown
}

if [ "$out" = - ]; then
  generate
else
  tmp=$(mktemp "$out.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  generate >"$tmp" # a failing collie-info leaves the old file untouched
  cat "$tmp" >"$out"
fi
