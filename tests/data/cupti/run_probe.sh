#!/usr/bin/env bash
# Builds kp_rangeprof_probe with nvcc, runs it against BUILD_DIR/libkp_rangeprof.so, runs the
# same launches under ncu, and compares the two collectors metric by metric.
#
#   tests/data/cupti/run_probe.sh BUILD_DIR [METRICS_FILE] [OUT_DIR]
#
# METRICS_FILE: one metric name a line (default: stage1_metrics.txt beside this script).
# OUT_DIR: where everything goes (default: $OUT if set, else /tmp/kp_rangeprof_probe):
#   probe.txt        the probe on the whole list (KP_RP_* lines, see rangeprof_probe.cu)
#   probe_each.txt   the probe with --each: every metric alone, accepted or rejected, passes
#   ncu_raw.csv      ncu --page raw --print-units base of the probe's --plain run (cache flushed)
#   ncu_warm_raw.csv the same with --cache-control none (read_small: is L2 warm?)
#   compare.txt      CUPTI vs ncu per kernel and metric
# Exit status: the probe's (0 when every session produced its JSON).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [METRICS_FILE] [OUT_DIR]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
metrics=${2:-$here/stage1_metrics.txt}
out=${3:-${OUT:-/tmp/kp_rangeprof_probe}}
mkdir -p "$out"
lib=$build/libkp_rangeprof.so
[ -f "$lib" ] || { echo "$lib not found: cmake --build $build --target kp_rangeprof" >&2; exit 2; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
probe=$bin_dir/rangeprof_probe

now() { date +%s.%N; }

echo "== building the probe"
"$nvcc" -std=c++17 -O2 -arch=sm_90 -lineinfo -I"$root/src" -o "$probe" "$here/rangeprof_probe.cu" -ldl || exit 2

echo "== probe, whole list ($metrics)"
t0=$(now)
"$probe" --lib "$lib" --metrics "$metrics" > "$out/probe.txt" 2>&1
rc=$?
t1=$(now)
cat "$out/probe.txt"
echo "probe exit $rc, wall $(awk "BEGIN{print $t1 - $t0}") s (process start, allocations and all sessions)"

echo "== probe, each metric alone"
"$probe" --lib "$lib" --metrics "$metrics" --each > "$out/probe_each.txt" 2>&1
grep -E '^KP_RP_(METRIC|ERROR)' "$out/probe_each.txt"

list=$(grep -v '^[[:space:]]*#' "$metrics" | grep -v '^[[:space:]]*$' | tr -d ' \r' | paste -sd, -)
echo "== ncu (cache flushed, the default)"
t0=$(now)
"$ncu" --clock-control none --metrics "$list" -f -o "$out/probe_ncu" "$probe" --plain > "$out/ncu_run.txt" 2>&1
t1=$(now)
tail -3 "$out/ncu_run.txt"
echo "ncu wall $(awk "BEGIN{print $t1 - $t0}") s"
"$ncu" -i "$out/probe_ncu.ncu-rep" --csv --page raw --print-units base > "$out/ncu_raw.csv" 2> "$out/ncu_export.err"

echo "== ncu --cache-control none"
"$ncu" --clock-control none --cache-control none --metrics "$list" -f -o "$out/probe_ncu_warm" "$probe" --plain \
  > "$out/ncu_warm_run.txt" 2>&1
"$ncu" -i "$out/probe_ncu_warm.ncu-rep" --csv --page raw --print-units base > "$out/ncu_warm_raw.csv" 2>> "$out/ncu_export.err"

echo "== CUPTI vs ncu"
python3 "$here/compare_probe.py" "$out/probe.txt" "$out/ncu_raw.csv" "$out/ncu_warm_raw.csv" | tee "$out/compare.txt"
exit $rc
