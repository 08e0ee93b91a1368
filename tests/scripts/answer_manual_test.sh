#!/usr/bin/env bash
# scripts/answer_manual.py, as the GPU session uses it: a run's waiting prompts (here the H200
# RMSNorm session's, answers removed) get the recorded answers of their roles, a second pass
# writes nothing, a role without a recorded answer stays waiting, and the exit status says
# whether anything was answered.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REC=$ROOT/tests/data/llm/h200/rmsnorm/manual
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/run/manual"
cp "$REC"/*.prompt.md "$T/run/manual/"
python3 "$ROOT/scripts/answer_manual.py" "$T/run" "$REC" > "$T/out"
n=0
for a in "$REC"/*.answer.md; do
  cmp -s "$a" "$T/run/manual/$(basename "$a")" || { echo "FAIL: $(basename "$a") is not the recorded answer of its role"; exit 1; }
  n=$((n + 1))
done
[ "$n" -eq 3 ] || { echo "FAIL: expected the analyst's, planner's and coder's answers, got $n"; exit 1; }
if python3 "$ROOT/scripts/answer_manual.py" "$T/run" "$REC" > "$T/out2"; then
  echo "FAIL: a second pass answered again: $(cat "$T/out2")"; exit 1
fi
# The Softsign session (no analyst answer): the analyst's prompt is left waiting.
rm "$T/run/manual/"*.answer.md
if ! python3 "$ROOT/scripts/answer_manual.py" "$T/run" "$ROOT/bench/results/h100-2026-12-06-optimize/runs/model-softsign/manual" > "$T/out3"; then
  echo "FAIL: the planner and coder prompts were not answered"; exit 1
fi
grep -q "no recorded answer for this prompt's role ('analyst')" "$T/out3" || { echo "FAIL: $(cat "$T/out3")"; exit 1; }
[ "$(ls "$T/run/manual/"*.answer.md | wc -l)" -eq 2 ] || { echo "FAIL: expected two answers"; exit 1; }
echo "answer_manual: ok"
