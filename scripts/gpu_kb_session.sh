#!/usr/bin/env bash
# One GPU session for the KernelBench work: the Python anti-cheat suite, the C++ GPU and e2e
# tiers, the candidate-forms benchmark, then a slice of the H200 baseline that resumes where the
# last one stopped. Logs go to OUT. BASELINE_S bounds the baseline slice; DEADLINE_S (seconds
# since the script started) instead gives the slice whatever time the earlier steps left.
# BASELINE_OUT (default bench/baselines/h200) may be a scratch copy that outlives one call.
set -u
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-gpu-results}
SUITE=${SUITE:-kb-suite}
BASELINE_S=${BASELINE_S:-240}   # PREWARM_JOBS (6): parallel torch.compile warm-ups first
BASELINE_OUT=${BASELINE_OUT:-bench/baselines/h200}
STEPS=${STEPS:-python ctest forms baseline}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/kp-cache}
step() { echo; echo "== $* ($(date -u +%T))"; }
for s in $STEPS; do
  case $s in
    python) step "python gpu tests"; (cd python && timeout 420 python3 tests/run_tests.py gpu) > "$OUT/python_gpu.log" 2>&1
            echo "exit $?"; grep -E "^(HONEST|CHEAT)|^(OK|FAILED)" "$OUT/python_gpu.log" | cut -c1-400 ;;
    ctest)  step "ctest gpu + e2e"; (cd "$BUILD" && timeout 420 ctest -L 'gpu|e2e' -E python_gpu --output-on-failure --timeout 300) \
              > "$OUT/ctest.log" 2>&1; echo "exit $?"; grep -E "tests passed|Failed|\*\*\*|SKIPPED" "$OUT/ctest.log" | head -40 ;;
    forms)  step "candidate forms"; timeout 400 bench/kb_candidate_forms.sh "$BUILD" 2>&1 | tee "$OUT/forms.log" ;;
    baseline) [ -n "${DEADLINE_S:-}" ] && BASELINE_S=$(( DEADLINE_S - SECONDS ))
              step "baseline slice of ${BASELINE_S} s"; "$BUILD/kernelpro" baseline --suite "$SUITE" --out "$BASELINE_OUT" \
                --time-budget "$BASELINE_S" --timeout 300 --prewarm-jobs "${PREWARM_JOBS:-6}" > "$OUT/baseline.log" 2>&1; echo "exit $?"; tail -25 "$OUT/baseline.log"
              mkdir -p "$OUT/h200" && cp "$BASELINE_OUT"/*.json "$OUT/h200/" 2>/dev/null ;;
  esac
done
