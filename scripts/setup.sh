#!/usr/bin/env bash
# Installs what kernelpro needs on Debian 12 (apt), then configures and builds it into
# BUILD_DIR (default: build). Safe to run again: installs only what is missing, builds
# incrementally. Needs the CUDA toolkit (nvcc) already installed; it says so if it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}

packages=(build-essential cmake binutils nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libfmt-dev libgtest-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin /usr/local/cuda-12/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "setup: nvcc not found. Install the CUDA toolkit (12.4 or newer) and put its bin/ on PATH, then run this again." >&2
  exit 1
fi

jobs=$(nproc)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
cmake --build "$BUILD_DIR" -j"$jobs"
