#!/usr/bin/env bash
# GPU session 2026-12-04 (b), call 2: flaws 07 (both) and 09 (fixed) anew; python gpu tests.
set -uo pipefail
mkdir -p /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build" build
export PATH=/usr/local/cuda/bin:$PATH
R=bench/results/h200-2026-12-04-evidence
L=/tmp/logs6; mkdir -p $L
t0=$(date +%s)
bash bench/flaws/run.sh build $R bench/flaws/07_accidental_fp64 bench/flaws/09_tail_effect > $L/flaws.log 2>&1
echo "flaws $(( $(date +%s) - t0 )) s" >> $L/times.txt
t0=$(date +%s)
(cd build && timeout 300 ctest -R python_gpu -V) > $L/ctest_python_gpu.log 2>&1
echo "python_gpu $(( $(date +%s) - t0 )) s" >> $L/times.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv > $L/machine.txt 2>&1
cp -r $L $R/run6
tar czf $OUT/r.tgz --exclude="$R/work/*/ncu.csv" $R
cat $L/times.txt; tail -4 $L/flaws.log; grep -E "OK|FAIL|passed|failed" $L/ctest_python_gpu.log | tail -5
