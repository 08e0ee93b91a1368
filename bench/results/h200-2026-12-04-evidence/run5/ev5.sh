#!/usr/bin/env bash
# GPU session 2026-12-04 (b): flaws 16, 17, 20 anew; ProfileE2e (KernelBench prewarm); python gpu;
# analyze of two example seeds. Run from the repo root on the H200: OUT=$OUT bash gpu-carry/ev5.sh
set -uo pipefail
mkdir -p /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build" build
export PATH=/usr/local/cuda/bin:$PATH
R=bench/results/h200-2026-12-04-evidence
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $L/machine.txt 2>&1
t0=$(date +%s)
bash bench/flaws/run.sh build $R bench/flaws/16_atomics_contention bench/flaws/17_barrier_overhead bench/flaws/20_low_ilp > $L/flaws.log 2>&1
echo "flaws $(( $(date +%s) - t0 )) s" >> $L/times.txt
t0=$(date +%s)
for ex in softmax transpose; do
  build/kernelpro analyze examples/$ex > $L/analyze_$ex.txt 2> $L/analyze_$ex.err
  build/kernelpro analyze examples/$ex --json > $L/analyze_$ex.json 2>> $L/analyze_$ex.err
done
echo "analyze $(( $(date +%s) - t0 )) s" >> $L/times.txt
t0=$(date +%s)
(cd build && ctest -R 'ProfileE2e' -V --timeout 300) > $L/ctest_profile_e2e.log 2>&1
echo "e2e $(( $(date +%s) - t0 )) s" >> $L/times.txt
t0=$(date +%s)
(cd build && timeout 200 ctest -R python_gpu -V) > $L/ctest_python_gpu.log 2>&1
echo "python_gpu $(( $(date +%s) - t0 )) s" >> $L/times.txt
tar czf $OUT/r.tgz --exclude="$R/work/*/ncu.csv" $R
echo done
