#!/usr/bin/env bash
# A kernelpro campaign through a real Slurm: a one-node cluster on this machine
# (scripts/slurm_localhost.sh), the real sbatch, the fake worker (no GPU needed).
#   1. `bench run --suite examples --only gelu,transpose --slurm=... --gpus-per-task 0` submits a
#      two-task array; both tasks run; `bench status --json` says both problems are done.
#   2. The same with --hold: task 1 is cancelled (scancel JOB_1) before it runs, the array is
#      released; one problem done, the cancelled one pending. A resubmission (no --suite) submits
#      only that one (submit-1.list), it runs, both are done; one more says there is nothing to submit.
# Run from the repository root: tests/slurm/campaign_slurm_test.sh [BUILD_DIR]   (default: build)
# Exit 0: passed; 1: failed; 77: skipped (the cluster cannot run here; the reason is printed).
# KP_SLURM_DIR picks the cluster's state dir (scripts/slurm_localhost.sh). The test stops the
# cluster at the end only if it started it.
set -uo pipefail

BUILD=${1:-build}
KP=$(cd "$BUILD" 2>/dev/null && pwd)/kernelpro
WORKER=$PWD/tests/data/fake_workers/fake_worker.sh
SLURM_SH=$PWD/scripts/slurm_localhost.sh
WAIT_S=${KP_SLURM_WAIT:-300}
T0=$SECONDS
failures=0
started_cluster=0
TMP=""
JOBS_SUBMITTED=()

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
skip() { echo "SKIPPED: $*"; exit 77; }
note() { echo "  ... $*"; }

[ -x "$KP" ] || { echo "FAIL: no kernelpro at $BUILD/kernelpro (run from the repository root; build first)"; exit 1; }
[ -x "$WORKER" ] || { echo "FAIL: no fake worker at $WORKER (run from the repository root)"; exit 1; }
command -v python3 >/dev/null || skip "python3 is needed to read bench status --json"
if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin /usr/local/cuda-12/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
command -v nvcc >/dev/null 2>&1 || skip "nvcc not found (the examples are compiled even with the fake worker)"

# shellcheck disable=SC2317  # run by the trap
cleanup() {
  local rc=$?
  # Jobs of this test still queued (a failure, an interrupt) go before the cluster does.
  for j in "${JOBS_SUBMITTED[@]}"; do scancel "$j" >/dev/null 2>&1; done
  if [ "$started_cluster" = 1 ]; then "$SLURM_SH" stop >/dev/null 2>&1; fi
  if [ -n "$TMP" ] && [ -d "$TMP" ]; then
    if [ "$failures" -eq 0 ] && [ "$rc" -eq 0 ]; then rm -rf "$TMP"; else echo "(campaigns kept in $TMP)"; fi
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the cluster --------------------------------------------------------------------------------
if "$SLURM_SH" status >/dev/null 2>&1; then
  note "a local cluster already runs; using it (it is left running)"
else
  started_cluster=1
fi
t=$SECONDS
start_log=$(mktemp)
if ! export_line=$("$SLURM_SH" start 2>"$start_log"); then
  reason=$(grep -m1 'FAILED:' "$start_log" | sed 's/^slurm_localhost: FAILED: //')
  sed 's/^/  | /' "$start_log"
  rm -f "$start_log"
  skip "no local Slurm cluster: ${reason:-scripts/slurm_localhost.sh start failed}"
fi
rm -f "$start_log"
eval "$export_line"
[ -n "${SLURM_CONF:-}" ] || skip "scripts/slurm_localhost.sh start printed no SLURM_CONF"
pass "local Slurm cluster up in $((SECONDS - t)) s ($SLURM_CONF)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kp-slurm-test.XXXXXX")
chmod 0755 "$TMP"
export FAKE_MODE=ok  # reaches the array tasks: sbatch's default is --export=ALL

# --- helpers ------------------------------------------------------------------------------------
last_job() { awk 'NF {j = $1} END {print j}' "$1/slurm/jobs.txt" 2>/dev/null; }

# wait_job JOB: until no task of JOB is queued or running (squeue lists none, or no longer knows it).
wait_job() {
  local job=$1 deadline=$((SECONDS + WAIT_S)) out rc
  while ((SECONDS < deadline)); do
    out=$(squeue -h -r -j "$job" -o '%i %T' 2>&1); rc=$?
    if [ "$rc" -eq 0 ] && [ -z "$out" ]; then return 0; fi
    if [ "$rc" -ne 0 ] && grep -qi 'invalid job id' <<<"$out"; then return 0; fi
    sleep 1
  done
  echo "  squeue after ${WAIT_S}s:"; squeue -r -j "$job" 2>&1 | sed 's/^/  | /'
  return 1
}

# states CAMPAIGN: "id=state id=state ..." in the campaign's order, from bench status --json.
states() {
  "$KP" bench status "$1" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(p["id"] + "=" + p["state"] for p in d["problems"]))' 2>/dev/null
}

show_outputs() {  # what the array tasks printed, on failure
  local f
  for f in "$1"/slurm/*.out; do
    [ -e "$f" ] || continue
    echo "  --- $f"; sed 's/^/  | /' "$f"
  done
}

submit() {  # submit CAMPAIGN ARGS...: bench run with the real sbatch; sets JOB
  local c=$1; shift
  local out
  JOB=""
  if ! out=$("$KP" bench run "$c" "$@" --gpus-per-task 0 2>&1); then
    echo "$out" | sed 's/^/  | /'
    return 1
  fi
  echo "$out" | sed 's/^/  | /'
  JOB=$(last_job "$c")
  [ -n "$JOB" ] && JOBS_SUBMITTED+=("$JOB")
  [ -n "$JOB" ]
}

# --- 1: a two-problem array, both run -------------------------------------------------------------
t=$SECONDS
C1=$TMP/plain
if submit "$C1" --suite examples --only gelu,transpose --budget 2 --worker "$WORKER" --slurm=--time=10; then
  pass "campaign 1 submitted as job array $JOB ($(wc -l <"$C1/slurm/submit-0.list") tasks)"
  if wait_job "$JOB"; then
    got=$(states "$C1")
    if [ "$got" = "gelu=done transpose=done" ]; then
      pass "campaign 1: both problems done through Slurm ($got) in $((SECONDS - t)) s"
    else
      fail "campaign 1: bench status says '$got', expected gelu=done transpose=done"; show_outputs "$C1"
    fi
    for i in 0 1; do
      [ -s "$C1/slurm/${JOB}_$i.out" ] || fail "campaign 1: no output of array task ${JOB}_$i"
    done
  else
    fail "campaign 1: job $JOB did not finish in ${WAIT_S}s"; show_outputs "$C1"
  fi
else
  fail "campaign 1: bench run --slurm failed"
fi

# --- 2: held, one task cancelled, released, resubmitted -----------------------------------------
t=$SECONDS
C2=$TMP/cancelled
if submit "$C2" --suite examples --only gelu,transpose --budget 2 --worker "$WORKER" --slurm="--hold --time=10"; then
  J=$JOB
  cancelled=$(sed -n 2p "$C2/slurm/submit-0.list")
  held=$(squeue -h -r -j "$J" -o '%T %r' 2>&1 | sort | uniq -c | tr -s ' ')
  if [ "$(squeue -h -r -j "$J" -o '%T %r' 2>/dev/null | grep -c 'PENDING JobHeldUser')" = 2 ]; then
    pass "campaign 2: array $J submitted held (both tasks PENDING, JobHeldUser)"
  else
    fail "campaign 2: array $J not held as asked: squeue says '$held'"
  fi
  slurm_lines=$("$KP" bench status "$C2" --json 2>/dev/null | python3 -c '
import json, sys
print(len([l for l in json.load(sys.stdin)["slurm"] if l.startswith("squeue:") and "PENDING" in l]))' 2>/dev/null)
  if [ "$slurm_lines" = 2 ]; then pass "campaign 2: bench status --json lists the 2 pending tasks from squeue"
  else fail "campaign 2: bench status --json lists ${slurm_lines:-no} pending squeue line(s), expected 2"; fi
  # While the held array still holds both problems, a resubmission must not submit them again.
  out=$("$KP" bench run "$C2" --slurm=--time=10 --gpus-per-task 0 2>&1)
  j=$(last_job "$C2"); [ -n "$j" ] && [ "$j" != "$J" ] && JOBS_SUBMITTED+=("$j")
  if grep -q '^Nothing to submit' <<<"$out" && [ ! -e "$C2/slurm/submit-1.list" ]; then
    pass "campaign 2: a resubmission while the array holds both problems submits nothing"
  else
    fail "campaign 2: a resubmission while the array was queued said: $out"
  fi
  if scancel "${J}_1" && scontrol release "$J" >/dev/null; then
    pass "campaign 2: cancelled task ${J}_1 ($cancelled), released the rest"
  else
    fail "campaign 2: scancel ${J}_1 / scontrol release $J failed"
  fi
  if wait_job "$J"; then
    got=$(states "$C2")
    want=$(for id in gelu transpose; do
             if [ "$id" = "$cancelled" ]; then printf '%s=pending ' "$id"; else printf '%s=done ' "$id"; fi
           done | sed 's/ $//')
    if [ "$got" = "$want" ]; then pass "campaign 2: after the cancel: $got"
    else fail "campaign 2: after the cancel bench status says '$got', expected '$want'"; show_outputs "$C2"; fi
    [ -e "$C2/slurm/${J}_1.out" ] && fail "campaign 2: the cancelled task ${J}_1 ran anyway (its output exists)"
  else
    fail "campaign 2: job $J did not finish in ${WAIT_S}s"; show_outputs "$C2"
  fi

  # The resubmission: no --suite, no --hold; only the cancelled problem.
  if submit "$C2" --slurm=--time=10; then
    J2=$JOB
    list1=$(cat "$C2/slurm/submit-1.list" 2>/dev/null)
    if [ "$J2" != "$J" ] && [ "$list1" = "$cancelled" ]; then
      pass "campaign 2: resubmitted as array $J2; submit-1.list holds only '$cancelled'"
    else
      fail "campaign 2: resubmission: job '$J2' (first was $J), submit-1.list holds '$(tr '\n' ' ' <<<"$list1")', expected only '$cancelled'"
    fi
    if wait_job "$J2"; then
      got=$(states "$C2")
      if [ "$got" = "gelu=done transpose=done" ]; then
        pass "campaign 2: both problems done after the resubmission ($got) in $((SECONDS - t)) s"
      else
        fail "campaign 2: after the resubmission bench status says '$got'"; show_outputs "$C2"
      fi
    else
      fail "campaign 2: job $J2 did not finish in ${WAIT_S}s"; show_outputs "$C2"
    fi
    # Once more: nothing left, nothing submitted.
    out=$("$KP" bench run "$C2" --slurm=--time=10 --gpus-per-task 0 2>&1)
    j=$(last_job "$C2"); [ -n "$j" ] && [ "$j" != "$J2" ] && JOBS_SUBMITTED+=("$j")
    if grep -q '^Nothing to submit' <<<"$out" && [ ! -e "$C2/slurm/submit-2.list" ]; then
      pass "campaign 2: a third bench run --slurm submits nothing"
    else
      fail "campaign 2: a third bench run --slurm said: $out"
    fi
  else
    fail "campaign 2: the resubmission failed"
  fi
else
  fail "campaign 2: bench run --slurm --hold failed"
fi

echo "campaign_slurm_test: $failures failure(s), $((SECONDS - T0)) s"
if [ "$failures" -eq 0 ]; then echo "PASS: campaign_slurm_test"; exit 0; fi
echo "FAIL: campaign_slurm_test"
exit 1
