#!/usr/bin/env bash
# Wall time to profile one candidate, by collector, against `ncu --set full` on the same
# one-shot worker run (the named baseline, measured in the same run):
#   cupti stage 1   the stage-1 list in the warm worker (CUPTI Range Profiler, user replay: the
#                   worker reruns the candidate once per counter pass)
#   cupti kernel    the same with --replay kernel (CUPTI saves and restores device memory
#                   around every pass), the in-process baseline user replay replaces
#   cupti stage 2   stage 1 plus the stage-2 families the class calls for
#   ncu stage 1     the stage-1 list through ncu on `kp-worker --once`
#   ncu --set full  the same one-shot request under `ncu --set full`
# Times are the counters step of `kernelpro profile` (the worker request: loading the candidate,
# warm-up calls and the collection; in brackets the collection alone), not the evaluation.
# Needs a GPU and ncu. Usage: bench/profile_wall.sh [BUILD_DIR] [TASK...]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
TASKS=${*:-examples/transpose examples/gelu examples/softmax}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH=/usr/local/cuda/bin:$PATH
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
for t in $TASKS; do
  n=$(basename "$t")
  "$BUILD/kernelpro" profile "$t" --no-trace --no-sass --json > "$work/$n-c1.json" 2>/dev/null
  "$BUILD/kernelpro" profile "$t" --no-trace --no-sass --replay kernel --json > "$work/$n-ck.json" 2>/dev/null
  "$BUILD/kernelpro" profile "$t" --no-trace --no-sass --stage 2 --json > "$work/$n-c2.json" 2>/dev/null
  "$BUILD/kernelpro" profile "$t" --no-trace --no-sass --collector ncu --keep-scratch --json > "$work/$n-n1.json" 2> "$work/$n-n1.err"
  "$BUILD/kernelpro" profile "$t" --no-trace --no-sass --collector ncu --stage 2 --json > "$work/$n-n2.json" 2>/dev/null
  scratch=$(sed -n 's/^kernelpro: scratch directory //p' "$work/$n-n1.err" | head -1)
  req=$(ls "$scratch"/ncu-*.request.json 2>/dev/null | head -1)
  full=nan
  if [ -n "$req" ]; then
    t0=$(date +%s.%N)
    ncu --clock-control none --set full --nvtx --nvtx-include "kp_candidate/" --target-processes all \
      --csv --page raw --log-file "$work/full.csv" "$BUILD/kp-worker" --once "$req" "$work/full.reply.json" >/dev/null 2>&1
    full=$(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),3))" "$t0")
  fi
  kt=$(field "$work/$n-c1.json" "round(j['eval']['time']['median_s']*1e3,3)" 2>/dev/null || echo nan)
  c1=$(field "$work/$n-c1.json" "round(j['counters']['wall_s'],3)" 2>/dev/null || echo nan)
  c1c=$(field "$work/$n-c1.json" "round(j['counters']['collect_s'],3)" 2>/dev/null || echo nan)
  ck=$(field "$work/$n-ck.json" "round(j['counters']['wall_s'],3)" 2>/dev/null || echo nan)
  ckc=$(field "$work/$n-ck.json" "round(j['counters']['collect_s'],3)" 2>/dev/null || echo nan)
  c2=$(field "$work/$n-c2.json" "round(j['counters']['wall_s'] + j['seconds'].get('stage2',0),3)" 2>/dev/null || echo nan)
  n1=$(field "$work/$n-n1.json" "round(j['counters']['wall_s'],3)" 2>/dev/null || echo nan)
  n2=$(field "$work/$n-n2.json" "round(j['counters']['wall_s'] + j['seconds'].get('stage2',0),3)" 2>/dev/null || echo nan)
  printf '%-10s kernel %7s ms | cupti: stage1 %6s s (collection %6s s), kernel replay %6s s (collection %6s s), +stage2 %6s s | ncu: stage1 %6s s, +stage2 %6s s | ncu --set full %6s s\n' \
    "$n" "$kt" "$c1" "$c1c" "$ck" "$ckc" "$c2" "$n1" "$n2" "$full"
  python3 - "$c1" "$ck" "$c2" "$n1" "$n2" "$full" <<'PY'
import sys
c1, ck, c2, n1, n2, full = (float(x) for x in sys.argv[1:])
print(f"           against ncu --set full: cupti stage1 {full / c1:.1f}x faster, cupti kernel replay {full / ck:.1f}x, "
      f"cupti +stage2 {full / c2:.1f}x, ncu stage1 {full / n1:.1f}x, ncu +stage2 {full / n2:.1f}x; "
      f"user replay against kernel replay {ck / c1:.1f}x")
PY
  rm -rf "$scratch"
done
