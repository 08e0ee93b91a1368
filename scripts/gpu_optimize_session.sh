#!/usr/bin/env bash
# The figures of `kernelpro optimize` (issue 7) and of the CuTe GEMM (issue 8) on the GPU
# machine. Run from the repo root there, with a build packed here by
# `BUILD=build bash scripts/pack_gpu_build.sh` and the CUTLASS headers the CuTe seed includes
# (`CUTLASS=1 BUILD=build bash scripts/pack_gpu_build.sh` adds them, as gpu-carry/cutlass), both
# carried as gpu-carry, and the model runs so far (carry runs/h200).
#   STEPS="model cute tune profile ctest"   what to do, in this order (default: all)
#   TUNE="transpose softmax layernorm gemm_bf16_cute"   the tuner's examples, in this order
#   DEADLINE_S=400                  no step starts after this many seconds; each is cut at it
# Writes $OUT/summary.txt and $OUT/results.tgz (every log, JSON and run folder), so one call's
# files fit the device tool's eight. The model runs (`--provider manual`) advance to their next
# unanswered prompt: unpack runs/h200 here, answer the prompts in each llm/manual/, resume here
# (each answered candidate is built, then the run stops for want of a GPU), and call again.
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT" /work && ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build" build
cd /work/main
export XDG_CACHE_HOME=/tmp/kpcache XDG_DATA_HOME=/tmp/kpdata LD_LIBRARY_PATH=$PWD/gpu-carry/lib
[ -d gpu-carry/cutlass ] && export CUTLASS_PATH=$PWD/gpu-carry/cutlass
K=build/kernelpro
R=results
mkdir -p "$R" runs/h200
start=$(date +%s)
deadline=$((start + ${DEADLINE_S:-400}))
left() { echo $((deadline - $(date +%s))); }
# run NAME SECONDS CMD...: the command's stdout to $R/NAME.out, stderr to $R/NAME.log, cut at
# the smaller of SECONDS and the deadline; one line to the summary.
run() {
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  ((l < 10)) && { echo "$name: skipped, deadline" | tee -a "$R/summary.txt"; return; }
  ((limit > l)) && limit=$l
  local t0; t0=$(date +%s)
  timeout "$limit" "$@" > "$R/$name.out" 2> "$R/$name.log"
  local rc=$?
  echo "$name: rc=$rc ${limit}s-limit wall=$(($(date +%s) - t0))s $(tail -1 "$R/$name.log" | cut -c1-200)" | tee -a "$R/summary.txt"
}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  nvcc --version | tail -1
  git log -1 --format='tree at %h %s' 2>/dev/null
} > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
for step in ${STEPS:-model cute tune profile ctest}; do
  case $step in
    cute)  # the CuTe GEMM against cuBLAS (the task's reference)
      run cute_eval 150 $K eval examples/gemm_bf16_cute --json ;;
    profile)  # ... with its counters, SASS and trace
      run cute_profile 120 $K profile examples/gemm_bf16_cute ;;
    tune)  # the offline tuner on four examples: every point of each KP_TUNE space, within a minute each
      for t in ${TUNE:-transpose softmax layernorm gemm_bf16_cute}; do
        resume=""; [ -e "runs/h200/tune-$t/store.db" ] && resume="--resume"
        run "tune-$t" 120 $K optimize "examples/$t" --run-dir "runs/h200/tune-$t" --budget 9 --minutes 1.2 --json $resume
      done ;;
    model)  # one step of the model loop, the model being a person (manual provider)
      for m in "transpose examples/transpose" "softsign tests/data/llm/h200/problems/30_Softsign.py"; do
        set -- $m
        resume=""; [ -e "runs/h200/model-$1/store.db" ] && resume="--resume"
        run "model-$1" 200 $K optimize "$2" --provider manual --run-dir "runs/h200/model-$1" --budget 8 $resume
      done ;;
    ctest)  # the GPU tests of the loop and the CuTe build
      run ctest 200 bash -c "cd build && ctest -R '${CTEST_REGEX:-OptimizeE2e|EverySeedIsCorrectAndTimed}' --output-on-failure" ;;
  esac
done
cp "$R/summary.txt" "$OUT/summary.txt"
tar czf "$OUT/results.tgz" "$R" runs/h200
echo "total $(($(date +%s) - start))s"
