#!/usr/bin/env bash
# Copies the binaries and CTest files of a build made here (BUILD, default build-gpu) into
# gpu-carry/ (git-ignored), small enough to travel to the GPU machine. There, from the repo root:
#   mkdir -p /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build-gpu" build-gpu
# makes the paths compiled into the binaries valid again (the build was configured in /work/main).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
rm -rf gpu-carry && mkdir -p gpu-carry
(cd "$BUILD" && find . \( -name '*.o' -o -name '*.a' -o -path './CMakeFiles/*' -o -name '*.bin' -o -name 'a.out' \) -prune -o -type f -print) |
  while read -r f; do mkdir -p "gpu-carry/$BUILD/$(dirname "$f")"; cp -a "$BUILD/$f" "gpu-carry/$BUILD/$f"; done
du -sh gpu-carry
