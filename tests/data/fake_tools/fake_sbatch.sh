#!/bin/sh
# A stand-in for Slurm's sbatch in the campaign's e2e test (tests/e2e/bench_e2e_test.cc): takes
# `--parsable --array=0-N [options] SCRIPT`, runs SCRIPT once per array index, one after another,
# with SLURM_JOB_ID and SLURM_ARRAY_TASK_ID set as Slurm sets them, and prints the job id.
# $FAKE_SBATCH_CANCEL=I skips index I, as a task cancelled before it started; every call appends
# its arguments to $FAKE_SBATCH_LOG. The real engine runs in scripts/slurm_localhost.sh.
[ -n "${FAKE_SBATCH_LOG:-}" ] && echo "$*" >> "$FAKE_SBATCH_LOG"
last=""
script=""
for a in "$@"; do
  case "$a" in
    --array=*) range=${a#--array=}; last=${range#*-} ;;
    -*) ;;
    *) script=$a ;;
  esac
done
[ -n "$script" ] && [ -n "$last" ] || { echo "fake sbatch: need --array=0-N and a script" >&2; exit 1; }
job=$$
i=0
while [ "$i" -le "$last" ]; do
  if [ "${FAKE_SBATCH_CANCEL:-}" != "$i" ]; then
    SLURM_JOB_ID=$job SLURM_ARRAY_JOB_ID=$job SLURM_ARRAY_TASK_ID=$i sh "$script" > /dev/null 2>&1
  fi
  i=$((i + 1))
done
echo "$job"
