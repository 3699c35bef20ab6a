#!/usr/bin/env bash
# Installs, from Debian's packages, whatever gemmar's build, tests, reports and the HIP compile check need and
# this machine lacks. Idempotent: asks apt only when something is missing.
set -euo pipefail
packages=(cmake make g++ pkg-config libeigen3-dev libboost-program-options-dev nlohmann-json3-dev libre2-dev
          libgtest-dev googletest python3-matplotlib python3-numpy dpkg-dev)
if [[ "${GEMMAR_DEVICE_COMPILE:-1}" != 0 ]]; then
  # The HIP compile check of the kernels (gfx942 ISA) needs clang-19, lld-19 and the HIP headers.
  packages+=(clang-19 lld-19 libamdhip64-dev)
fi
if [[ "${GEMMAR_FORMAT_DEPS:-0}" != 0 ]]; then
  # scripts/format.sh --check (scripts/test.sh): the layout of .clang-format as clang-format 14 writes it.
  packages+=(clang-format-14)
fi
if [[ "${GEMMAR_CCACHE_DEPS:-0}" != 0 ]]; then
  # scripts/test.sh: the package build takes the objects it shares with the ci build from ccache.
  packages+=(ccache)
fi
if [[ "${GEMMAR_FUZZ_DEPS:-0}" != 0 ]]; then
  packages+=(libclang-rt-19-dev libomp-19-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install_deps: all packages present"
fi
