#!/usr/bin/env bash
# install_package: installs the build into a temporary prefix, builds examples/hello.c
# against the installed package twice (pkg-config, and CMake's find_package(collie)) and
# runs both under the installed collie-run with 3 ranks; then builds the foundation's
# API-only check (tests/proc/p2p_check.c, with its libc-only tests/common/signal_storm.c)
# against it and runs it under collie-run, forced TCP, Open MPI's mpirun and MPICH's mpiexec.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=${1:?usage: install_test.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: install_test.sh BUILD_DIR SOURCE_DIR}
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/collie-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
step() { echo "--- $*"; }

# Nothing from the caller's environment may point the builds elsewhere.
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR CMAKE_PREFIX_PATH CPATH C_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH
unset COLLIE_TRANSPORT COLLIE_ROOT_ADDR COLLIE_RANK COLLIE_NRANKS COLLIE_ROOT_LISTEN_FD COLLIE_JOB_ID
export COLLIE_SOCKET_IFNAME=lo COLLIE_CONNECT_TIMEOUT=30 COLLIE_EXEC_TIMEOUT=60

step "cmake --install $build --prefix $prefix"
if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "FAIL: cmake --install failed"
  exit 1
fi

# GNUInstallDirs: lib, lib64 or lib/<multiarch>
pc=$(find "$prefix" -name collie.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || { find "$prefix" | sort; echo "FAIL: no collie.pc was installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
echo "libdir: ${libdir#"$prefix"/}"
for f in include/collie.h bin/collie-run bin/collie-info; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
for f in libcollie.a pkgconfig/collie.pc cmake/collie/collieConfig.cmake cmake/collie/collieConfigVersion.cmake \
         cmake/collie/collieTargets.cmake; do
  [ -e "$libdir/$f" ] || fail "${libdir#"$prefix"/}/$f was not installed"
done
ls "$libdir"/libcollie.so* >/dev/null 2>&1 || fail "libcollie.so was not installed"

version=$("$prefix/bin/collie-info" --version) || fail "installed collie-info --version failed"
echo "installed: $version"

# run NAME BINARY: runs it with 3 ranks under the installed collie-run and checks the output.
run_hello() {
  local name=$1 bin=$2
  step "collie-run -n 3 $name"
  if ! timeout -s KILL 120 "$prefix/bin/collie-run" -n 3 --timeout 100 "$bin" >"$tmp/$name.out" 2>&1; then
    cat "$tmp/$name.out"
    fail "$name failed under collie-run -n 3"
    return
  fi
  cat "$tmp/$name.out"
  for r in 0 1 2; do
    grep -q "^hello from rank $r of 3: sum of ranks 3, left neighbour $(((r + 2) % 3))\$" "$tmp/$name.out" ||
      fail "$name: no correct line from rank $r"
  done
  # It must run against the installed library, not the build tree's.
  if ldd "$bin" | grep -q 'libcollie\.so'; then
    ldd "$bin" | grep 'libcollie\.so' | grep -q "$prefix/" ||
      fail "$name resolves libcollie.so outside the installed prefix: $(ldd "$bin" | grep libcollie)"
  fi
}

# 1. pkg-config
step "pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pcver=$(pkg-config --modversion collie) || fail "pkg-config --modversion collie failed"
[ "collie $pcver" = "$version" ] || fail "pkg-config says version '$pcver', collie-info '$version'"
flags=$(pkg-config --cflags --libs collie)
echo "pkg-config --cflags --libs collie: $flags"
pcprefix=$(pkg-config --variable=prefix collie)
if [ "$(cd "$pcprefix" 2>/dev/null && pwd)" != "$prefix" ]; then
  fail "the installed collie.pc says prefix=$pcprefix, but the package was installed in $prefix" \
       "(cmake --install --prefix must give a usable .pc: make it relocatable with \${pcfiledir})"
fi
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Wextra -Werror "$src/examples/hello.c" $flags -o "$tmp/hello-pkgconfig" >"$tmp/cc.log" 2>&1; then
  run_hello hello-pkgconfig "$tmp/hello-pkgconfig"
else
  cat "$tmp/cc.log"
  fail "cc examples/hello.c \$(pkg-config --cflags --libs collie) failed"
fi
# examples/shared_buffers.c: the installed header and library offer collie_mem_alloc, and
# allreduce over its buffers gives the right sums.
step "examples/shared_buffers.c"
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Wextra -Werror "$src/examples/shared_buffers.c" $flags -o "$tmp/shared_buffers" >"$tmp/cc2.log" 2>&1; then
  if timeout -s KILL 120 "$prefix/bin/collie-run" -n 3 --timeout 100 "$tmp/shared_buffers" >"$tmp/sb.out" 2>&1; then
    cat "$tmp/sb.out"
    [ "$(grep -c 'allreduce correct' "$tmp/sb.out")" = 3 ] || fail "shared_buffers: not every rank reported a correct allreduce"
  else
    cat "$tmp/sb.out"
    fail "shared_buffers failed under collie-run -n 3"
  fi
else
  cat "$tmp/cc2.log"
  fail "cc examples/shared_buffers.c \$(pkg-config --cflags --libs collie) failed"
fi
unset PKG_CONFIG_PATH

# 2. CMake: find_package(collie), the shared and the static library
step "find_package(collie)"
mkdir -p "$tmp/consumer"
cat >"$tmp/consumer/CMakeLists.txt" <<CML
cmake_minimum_required(VERSION 3.18)
project(collie_consumer C)
find_package(collie 0.1 REQUIRED)
add_executable(hello "$src/examples/hello.c")
target_link_libraries(hello PRIVATE collie::collie)
add_executable(hello_static "$src/examples/hello.c")
target_link_libraries(hello_static PRIVATE collie::collie_static)
foreach(t hello hello_static)
  target_compile_options(\${t} PRIVATE -Wall -Wextra -Werror)
  set_target_properties(\${t} PROPERTIES C_STANDARD 11 C_EXTENSIONS OFF)
endforeach()
CML
if cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 &&
   cmake --build "$tmp/consumer/build" >>"$tmp/cmake.log" 2>&1; then
  grep -q "collie_DIR:PATH=$libdir/cmake/collie" "$tmp/consumer/build/CMakeCache.txt" ||
    fail "find_package(collie) found $(grep collie_DIR "$tmp/consumer/build/CMakeCache.txt")"
  run_hello hello-cmake "$tmp/consumer/build/hello"
  COLLIE_TRANSPORT=tcp run_hello hello-cmake-static-tcp "$tmp/consumer/build/hello_static"
else
  cat "$tmp/cmake.log"
  fail "the CMake project using find_package(collie) did not build"
fi

# 3. The foundation's acceptance program (only API.md: init_env, grouped send/recv,
#    isend/irecv, barrier, split, destroy), built against the installed package, under
#    every launcher collie reads on one host.
step "p2p_check against the installed package"
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
if cc -std=c11 -Wall -Wextra -Werror -pthread "$src/tests/proc/p2p_check.c" "$src/tests/common/signal_storm.c" \
      -I"$src/tests/common" $(pkg-config --cflags --libs collie) \
      -o "$tmp/p2p_check" >"$tmp/cc2.log" 2>&1; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  launch() { # description, command...
    local what=$1
    shift
    step "$what"
    if ! timeout -s KILL 150 "$@" >"$tmp/launch.out" 2>&1; then
      cat "$tmp/launch.out"
      fail "p2p_check failed under: $what"
    else
      grep -c "OK$" "$tmp/launch.out" | sed 's/^/ranks OK: /'
    fi
  }
  for n in 1 3 4; do launch "collie-run -n $n" "$prefix/bin/collie-run" -n $n --timeout 120 "$tmp/p2p_check"; done
  launch "COLLIE_TRANSPORT=tcp collie-run -n 3" env COLLIE_TRANSPORT=tcp "$prefix/bin/collie-run" -n 3 --timeout 120 "$tmp/p2p_check"
  launch "mpirun --oversubscribe -n 3 (Open MPI)" mpirun.openmpi --oversubscribe -n 3 "$tmp/p2p_check"
  launch "mpiexec -n 2 (MPICH)" mpiexec.mpich -n 2 "$tmp/p2p_check"
else
  cat "$tmp/cc2.log"
  fail "tests/proc/p2p_check.c did not build against the installed package"
fi
unset PKG_CONFIG_PATH

if [ "$fails" -gt 0 ]; then
  echo "install_package: $fails check(s) failed"
  exit 1
fi
echo "install_package: the installed package builds and runs examples/hello.c"
