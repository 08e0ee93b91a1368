#!/usr/bin/env bash
# Copies the binaries and CTest files of a build made here (BUILD, default build-gpu) into
# gpu-carry/ (git-ignored), small enough to travel to the GPU machine. There, from the repo root:
#   mkdir -p /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build-gpu" build-gpu
# makes the paths compiled into the binaries valid again (the build was configured in /work/main).
# The GPU machine has no cpp-httplib, which the e2e tests' loopback LLM server links: it is
# copied to gpu-carry/lib; run the tests there with LD_LIBRARY_PATH=$PWD/gpu-carry/lib.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
rm -rf gpu-carry && mkdir -p gpu-carry
(cd "$BUILD" && find . \( -name '*.o' -o -name '*.a' -o -path './CMakeFiles/*' -o -name '*.bin' -o -name 'a.out' \) -prune -o -type f -print) |
  while read -r f; do mkdir -p "gpu-carry/$BUILD/$(dirname "$f")"; cp -a "$BUILD/$f" "gpu-carry/$BUILD/$f"; done
# Debug info makes a RelWithDebInfo build ten times the size the device tool carries (64 MiB).
find gpu-carry -type f -perm -u+x | while read -r f; do
  if head -c 4 "$f" | grep -q ELF; then strip --strip-debug "$f"; fi
done
mkdir -p gpu-carry/lib
for lib in $(ldd "$BUILD"/tests/kp_e2e_tests 2>/dev/null | awk '/httplib/ {print $3}'); do cp -L "$lib" gpu-carry/lib/; done
# What the binaries were built from, for the results' READMEs (a dirty tree is marked so).
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src python include CMakeLists.txt || echo '+uncommitted')" > gpu-carry/COMMIT
du -sh gpu-carry
# SLIM=1: without the benchmarks and the unit and toolchain tests, which need no GPU (room for
# the rest within the device tool's 64 MiB).
if [ "${SLIM:-0}" = 1 ]; then
  rm -rf "gpu-carry/$BUILD/bench" "gpu-carry/$BUILD/tests/kp_unit_tests" "gpu-carry/$BUILD/tests/kp_toolchain_tests"
fi
# CUTLASS=1: the CUTLASS headers the CuTe example's seed includes (every KP_TUNE point), as
# listed by nvcc -M, in gpu-carry/cutlass: set CUTLASS_PATH to it there. The whole include tree
# (27 MiB) would not fit beside the build.
if [ "${CUTLASS:-0}" = 1 ]; then
  root=.kp-tools/python/cutlass_library/source
  [ -n "${CUTLASS_PATH:-}" ] && root=$CUTLASS_PATH
  PATH=$PATH:/usr/local/cuda/bin
  for v in "-DBLOCK_N=256 -DSTAGES=4" "-DBLOCK_N=128 -DSTAGES=3"; do
    # shellcheck disable=SC2086
    nvcc -M -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -Iinclude \
      -I"$root/include" -I"$root/tools/util/include" $v examples/gemm_bf16_cute/seed.cu
  done | tr ' \\' '\n\n' | grep -F "$root/" | sort -u |
    while read -r f; do rel=${f#"$root"/}; mkdir -p "gpu-carry/cutlass/$(dirname "$rel")"; cp "$f" "gpu-carry/cutlass/$rel"; done
  cp "$root/include/cutlass/version.h" gpu-carry/cutlass/include/cutlass/
fi
# What the binaries were built from, for the results' READMEs (a dirty tree is marked so).
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src python include CMakeLists.txt || echo '+uncommitted')" > gpu-carry/COMMIT
du -sh gpu-carry
