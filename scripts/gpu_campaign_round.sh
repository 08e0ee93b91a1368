#!/usr/bin/env bash
# One round of a KernelBench campaign answered in bulk (issue 42), on the GPU machine: the first
# round makes the campaign from the suite carried as $SUITE/ (KernelBench's level folders) and
# measures its PyTorch baselines and seeds; each later round carries the campaign back as $CAMPAIGN/
# and goes on (`bench run`), measuring what the answers written since made. Every round leaves in
# OUT: the waiting prompts (prompts.json), the report (report.json, .html, .csv, .txt) and the
# campaign ($CAMPAIGN.tar.gz) to carry into the next round. Build: gpu-carry/ (pack_gpu_build.sh).
#   CAMPAIGN  the campaign folder (default kbc)        SUITE  the suite folder (default kbsuite)
#   ONLY      problem stems (default: every problem of the suite)
#   BUDGET    candidates per problem (default 3)   IN_FLIGHT  children per wave (default 2)
#   FEEDBACK  tools (default) or none              LEVELS     default 1,2
#   RETRY     set: a later round runs the failed problems again too (--retry-failed)
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
source scripts/gpu_env.sh
C=${CAMPAIGN:-kbc}
{
  echo "== machine ($(date +%T))"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  cat gpu-carry/COMMIT 2>/dev/null
  if [ -f "$C/campaign.json" ]; then
    echo "== bench run $C ($(date +%T))"
    retry=()
    [ -n "${RETRY:-}" ] && retry=(--retry-failed)
    timeout "${LIMIT_S:-480}" build/kernelpro bench run "$C" --gpus 0 "${retry[@]}"
  else
    echo "== bench run $C --suite ${SUITE:-kbsuite} ($(date +%T))"
    only=()
    [ -n "${ONLY:-}" ] && only=(--only "$ONLY")
    timeout "${LIMIT_S:-480}" build/kernelpro bench run "$C" --suite "${SUITE:-kbsuite}" --levels "${LEVELS:-1,2}" "${only[@]}" \
      --provider manual --budget "${BUDGET:-3}" --in-flight "${IN_FLIGHT:-2}" --feedback "${FEEDBACK:-tools}" --gpus 0
  fi
  echo "exit $?"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
  echo "== report ($(date +%T))"
  build/kernelpro bench report "$C" --html "$OUT/report.html" --csv "$OUT/report.csv" | tee "$OUT/report.txt"
  build/kernelpro bench report "$C" --json > "$OUT/report.json"
  build/kernelpro bench prompts "$C" --json > "$OUT/prompts.json"
  build/kernelpro bench prompts "$C"
  for f in "$C"/runs/*/optimize.log; do echo "--- $f"; tail -n 25 "$f"; done
} 2>&1 | tee "$OUT/round.log"
tar czf "$OUT/$(basename "$C").tar.gz" "$C"
