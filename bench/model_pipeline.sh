#!/usr/bin/env bash
# The model loop's pipeline against the sequential loop (the named baseline, --in-flight 1, run
# in the same invocation): the wall time of `kernelpro optimize examples/gelu` over the same
# budget with a scripted model (bench/pipeline_model.py) that takes LATENCY seconds per reply,
# as an LLM behind an API does. With two in flight the model writes the next candidate while the
# GPU measures and profiles the last, so the wall time approaches max(model, GPU) per candidate
# instead of their sum. Needs a GPU. Usage: bench/model_pipeline.sh [BUILD_DIR] [BUDGET] [LATENCY]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BUDGET=${2:-5}
export KP_BENCH_LATENCY=${3:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH=/usr/local/cuda/bin:$PATH
cat > "$work/model.toml" <<TOML
[llm]
provider = "command"
command = ["python3", "$PWD/bench/pipeline_model.py"]
model = "scripted"
timeout_s = 120
TOML
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
echo "in_flight wall_s llm_s ahead_s build_s worker_s analyze_s evaluated best_speedup_vs_seed"
for n in 1 2; do
  export KP_BENCH_STATE="$work/count-$n"
  "$BUILD/kernelpro" optimize examples/gelu --config "$work/model.toml" --no-tools --in-flight "$n" \
    --budget "$BUDGET" --run-dir "$work/run-$n" --memory "$work/memory-$n.db" --json > "$work/$n.json" 2> "$work/$n.err" ||
    { echo "in-flight $n failed:"; tail -5 "$work/$n.err"; exit 1; }
  field "$work/$n.json" "' '.join(str(x) for x in ['$n', round(j['time_s']['wall'],1), round(j['time_s']['llm'],1), round(j['time_s']['ahead'],1), round(j['time_s']['build'],1), round(j['time_s']['worker'],1), round(j['time_s']['analyze'],1), j['evaluated'], round(j['speedup_vs_seed'],2)])"
done
python3 - "$work/1.json" "$work/2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
wa, wb = a["time_s"]["wall"], b["time_s"]["wall"]
print(f"pipeline: {wa / wb:.2f}x the speed of --in-flight 1 ({wa:.1f} s -> {wb:.1f} s wall) for {b['evaluated']} evaluations each")
PY
