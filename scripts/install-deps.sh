#!/usr/bin/env bash
# Installs the Debian packages that building and testing collie need. Idempotent: when
# everything is present it only checks and returns.
set -euo pipefail

pkgs=(build-essential cmake pkg-config
      openmpi-bin libopenmpi-dev mpich libmpich-dev   # launchers the tests use
      iperf3 iproute2 procps psmisc bc               # loopback probe, netns, process checks, test timing
      slurmctld slurmd slurm-client                  # the slurm_two_hosts test's private cluster
      python3 python3-matplotlib                     # perf-report's plots
      g++ libgloo-dev                                # make bench: the Gloo comparison
      clang)                                         # the clang_warnings test

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
