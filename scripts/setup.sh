#!/usr/bin/env bash
# Installs what kernelpro needs on Debian 12 (apt), then configures and builds it into
# BUILD_DIR (default: build). Safe to run again: installs only what is missing, builds
# incrementally. Needs the CUDA toolkit (nvcc) already installed; it says so if it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}

packages=(build-essential cmake binutils nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libfmt-dev libgtest-dev libcurl4-openssl-dev libcpp-httplib-dev libsqlite3-dev)
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

# Tools only the tests use (scripts/test.sh sets KP_TEST_TOOLS=1): Chromium renders the campaign
# report's page (tests/e2e/html_report_chromium_test.py); slurm-wlm and munge run a one-node
# Slurm cluster for the campaign's job arrays (scripts/slurm_localhost.sh). A failure here is a
# warning: those tests then report skipped.
if [ "${KP_TEST_TOOLS:-0}" = 1 ]; then
  test_missing=()
  for p in chromium slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || test_missing+=("$p")
  done
  if ((${#test_missing[@]})); then
    echo "setup: installing the test tools ${test_missing[*]}"
    sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    { "${sudo_cmd[@]}" apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${test_missing[@]}" >/dev/null; } ||
      echo "setup: warning: could not install ${test_missing[*]}; the browser and Slurm tests will be skipped" >&2
  fi
  # The official MCP Python SDK, the client of `kernelpro mcp`'s test (tests/e2e/mcp_client_test.py).
  mcp_version=2.3.0
  if [ ! -d ".kp-tools/mcp/mcp-$mcp_version.dist-info" ]; then
    echo "setup: installing the MCP Python SDK $mcp_version into .kp-tools/mcp"
    PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
      --timeout 30 --retries 2 --upgrade --target .kp-tools/mcp "mcp==$mcp_version" >/dev/null 2>&1 ||
      echo "setup: warning: could not install the MCP Python SDK; its test will be skipped" >&2
  fi
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

# cuobjdump, and the nvdisasm it runs, for SASS profiling (src/profile/sass/) and its toolchain
# tests: the CUDA toolkit's when it has them, else NVIDIA's PyPI wheels in the git-ignored
# .kp-tools/python (binaries in nvidia/cu13/bin/). PyPI has no 13.0 build; 13.2 is the oldest
# and reads CUDA 13.0 objects. A failure here is a warning: those tests then skip.
sass_version=13.2.86
kp_tools=.kp-tools/python
if ! command -v cuobjdump >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/cuobjdump ] &&
   { [ ! -d "$kp_tools/nvidia_cuda_cuobjdump-$sass_version.dist-info" ] ||
     [ ! -d "$kp_tools/nvidia_cuda_nvdisasm-$sass_version.dist-info" ]; }; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "setup: installing python3-pip (for cuobjdump from PyPI)"
    sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    { "${sudo_cmd[@]}" apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq python3-pip >/dev/null; } || true
  fi
  echo "setup: installing cuobjdump and nvdisasm $sass_version from PyPI into $kp_tools"
  # --target installs outside any environment, so Debian's externally-managed marker does not
  # apply; the variable covers pips that check it anyway and is ignored by older ones.
  if ! PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet \
         --disable-pip-version-check --timeout 30 --retries 2 --upgrade --target "$kp_tools" \
         "nvidia-cuda-cuobjdump==$sass_version" "nvidia-cuda-nvdisasm==$sass_version" ||
     ! "$kp_tools/nvidia/cu13/bin/cuobjdump" --version >/dev/null 2>&1; then
    echo "setup: warning: could not install cuobjdump from PyPI; SASS profiling and its tests will be" \
         "skipped. Install the CUDA toolkit's cuobjdump, or pass --cuobjdump PATH." >&2
  fi
fi

# CUTLASS and CuTe headers, for CuTe candidates (src/build/) and `kernelpro cutlass` code search
# (src/codesearch/): NVIDIA's nvidia-cutlass wheel, which carries the headers under
# cutlass_library/source/include and the utilities under source/tools/util/include. Pinned: the
# retrieval benchmark's answers (bench/data/cutlass_queries.tsv) name files of this release.
# --no-deps: only the headers are wanted, not the Python packages the wheel depends on. Skipped
# when the user has a CUTLASS of their own (CUTLASS_PATH). A failure is a warning.
cutlass_version=4.2.0.0
if [ -z "${CUTLASS_PATH:-}" ] && [ ! -d "$kp_tools/nvidia_cutlass-$cutlass_version.dist-info" ]; then
  echo "setup: installing CUTLASS $cutlass_version headers (nvidia-cutlass) from PyPI into $kp_tools"
  if ! PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet \
         --disable-pip-version-check --timeout 30 --retries 2 --no-deps --upgrade --target "$kp_tools" \
         "nvidia-cutlass==$cutlass_version" ||
     [ ! -f "$kp_tools/cutlass_library/source/include/cute/tensor.hpp" ]; then
    echo "setup: warning: could not install nvidia-cutlass; CuTe candidates and \`kernelpro cutlass\`" \
         "need one: set CUTLASS_PATH to a CUTLASS checkout or pass --cutlass DIR." >&2
  fi
fi

jobs=$(nproc)
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
cmake --build "$BUILD_DIR" -j"$jobs"
