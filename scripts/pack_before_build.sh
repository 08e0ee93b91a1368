#!/usr/bin/env bash
# Packs an older build for a before/after run on the GPU machine (bench/throughput.sh): the
# kernelpro, kp-worker and CUPTI libraries of BEFORE_BUILD (a build of COMMIT configured in
# /work/before, e.g. a `git worktree add /work/before COMMIT`), stripped, into before-carry/build,
# and the files those binaries read at run time (include/, python/, prompts/, rules/) from
# COMMIT into before-carry/. There: `ln -sfn "$PWD/before-carry" /work/before`.
set -euo pipefail
cd "$(dirname "$0")/.."
COMMIT=${1:?usage: pack_before_build.sh COMMIT [BEFORE_BUILD]}
BUILD=${2:-/work/before/build}
rm -rf before-carry && mkdir -p before-carry/build
for f in kernelpro kp-worker libkp_rangeprof.so libkp_trace.so; do
  cp "$BUILD/$f" before-carry/build/
  strip --strip-debug "before-carry/build/$f"
done
git archive "$COMMIT" include python prompts rules | tar -x -C before-carry
du -sh before-carry
