#!/usr/bin/env bash
# The tree must build warning-free with clang as with gcc (-Wall -Wextra -Werror): clang
# warns where gcc is silent (a designated initializer that leaves a field out:
# -Wmissing-field-initializers), and a clang build broke once unnoticed because nothing
# built with it. A full second build costs minutes on 2 cores; clang's front end over
# every C file the CMake build compiles (not bench/compare's MPI program, built by mpicc)
# takes seconds and sees those warnings.
#   clang_warnings_test.sh SOURCE_DIR
set -u
src=$1
clang=$(command -v clang) || { echo "FAIL: clang is missing; scripts/install-deps.sh installs it" >&2; exit 1; }
cd "$src" || exit 1
n=0 bad=0
while IFS= read -r f; do
  n=$((n + 1))
  "$clang" -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Isrc -Itests -Itests/common -fsyntax-only "$f" || bad=$((bad + 1))
done < <(git ls-files '*.c' 2>/dev/null | grep -v '^bench/compare/' || find src tools tests bench -name '*.c' ! -path 'bench/compare/*')
[ "$n" -gt 50 ] || { echo "FAIL: found only $n C files under $src" >&2; exit 1; }
[ "$bad" = 0 ] || { echo "FAIL: $bad of $n C files have clang warnings (above)" >&2; exit 1; }
echo "PASS: $n C files, no clang warnings"
