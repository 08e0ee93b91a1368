#!/bin/sh
# A stand-in for Nsight Compute's `ncu` on machines without a GPU (ncu cannot run in CI). It
# accepts the argv real ncu gets from kernelpro (profile/ncu/ncu_runner.h): options first, then
# the program and its arguments, which it runs the way ncu does, with the same stdout, stderr,
# environment and working directory. What it writes to the --log-file is chosen by $FAKE_NCU_MODE:
#   ok          (default) runs the program; then, if it succeeded, copies the file $FAKE_NCU_FIXTURE
#               (a captured real log) to the log; if it failed, logs ncu's "The application
#               returned an error code (N)." and exits N
#   perm        logs ncu's ERR_NVGPUCTRPERM error, runs the program, exits 0
#   no_kernels  runs the program, logs "==WARNING== No kernels were profiled."
#   bad_metric  logs "==ERROR== Failed to find metric M" for the last name of --metrics, exits 1
#   error       logs two ==ERROR== lines about a failed replay, exits 1
#   hang        never ends
#   no_log      runs the program and writes no log
# `ncu --version` prints the version banner of Nsight Compute 2025.3.1. When $FAKE_NCU_ARGV is
# set, every argument is appended to that file, one per line, before anything else happens.
if [ -n "${FAKE_NCU_ARGV:-}" ]; then
  for a in "$@"; do printf '%s\n' "$a" >> "$FAKE_NCU_ARGV"; done
fi
log=/dev/stdout
metrics=
while [ $# -gt 0 ]; do
  case "$1" in
    --version)
      echo "NVIDIA (R) Nsight Compute Command Line Profiler"
      echo "Copyright (c) 2018-2025 NVIDIA Corporation"
      echo "Version 2025.3.1.0 (build 36398880) (public-release)"
      exit 0 ;;
    --log-file) log=$2; shift 2 ;;
    --metrics) metrics=$2; shift 2 ;;
    --clock-control|--cache-control|--replay-mode|--target-processes|--nvtx-include|--set|--page|--print-units)
      shift 2 ;;
    --nvtx|--csv) shift ;;
    --*) echo "==ERROR== unrecognised option '$1'. Use --help for further details." >&2; exit 1 ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then echo "==ERROR== No application to profile." >&2; exit 1; fi

connect() { echo "==PROF== Connected to process $$ ($1)"; }
case "${FAKE_NCU_MODE:-ok}" in
  ok)
    "$@"; status=$?
    if [ $status -ne 0 ]; then
      { connect "$1"; echo "==ERROR== The application returned an error code ($status)."; } > "$log"
      exit $status
    fi
    cat "$FAKE_NCU_FIXTURE" > "$log" ;;
  perm)
    { connect "$1"
      echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
    } > "$log"
    "$@" ;;
  no_kernels)
    "$@"
    { connect "$1"; echo "==PROF== Disconnected from process $$"; echo "==WARNING== No kernels were profiled."; } > "$log" ;;
  bad_metric)
    last=${metrics##*,}
    echo "==ERROR== Failed to find metric $last" > "$log"
    exit 1 ;;
  error)
    { connect "$1"
      echo "==ERROR== Failed to profile \"rowsoftmax\" in process $$"
      echo "==ERROR== An error was reported by the driver"
    } > "$log"
    exit 1 ;;
  hang) exec sleep 1000 ;;
  no_log) "$@" ;;
esac
