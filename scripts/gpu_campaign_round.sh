#!/usr/bin/env bash
# One round of a KernelBench campaign answered in bulk (issue 42), on the GPU machine: the first
# round makes the campaign from the suite carried as kbsuite/ (KernelBench's level folders) and
# measures its PyTorch baselines and seeds; each later round carries the campaign back as kbc/ and
# goes on (`bench run`), measuring what the answers written since made. Every round leaves in OUT:
# the waiting prompts (prompts.json), the report (report.json, .html, .csv, .txt) and the campaign
# (kbc.tar.gz) to carry into the next round. Build: gpu-carry/ (scripts/pack_gpu_build.sh).
#   ONLY      problem stems (default: every problem of the suite)
#   BUDGET    candidates per problem (default 3)   IN_FLIGHT  children per wave (default 2)
#   FEEDBACK  tools (default) or none              LEVELS     default 1,2
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
source scripts/gpu_env.sh
{
  echo "== machine ($(date +%T))"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  cat gpu-carry/COMMIT 2>/dev/null
  if [ -f kbc/campaign.json ]; then
    echo "== bench run kbc ($(date +%T))"
    timeout "${LIMIT_S:-480}" build/kernelpro bench run kbc --gpus 0
  else
    echo "== bench run kbc --suite kbsuite ($(date +%T))"
    only=()
    [ -n "${ONLY:-}" ] && only=(--only "$ONLY")
    timeout "${LIMIT_S:-480}" build/kernelpro bench run kbc --suite kbsuite --levels "${LEVELS:-1,2}" "${only[@]}" \
      --provider manual --budget "${BUDGET:-3}" --in-flight "${IN_FLIGHT:-2}" --feedback "${FEEDBACK:-tools}" --gpus 0
  fi
  echo "exit $?"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
  echo "== report ($(date +%T))"
  build/kernelpro bench report kbc --html "$OUT/report.html" --csv "$OUT/report.csv" | tee "$OUT/report.txt"
  build/kernelpro bench report kbc --json > "$OUT/report.json"
  build/kernelpro bench prompts kbc --json > "$OUT/prompts.json"
  build/kernelpro bench prompts kbc
  for f in kbc/runs/*/optimize.log; do echo "--- $f"; tail -n 25 "$f"; done
} 2>&1 | tee "$OUT/round.log"
tar czf "$OUT/kbc.tar.gz" kbc
