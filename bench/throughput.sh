#!/usr/bin/env bash
# Evaluation throughput, before and after, on one GPU in one run (issue 27's table): the wall
# time of `kernelpro eval` on two native examples and on KernelBench level1/19_ReLU in both
# candidate forms, the offline tuner's candidates per GPU-minute, and the model loop's
# evaluation plus analysis against its evaluation alone. Each row runs once per build, each
# with a build cache of its own warmed first (the rows time evaluation, not nvcc).
#
# Usage: bench/throughput.sh BEFORE_KERNELPRO AFTER_KERNELPRO OUT_DIR RELU_PROBLEM
#   BEFORE_KERNELPRO, AFTER_KERNELPRO: the two kernelpro binaries (each finds its kp-worker
#   beside it); RELU_PROBLEM: KernelBench's level1/19_ReLU.py. ROWS (default "gelu transpose
#   relu_fast relu_inline tuner model") picks rows, model_apart (the model row with its two
#   profiling collections apart) and model_wide (with the old Range Profiler capacity) among
#   them, and a suffix repeats a model row (model_2, model_wide_2); TUNER_MINUTES (default 1)
#   caps the tuner.
#   CACHE (default /tmp/kp-throughput): the builds' caches, CACHE/before and CACHE/after (one
#   XDG_CACHE_HOME each; torch's extension builds are shared, the same source gives the same
#   module). Each eval row runs once untimed first, so the timed run finds its build cached.
# Writes OUT_DIR/results.jsonl (one line per row and build) and OUT_DIR/table.md.
set -uo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1 AFTER=$2 OUT=$3 RELU=$4
ROWS=${ROWS:-"gelu transpose relu_fast relu_inline tuner model"}
TUNER_MINUTES=${TUNER_MINUTES:-1}
CACHE=${CACHE:-/tmp/kp-throughput}
mkdir -p "$OUT" "$CACHE/after/kernelpro/build/torch_extensions" "$CACHE/before/kernelpro/build"
ln -sfn "$CACHE/after/kernelpro/build/torch_extensions" "$CACHE/before/kernelpro/build/torch_extensions"
: > "$OUT/results.jsonl"
KB_HONEST=tests/data/kernelbench/honest

now() { date +%s.%N; }
# row NAME BUILD_LABEL KERNELPRO ARGS...: runs `kernelpro ARGS --json`, appends its wall time and
# JSON to results.jsonl.
row() {
  local name=$1 label=$2 kp=$3
  shift 3
  local t0 t1 rc
  t0=$(now)
  "$kp" "$@" --json > "$OUT/$name-$label.json" 2> "$OUT/$name-$label.err"
  rc=$?
  t1=$(now)
  python3 - "$OUT/$name-$label.json" "$name" "$label" "$t0" "$t1" "$rc" >> "$OUT/results.jsonl" <<'PY'
import json, sys
path, name, label, t0, t1, rc = sys.argv[1:]
try:
    j = json.load(open(path))
except Exception as e:
    j = {"error": f"no JSON: {e}"}
print(json.dumps({"row": name, "build": label, "wall_s": float(t1) - float(t0), "exit": int(rc), "result": j}))
PY
  echo "throughput: $name $label $(python3 -c "print(f'{$t1-$t0:.1f}')") s (exit $rc)" >&2
}

for label in ${BUILDS:-before after}; do
  kp=$BEFORE; [ "$label" = after ] && kp=$AFTER
  export XDG_CACHE_HOME="$CACHE/$label" XDG_DATA_HOME="$CACHE/data-$label"
  for r in $ROWS; do
    case $r in
      gelu|transpose)
        "$kp" eval "examples/$r" --json > /dev/null 2>&1  # warms the build cache
        row "$r" "$label" "$kp" eval "examples/$r" ;;
      relu_fast*)  # a suffix repeats the row (relu_fast_2)
        "$kp" eval "$RELU" "$KB_HONEST/relu_fast.py" --json > /dev/null 2>&1
        row "$r" "$label" "$kp" eval "$RELU" "$KB_HONEST/relu_fast.py" ;;
      relu_inline)
        "$kp" eval "$RELU" "$KB_HONEST/relu_inline.py" --json > /dev/null 2>&1  # builds the extension
        row relu_inline "$label" "$kp" eval "$RELU" "$KB_HONEST/relu_inline.py" ;;
      tuner)
        row tuner "$label" "$kp" optimize examples/transpose --run-dir "$OUT/tune-$label" --budget 9 \
          --minutes "$TUNER_MINUTES" ;;
      model*)
        # The seed and one candidate, each evaluated and analyzed for the planner. Variants by
        # name (any suffix repeats a row): model_apart* collects stage 1 and stage 2 apart, as
        # before the loop's one collection (ARCHITECTURE.md, d-one-collection; the switch
        # KP_LOOP_STAGE2_APART=1); model_wide* gives the worker's Range Profiler session 256
        # launches from the start, as before it grew from 16 (d-session-capacity; KP_RP_CAPACITY).
        env=()
        [[ $r == model_apart* ]] && env+=(KP_LOOP_STAGE2_APART=1)
        [[ $r == model_wide* ]] && env+=(KP_RP_CAPACITY=256)
        row "$r" "$label" env "${env[@]}" "$kp" optimize examples/gelu --run-dir "$OUT/$r-$label" --budget 2 \
          --config bench/throughput/model.toml --no-tools --in-flight 1 ;;
    esac
  done
done
python3 bench/throughput/table.py "$OUT/results.jsonl" | tee "$OUT/table.md"
