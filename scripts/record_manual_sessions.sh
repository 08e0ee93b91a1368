#!/usr/bin/env bash
# Records the manual-provider sessions of tests/data/llm/h200 (README there). On the GPU machine,
# from the repo root, with a build packed by scripts/pack_gpu_build.sh (BUILD=build) carried in
# gpu-carry/: advances every session by one step (to its next unanswered prompt, or to its end),
# then packs the run folders into $OUT/runs.tgz. Unpack them here, answer the new prompts in
# each manual/ folder, and run it again.
# usage: record_manual_sessions.sh STEP [--tests CTEST_REGEX]
#   RUNS="softmax rmsnorm" limits it to some sessions; EXTRA="--max-debug 1" adds flags.
step=$1; shift
mkdir -p /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build" build
cd /work/main
export XDG_CACHE_HOME=/tmp/kpcache
ldd build/kernelpro | grep -i "not found"
R=tests/data/llm/h200
declare -A TASKS=([softmax]=examples/softmax [transpose]=examples/transpose
                  [rmsnorm]=$R/problems/36_RMSNorm_.py [gemm_sum]=$R/problems/14_Gemm_Divide_Sum_Scaling.py)
for name in ${RUNS:-softmax transpose rmsnorm gemm_sum}; do
  d=$R/$name
  resume=""; [ -e "$d/session.json" ] && resume="--resume"
  start=$(date +%s)
  timeout 300 build/kernelpro generate "${TASKS[$name]}" --provider manual --run-dir "$d" $resume $EXTRA > "$OUT/$name.$step.log" 2>&1
  rc=$?
  echo "rc=$rc wall=$(( $(date +%s) - start ))s" >> "$OUT/$name.$step.log"
  tail -2 "$OUT/$name.$step.log" | cut -c1-300
done
if [ "$1" = "--tests" ]; then
  (cd build && ctest -R "$2" --output-on-failure) > "$OUT/ctest.$step.log" 2>&1; tail -5 "$OUT/ctest.$step.log"
fi
tar czf "$OUT/runs.tgz" $R
