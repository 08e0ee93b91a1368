#!/usr/bin/env bash
# Issue 27's figures on the GPU machine, in steps that fit the device tool's calls. Run from the
# repo root there, carrying:
#   gpu-carry     this build, packed by `CUTLASS=1 BUILD=build SLIM=1 bash scripts/pack_gpu_build.sh`
#                 (CUTLASS=1 brings the headers the CuTe seed includes; without them the gpu
#                 tier's two CuTe cases fail with "cute/tensor.hpp: No such file")
#   before-carry  the build of the commit before the judge (`bash scripts/pack_before_build.sh`):
#                 its kernelpro, kp-worker and CUPTI libraries in build/, and the files they read
#                 at run time (include/, python/, prompts/, rules/) from that commit
#   kb            KernelBench's level1/19_ReLU.py and 23_Softmax.py (copied from shared/kernelbench)
#   STEPS="throughput capacity probe agree stall campaign examples energy kbmanual multi mcp ctest python"   what to do, in this order (default: throughput
#                 agree ctest python)
#   DEADLINE_S=560                           no step starts after this; each is cut at it
# Writes $OUT/results.tgz and $OUT/summary.txt (the device tool returns eight files).
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT" /work
ln -sfn "$PWD" /work/main && ln -sfn "$PWD/gpu-carry/build" build && ln -sfn "$PWD/before-carry" /work/before
cd /work/main
[ -d gpu-carry/cutlass ] && export CUTLASS_PATH=$PWD/gpu-carry/cutlass
export XDG_CACHE_HOME=/tmp/kpcache XDG_DATA_HOME=/tmp/kpdata LD_LIBRARY_PATH=$PWD/gpu-carry/lib PYTHONUNBUFFERED=1
R=results
mkdir -p "$R"
start=$(date +%s)
deadline=$((start + ${DEADLINE_S:-560}))
left() { echo $((deadline - $(date +%s))); }
# run NAME SECONDS CMD...: stdout to $R/NAME.out, stderr to $R/NAME.log, cut at the smaller of
# SECONDS and the deadline; one line to the summary.
run() {
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  ((l < 10)) && { echo "$name: skipped, deadline" | tee -a "$R/summary.txt"; return; }
  ((limit > l)) && limit=$l
  local t0; t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$R/$name.out" 2> "$R/$name.log"
  local rc=$?
  echo "$name: rc=$rc ${limit}s-limit wall=$(($(date +%s) - t0))s $(tail -1 "$R/$name.log" | cut -c1-200)" | tee -a "$R/summary.txt"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >> "$R/gpu_procs.txt" 2>&1
  # What is done so far comes back even when the call is cut before the end.
  tar czf "$OUT/results.tgz" "$R" 2>/dev/null; cp "$R/summary.txt" "$OUT/" 2>/dev/null
}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c 'import torch; print("torch", torch.__version__)'
  echo "binaries built at $(cat gpu-carry/COMMIT 2>/dev/null || echo 'an unrecorded commit')"
} > "$R/machine.txt" 2>&1
cat "$R/machine.txt"
for step in ${STEPS:-throughput agree ctest python}; do
  case $step in
    throughput)  # the issue's table, before and after, on this card
      [ -x /work/before/build/kernelpro ] || export BUILDS=after
      run throughput 540 bash bench/throughput.sh /work/before/build/kernelpro build/kernelpro "$R/throughput" kb/19_ReLU.py ;;
    capacity)  # what the Range Profiler session's capacity costs a warm collection: the loop's
      # one list and the stage-1 list, each at the capacities CAPS (ARCHITECTURE.md, d-session-capacity)
      run capacity-loop 90 build/kp_rangeprof_probe --metrics tests/data/cupti/loop_metrics.txt \
        --capacity-study "${CAPS:-256,64,16,4}"
      run capacity-stage1 90 build/kp_rangeprof_probe --metrics tests/data/cupti/stage1_metrics.txt \
        --capacity-study "${CAPS:-256,64,16,4}"
      grep -h "^KP_RP_CAP" "$R"/capacity-*.out > "$OUT/capacity.txt" 2>/dev/null ;;
    probe)  # where the KernelBench worker's start and set-up go (twice: the second finds files cached)
      run probe-1 60 python3 bench/throughput/worker_probe.py kb/19_ReLU.py
      run probe-2 60 python3 bench/throughput/worker_probe.py kb/19_ReLU.py ;;
    agree)  # the seven examples' seeds, timed by both builds: the medians must agree within 1%
      for e in gelu softmax layernorm transpose row_sum gemm_bf16 gemm_fp32; do
        [[ " ${AGREE:-after before} " == *" after "* ]] && run "agree-$e-after" 60 build/kernelpro eval "examples/$e" --json --no-energy
        [[ " ${AGREE:-after before} " == *" before "* ]] && [ -x /work/before/build/kernelpro ] &&
          run "agree-$e-before" 60 /work/before/build/kernelpro eval "examples/$e" --json --no-energy
      done ;;
    ctest)  # the gpu tier (and e2e, which runs the real binaries on the GPU); the Python GPU
      # suite is the python step's, with a call of its own (it builds load_inline extensions)
      # CTEST_REGEX: only the tests it matches (a rerun of some)
      run ctest 560 ctest --test-dir build -L "${CTEST_LABELS:-gpu|e2e}" -E python_gpu ${CTEST_REGEX:+-R "$CTEST_REGEX"} \
        --output-on-failure --timeout 300 ;;
    stall)  # issue 28, item 5: a result-cache candidate on level1/23_Softmax (6.4 GB in, 6.4 GB
      # out) once ran past 200 s without a verdict; it must end with one well inside the limit
      run stall-softmax-cache 300 build/kernelpro eval kb/23_Softmax.py \
        tests/data/kernelbench/cheats/fingerprint_cache.py --cu tests/data/kernelbench/honest/softmax_fast.cu --json
      run stall-softmax-honest 300 build/kernelpro eval kb/23_Softmax.py \
        tests/data/kernelbench/honest/softmax_fast.py --cu tests/data/kernelbench/honest/softmax_fast.cu --json ;;
    campaign)  # issue 29: a campaign over native examples with the offline tuner, then its report
      run campaign 240 build/kernelpro bench run "$R/campaign" --suite examples --only ${CAMPAIGN_ONLY:-gelu,transpose,softmax} \
        --budget ${CAMPAIGN_BUDGET:-4}
      run campaign-status 30 build/kernelpro bench status "$R/campaign"
      run campaign-report 60 build/kernelpro bench report "$R/campaign" --html "$R/campaign/report.html" --csv "$R/campaign/report.csv"
      cp "$R/campaign-report.out" "$OUT/campaign_report.txt" 2>/dev/null ;;
    examples|energy)  # issue 29: the seven native examples with the offline tuner (examples), and
      # again with the energy objective (energy); each campaign's report as text, JSON, CSV, HTML
      c="$R/campaign-$step"; extra=""
      [ "$step" = energy ] && extra="--objective energy-at-matched-time"
      run "$step" 300 build/kernelpro bench run "$c" --suite examples --budget ${EX_BUDGET:-4} $extra
      run "$step-report" 60 build/kernelpro bench report "$c" --html "$c/report.html" --csv "$c/report.csv"
      build/kernelpro bench report "$c" --json > "$c/report.json" 2>> "$R/$step-report.log" ;;
    kbmanual)  # issue 29: ten KernelBench level-1 problems (bench/campaigns/kb_level1_20.txt's
      # first ten, from kb/level1) with the manual provider; 30_Softsign and 36_RMSNorm_ answered
      # with the answers a person wrote in earlier sessions (scripts/answer_manual.py), the others
      # left waiting. The baselines of the answered two only (the rest have no candidate to compare).
      c="$R/campaign-kb"
      only=$(grep -v '^#' bench/campaigns/kb_level1_20.txt | head -10 | paste -sd,)
      run kb 240 build/kernelpro bench run "$c" --suite kb --levels 1 --only "$only" --provider manual --budget ${KB_BUDGET:-3} --no-baselines
      card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
      slug=$(echo "$card" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
      run kb-baselines 120 build/kernelpro baseline --suite kb --levels 1 --only 30_Softsign.py,36_RMSNorm_.py --out "$c/baselines/$slug"
      for round in 1 2 3 4 5; do
        a=0
        python3 scripts/answer_manual.py "$c/runs/level1-30_Softsign" bench/results/h100-2026-12-06-optimize/runs/model-softsign/manual >> "$R/kb-answers.txt" && a=1
        python3 scripts/answer_manual.py "$c/runs/level1-36_RMSNorm_" tests/data/llm/h200/rmsnorm/manual >> "$R/kb-answers.txt" && a=1
        ((a)) || break
        run "kb-round-$round" 150 build/kernelpro bench run "$c" --problem level1/30_Softsign,level1/36_RMSNorm_
      done
      run kb-report 60 build/kernelpro bench report "$c" --html "$c/report.html" --csv "$c/report.csv"
      build/kernelpro bench report "$c" --json > "$c/report.json" 2>> "$R/kb-report.log" ;;
    multi)  # issue 31, on a host with two or more GPUs: the seven examples with the offline tuner
      # on every GPU, then on one; then the gpu tier with its tests pinned to device 1
      n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
      if ((n < 2)); then echo "multi: skipped, $n GPU(s)" | tee -a "$R/summary.txt"; continue; fi
      for g in all 0; do
        c="$R/campaign-gpus-$g"
        run "multi-$g" 240 build/kernelpro bench run "$c" --suite examples --budget ${EX_BUDGET:-4} --gpus "$g"
        build/kernelpro bench report "$c" --json > "$c/report.json" 2>> "$R/multi-$g.log"
      done
      CUDA_VISIBLE_DEVICES=1 run ctest-device1 300 ctest --test-dir build -L gpu -E python_gpu --output-on-failure --timeout 300 ;;
    mcp)  # issue 30: the official MCP Python SDK drives `kernelpro mcp` (evaluate, analyze, a short
      # optimize); its wheels for the machine's Python are carried in .kp-tools/mcp-wheels
      # (pip download --python-version 3.12 --only-binary=:all: mcp==2.3.0), installed offline
      python3 -m pip install --quiet --no-index --find-links .kp-tools/mcp-wheels --target /tmp/kp-mcp mcp==2.3.0 \
        > "$R/mcp-install.log" 2>&1 || echo "mcp: the SDK did not install" >> "$R/summary.txt"
      KP_MCP_TRANSCRIPT="$R/mcp_transcript.json" run mcp 240 python3 tests/e2e/mcp_client_test.py build/kernelpro /tmp/kp-mcp ;;
    python)  # the KernelBench worker's GPU suite (anti-cheat corpus, the new timing tests)
      run python_gpu 560 python3 python/tests/run_tests.py gpu ;;
  esac
done
nvidia-smi > "$R/nvidia-smi-end.txt" 2>&1
tar czf "$OUT/results.tgz" "$R" 2>/dev/null
cp "$R/summary.txt" "$OUT/" 2>/dev/null
[ -f "$R/throughput/table.md" ] && cp "$R/throughput/table.md" "$OUT/"
exit 0
