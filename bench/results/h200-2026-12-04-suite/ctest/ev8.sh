#!/usr/bin/env bash
# The gpu-labelled CTest tests, then the e2e ones, with this commit's build (gpu-carry/build).
set -uo pipefail
mkdir -p /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build" build
export PATH=/usr/local/cuda/bin:$PATH
git log --oneline -1 > $OUT/commit.txt 2>&1 || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > $OUT/machine.txt 2>&1
t0=$(date +%s)
timeout 400 ctest --test-dir build -L gpu --output-on-failure > $OUT/ctest_gpu.log 2>&1
echo "gpu rc=$? $(( $(date +%s) - t0 )) s" | tee -a $OUT/ctest_gpu.log
t1=$(date +%s)
timeout 150 ctest --test-dir build -L e2e -j4 --output-on-failure > $OUT/ctest_e2e.log 2>&1
echo "e2e rc=$? $(( $(date +%s) - t1 )) s" | tee -a $OUT/ctest_e2e.log
tail -4 $OUT/ctest_gpu.log $OUT/ctest_e2e.log
