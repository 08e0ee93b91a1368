#!/usr/bin/env bash
# Runs the flaw suite: for every flaw folder and each variant (flawed.cu, fixed.cu), kernelpro's
# findings (`kernelpro analyze --json`) and the Nsight Compute rules that fire under
# `ncu --set full` on the same one-shot worker request (as bench/profile_wall.sh does). Writes
# one JSON line per (flaw, variant) to OUT/results.jsonl; a pair already there is skipped, so an
# interrupted run resumes. kernelpro's evidence is saved to OUT/evidence/FLAW-VARIANT.json, to be
# analyzed again without a GPU (bench/flaws/replay.py). Needs a GPU and ncu. Then:
# python3 bench/flaws/score.py OUT/results.jsonl
# Usage: bench/flaws/run.sh [BUILD_DIR] [OUT_DIR] [FLAW...]
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
OUT=${2:-bench/flaws/out}
shift 2 || shift $# || true
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"
touch "$RESULTS"
export PATH=/usr/local/cuda/bin:$PATH
# This GPU's measured ceilings, once per machine (KP_CALIBRATION, default under /tmp): without
# them the roofline divides by the datasheet's, and on the H200 a 32-bit stream at 66% of the
# measured 4.28 TB/s reads as 59% of the datasheet's 4.8 TB/s, under the 60% memory-bound line.
CAL=${KP_CALIBRATION:-/tmp/kernelpro-flaws-calibration}
if ! ls "$CAL"/*.json > /dev/null 2>&1; then
  "$BUILD/kernelpro" calibrate --store "$CAL" >> "$OUT/calibrate.log" 2>&1 ||
    echo "calibration failed (see $OUT/calibrate.log): datasheet ceilings" >&2
fi
FLAWS=${*:-$(ls -d bench/flaws/[0-9]*/)}
for d in $FLAWS; do
  d=${d%/}
  name=$(basename "$d")
  for variant in flawed fixed; do
    if python3 - "$RESULTS" "$name" "$variant" <<'PY'
import json, sys
path, name, variant = sys.argv[1:]
for line in open(path):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("flaw") == name and j.get("variant") == variant:
        sys.exit(0)
sys.exit(1)
PY
    then
      echo "skip $name/$variant (already in $RESULTS)"
      continue
    fi
    work="$OUT/work/$name-$variant"
    mkdir -p "$work"
    t0=$(date +%s)
    # kernelpro: the findings of the analyze command, its scratch directory kept: the system
    # trace's one-shot request in it is the same candidate run that ncu gets below, switched from
    # the trace to an NVTX range of one call (what `--collector ncu` sends the worker).
    # --stage2-all: stage 2 collects every tool's metrics (the same tools run), so the saved
    # evidence can be analyzed again with changed tools: bench/flaws/replay.py.
    mkdir -p "$OUT/evidence"
    "$BUILD/kernelpro" analyze "$d/" "$d/$variant.cu" --calibration "$CAL" --keep-scratch --json --stage2-all \
      --save-evidence "$OUT/evidence/$name-$variant.json" > "$work/analyze.json" 2> "$work/analyze.err"
    kp_rc=$?
    scratch=$(sed -n 's/^kernelpro: scratch directory //p' "$work/analyze.err" | head -1)
    req=$(ls "$scratch"/trace-*.request.json 2>/dev/null | head -1)
    ncu_rc=-1
    if [ -n "$req" ]; then
      python3 - "$req" "$work/request.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["profile"]["mode"] = "nvtx"
r["profile"]["calls"] = 1
json.dump(r, open(sys.argv[2], "w"))
PY
      # ncu: its own rules, on the full set of sections they read.
      ncu --clock-control none --set full --print-details all --launch-count 64 --nvtx --nvtx-include "kp_candidate/" \
        --target-processes all --csv --page details --log-file "$work/ncu.csv" \
        "$BUILD/kp-worker" --once "$work/request.json" "$work/ncu.reply.json" > "$work/ncu.out" 2>&1
      ncu_rc=$?
    fi
    [ -n "$scratch" ] && rm -rf "$scratch"
    python3 - "$RESULTS" "$name" "$variant" "$work" "$kp_rc" "$ncu_rc" "$(( $(date +%s) - t0 ))" "$d" <<'PY'
import csv, json, os, sys
results, name, variant, work, kp_rc, ncu_rc, secs, folder = sys.argv[1:]
row = {"flaw": name, "variant": variant, "kp_rc": int(kp_rc), "ncu_rc": int(ncu_rc), "seconds": int(secs)}
# expected tool, for the record (score.py reads expected.toml itself when it is absent)
try:
    for line in open(os.path.join(folder, "expected.toml")):
        if line.startswith("flaw"):
            row["expected"] = line.split("=", 1)[1].strip().strip('"')
except OSError:
    pass
try:
    j = json.load(open(os.path.join(work, "analyze.json")))
    row["kp_tools"] = sorted({f.get("tool") for f in j.get("findings", []) if f.get("tool")})
    row["kp_seconds"] = j.get("seconds", {})
    timing = ((j.get("profile") or {}).get("counters") or {}).get("timing_s")
    if timing:
        row["kp_counter_timing_s"] = timing
except (OSError, ValueError) as e:
    row["kp_error"] = str(e)
rules = set()
try:
    with open(os.path.join(work, "ncu.csv"), newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prefixes its own ==PROF== lines
    reader = csv.DictReader(lines)
    for r in reader:
        rule, kind = r.get("Rule Name") or "", (r.get("Rule Type") or "").upper()
        # OPT and WRN are findings; INF and OK are informational
        if rule and kind in ("OPT", "WRN", "WARNING", "OPTIMIZATION"):
            rules.add(rule)
    row["ncu_rules"] = sorted(rules)
except OSError as e:
    row["ncu_error"] = str(e)
with open(results, "a") as out:
    out.write(json.dumps(row, sort_keys=True) + "\n")
print(f"{name}/{variant}: kernelpro {row.get('kp_tools')} | ncu {row.get('ncu_rules')}")
PY
  done
done
echo "results: $RESULTS; score: python3 bench/flaws/score.py $RESULTS"
