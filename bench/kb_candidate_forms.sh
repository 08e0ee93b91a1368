#!/usr/bin/env bash
# Build and eval time of one KernelBench candidate in its two forms, cold and warm caches:
# the fast form (ModelNew + a .cu built by kernelpro's nvcc pipeline) against the standard
# load_inline form (named baseline). Prints one line per run and the ratios. Needs a GPU and
# torch. Usage: bench/kb_candidate_forms.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
KB=tests/data/kernelbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # form cache_state candidate
  local form=$1 state=$2 cand=$3
  [ "$state" = cold ] && rm -rf "$work/cache"
  "$BUILD/kernelpro" eval "$KB/problems/relu.py" "$KB/honest/$cand" --cache-dir "$work/cache" --no-energy --json \
    > "$work/$form-$state.json" || true
  python3 - "$work/$form-$state.json" "$form" "$state" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["seconds"]
load = j.get("worker", {}).get("phase_seconds", {}).get("load", 0.0)
phases = j.get("worker", {}).get("phase_seconds", {})
print(f"{sys.argv[2]:7s} {sys.argv[3]:5s} outcome={j['outcome']:9s} build={s['build']:7.2f}s worker_load={load:7.2f}s "
      f"worker_start={s.get('worker_start', 0):6.2f}s total={s['total']:7.2f}s  phases: "
      + " ".join(f"{k}={v:.2f}" for k, v in phases.items()))
PY
}
run fast cold relu_fast.py
run fast warm relu_fast.py
# load_inline builds inside the worker, into <cache>/torch_extensions: cold means a fresh cache.
run inline cold relu_inline.py
run inline warm relu_inline.py
python3 - "$work" <<'PY'
import json, sys, os
w = sys.argv[1]
t = {k: json.load(open(os.path.join(w, k + ".json")))["seconds"]["total"] for k in
     ("fast-cold", "fast-warm", "inline-cold", "inline-warm")}
print(f"load_inline / fast, total eval time: cold {t['inline-cold'] / t['fast-cold']:.1f}x, "
      f"warm {t['inline-warm'] / t['fast-warm']:.1f}x")
PY
