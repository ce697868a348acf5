#!/usr/bin/env bash
# docs_environment_current: docs/environment.md must be exactly what
# scripts/gen-env-doc.sh (intro + `collie-info --markdown`) generates from today's table.
# Usage: docs_env_test.sh SOURCE_DIR PATH/TO/collie-info
set -euo pipefail
src=${1:?usage: docs_env_test.sh SOURCE_DIR COLLIE_INFO}
info=${2:?usage: docs_env_test.sh SOURCE_DIR COLLIE_INFO}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
bash "$src/scripts/gen-env-doc.sh" "$info" "$tmp"
if ! diff -u "$src/docs/environment.md" "$tmp"; then
  echo "FAIL: docs/environment.md is out of date with the parameter table in src/core/params.c"
  echo "run: build/bin/collie-info --markdown to regenerate docs/environment.md"
  echo "     (that is: scripts/gen-env-doc.sh build/bin/collie-info, which adds the intro)"
  exit 1
fi
echo "docs/environment.md is current"
