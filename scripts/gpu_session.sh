#!/usr/bin/env bash
# Runs the GPU tiers, an eval of every example and the benchmarks on a GPU machine, writing
# everything under OUT (default ./gpu-results). The binaries come from BUILD (default build).
# Used for the H200 runs quoted in closing notes; each step keeps going when one fails.
set -u
BUILD=${BUILD:-build}
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/kp-cache}
step() { echo; echo "== $*"; }
{
  step "machine"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv; nvcc --version | tail -1
  step "doctor"; "$BUILD/kernelpro" doctor
  step "ctest gpu + e2e"; (cd "$BUILD" && ctest -L 'gpu|e2e' --output-on-failure --timeout 300)
  mkdir -p /tmp/kp-evals
  for t in examples/*/; do
    j="/tmp/kp-evals/eval_$(basename "$t").json"
    step "eval $t"; "$BUILD/kernelpro" eval "$t" --json > "$j"; echo "exit $?"
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); e=j.get('worker',{}).get('energy',{}); print(j['outcome'], j['reason'][:200], 'median_us=%.1f' % (j.get('time',{}).get('median_s',0)*1e6), 'ref_us=%.1f' % (j.get('reference_median_s',0)*1e6), 'speedup=%.3f' % j.get('speedup_vs_reference',0), 'GB/s=%.0f' % (j.get('achieved_bytes_per_s',0)/1e9), 'J/call=%.4g' % e.get('joules_per_call',0), 'W=%.0f' % e.get('average_watts',0), 'idle_W=%.0f' % e.get('idle_watts',0), 'wall_s=%.2f' % j['seconds']['total'])" "$j"
  done
  tar czf "$OUT/evals.tar.gz" -C /tmp kp-evals
  step "eval gelu (table)"; "$BUILD/kernelpro" eval examples/gelu
  step "bench eval_wall"; "$BUILD/bench/kp_bench_eval_wall"
  step "bench timing_repeatability"; "$BUILD/bench/kp_bench_timing_repeatability"
  step "bench build_latency"; "$BUILD/bench/kp_bench_build_latency"
} 2>&1 | tee "$OUT/session.log"
