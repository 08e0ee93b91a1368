#!/usr/bin/env bash
# Issue 41's agreement figure: the same candidates judged by the old judge (a build from before the
# judge core) and by this one, alternating, in one run on one card; each candidate's two medians
# and their ratio. Run from the repo root on the GPU machine.
# Usage: bench/judge_agree.sh BEFORE_KERNELPRO AFTER_KERNELPRO OUT_DIR
#   ROUNDS (default 2): before/after pairs per candidate (the table takes the median of each side)
# The candidates: the seven native examples' seeds, the committed campaigns' best kernels, and
# KernelBench's 19_ReLU and 30_Softsign with their committed fast forms (kb/ holds the problems).
# Writes OUT_DIR/agree.jsonl (one line per evaluation) and OUT_DIR/agree.md (also from a run cut
# short: bench/judge_agree.sh --table OUT_DIR).
set -uo pipefail
cd "$(dirname "$0")/.."
table() {  # table OUT_DIR: agree.md from what agree.jsonl holds so far (a run cut short too)
python3 - "$1/agree.jsonl" > "$1/agree.md" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows.setdefault(r["row"], {}).setdefault(r["build"], []).append(r)
print("| candidate | old judge (median us) | judge core (median us) | core / old | outcomes |")
print("|---|---|---|---|---|")
for name, by in rows.items():
    def med(b):
        xs = [r["median_s"] for r in by.get(b, []) if r["outcome"] == "ok" and r["median_s"]]
        return statistics.median(xs) * 1e6 if xs else None
    b, a = med("before"), med("after")
    ratio = f"{a / b:.3f}" if a and b else "-"
    outs = "; ".join(f"{k}: {','.join(str(r['outcome']) for r in v)}" for k, v in by.items())
    print(f"| {name} | {b and f'{b:.2f}' or '-'} | {a and f'{a:.2f}' or '-'} | {ratio} | {outs} |")
PY
cat "$1/agree.md"
}
if [ "${1:-}" = --table ]; then table "$2"; exit 0; fi
BEFORE=$1 AFTER=$2 OUT=$3
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
: > "$OUT/agree.jsonl"
R=bench/results/h100-2026-12-06-optimize/runs
rows=()
for e in gelu softmax layernorm transpose row_sum gemm_bf16 gemm_fp32; do rows+=("$e-seed|examples/$e"); done
rows+=("transpose-model-best|examples/transpose $R/model-transpose/best.cu"
       "transpose-tuned-best|examples/transpose $R/tune-transpose/best.cu"
       "layernorm-tuned-best|examples/layernorm $R/tune-layernorm/best.cu"
       "softmax-tuned-best|examples/softmax $R/tune-softmax/best.cu"
       "kb-relu-fast|kb/19_ReLU.py tests/data/kernelbench/honest/relu_fast.py"
       "kb-softsign-best|kb/30_Softsign.py $R/model-softsign/best.py --cu $R/model-softsign/best.cu")
for row in "${rows[@]}"; do
  name=${row%%|*}
  read -r -a args <<< "${row#*|}"
  for ((i = 1; i <= ROUNDS; i++)); do
    for label in before after; do
      kp=$BEFORE; [ "$label" = after ] && kp=$AFTER
      [ -x "$kp" ] || continue
      "$kp" eval "${args[@]}" --json --no-energy > "$OUT/$name-$label-$i.json" 2> "$OUT/$name-$label-$i.err"
      python3 - "$OUT/$name-$label-$i.json" "$name" "$label" >> "$OUT/agree.jsonl" <<'PY'
import json, sys
path, name, label = sys.argv[1:]
try:
    j = json.load(open(path))
except Exception as e:
    j = {"outcome": "no JSON", "reason": str(e)}
t = (j.get("time") or {}).get("median_s") or 0
print(json.dumps({"row": name, "build": label, "outcome": j.get("outcome"), "median_s": t,
                  "reason": str(j.get("reason", ""))[:200]}))
PY
    done
  done
done
table "$OUT"
