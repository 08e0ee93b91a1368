#!/usr/bin/env bash
# The judge core's GPU session (issue 41): its own tests, both workers' cheat and honest tables,
# and the red-team rounds, on the GPU machine. Run from the repo root there, with the build made
# here carried as gpu-carry/ (SLIM=1 BUILD=build bash scripts/pack_gpu_build.sh). Everything it
# prints goes to OUT/session.log; OUT/results.tar.gz holds the logs of each step.
#   STEPS   which steps, in order (default: core python native); also relu, agree
#   KP_ONLY comma-separated words: the Python tables run only the candidates whose path has one
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT/logs"
source scripts/gpu_env.sh
# The CuTe example's headers, carried when packed with CUTLASS=1 (or moved to cutlass-carry/, to
# travel in a call of their own when the build and the tree leave no room beside them).
[ -d gpu-carry/cutlass ] && export CUTLASS_PATH=$PWD/gpu-carry/cutlass
[ -d cutlass-carry ] && export CUTLASS_PATH=$PWD/cutlass-carry
# The old judge's build (scripts/pack_before_build.sh), for the agree step.
[ -d before-carry ] && ln -sfn "$PWD/before-carry" /work/before
STEPS=${STEPS:-"core python native"}
step() { echo; echo "== $* ($(date +%T))"; }
pack() { tar czf "$OUT/results.tar.gz" -C "$OUT" logs 2>/dev/null; }
T0=$(date +%s)
run() {  # run NAME TIMEOUT_S COMMAND...: the step's output in logs/NAME.log and on stdout; no step
  # runs past DEADLINE_S seconds from the start (default 570, inside the device tool's 600)
  local name=$1 limit=$2
  shift 2
  local left=$(( ${DEADLINE_S:-570} - ($(date +%s) - T0) ))
  ((left < 15)) && { echo "$name: skipped, deadline"; return; }
  ((limit > left)) && limit=$left
  step "$name"
  timeout "$limit" "$@" 2>&1 | tee "$OUT/logs/$name.log"
  echo "exit ${PIPESTATUS[0]}"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
  pack
}
{
  step machine
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv
  python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
  cat gpu-carry/COMMIT 2>/dev/null
  for s in $STEPS; do
    case $s in
      core) run core 40 build/tests/kp_gpu_tests --gtest_filter='JudgeSession*' ;;
      cute) run cute 60 build/tests/kp_gpu_tests --gtest_filter='*cute*' ;;
      native) run native 110 build/tests/kp_gpu_tests \
                --gtest_filter='*CheatIsCaught*:*HonestCandidatePasses*:AntiCheatRules*:*RedTeam*' ;;
      python) run python 330 python3 python/tests/run_tests.py gpu ;;
      agree)  # issue 41: the old judge and the core on the same candidates, alternating (before-carry)
        ROUNDS=${ROUNDS:-2} run agree 420 bash bench/judge_agree.sh /work/before/build/kernelpro build/kernelpro "$OUT/logs/agree"
        bash bench/judge_agree.sh --table "$OUT/logs/agree"; pack ;;
      relu)  # issue 41, item 4: the fast form's evaluation of level1/19_ReLU, warm (kb/ carried:
        # KernelBench's 19_ReLU.py copied from shared/kernelbench/level1)
        BUILDS=after ROWS="relu_fast relu_fast_2 relu_inline" run relu 150 \
          bash bench/throughput.sh none build/kernelpro "$OUT/logs/throughput" kb/19_ReLU.py ;;
      *) echo "unknown step $s" ;;
    esac
  done
} 2>&1 | tee "$OUT/session.log"
pack
