#!/usr/bin/env bash
# The whole flaw suite with one build (this commit), resumable: each call runs flaws until
# DEADLINE_S seconds have passed, then packs what is there. Repeat until all 42 rows exist.
set -uo pipefail
mkdir -p /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build" build
export PATH=/usr/local/cuda/bin:$PATH
R=bench/results/h200-2026-12-04-suite
mkdir -p $R
DEADLINE_S=${DEADLINE_S:-480}
t0=$(date +%s)
for d in bench/flaws/[0-9]*/; do
  (( $(date +%s) - t0 > DEADLINE_S )) && { echo "deadline: stopping before $d"; break; }
  bash bench/flaws/run.sh build $R $d >> $R/run.log 2>&1
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv >> $R/machine.txt 2>&1
echo "slice $(( $(date +%s) - t0 )) s" >> $R/run.log
tar czf $OUT/r.tgz --exclude="$R/work/*/ncu.csv" $R
wc -l $R/results.jsonl; tail -3 $R/run.log
