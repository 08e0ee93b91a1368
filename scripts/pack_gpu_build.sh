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
du -sh gpu-carry
