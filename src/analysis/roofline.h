// The roofline classifier: achieved work and traffic of one candidate call against this GPU's
// ceilings, giving a bottleneck class, the fraction of speed-of-light and the headroom
// (DESIGN.md section 6). Pure functions of the collected evidence; no GPU, no I/O.
//
// What is counted (stage-1 metrics, profile/metric_lists.h), summed over the call's kernels and
// divided by their summed gpu__time_duration.sum:
//   DRAM         dram__bytes_read.sum + dram__bytes_write.sum (bytes)
//   L2           lts__t_bytes.sum, else 32 x lts__t_sectors.sum (a sector is 32 B)
//   FP32         fadd + fmul + 2 ffma      (smsp__sass_thread_inst_executed_op_<op>_pred_on.sum)
//   FP64         dadd + dmul + 2 dfma
//   FP16         2 hadd + 2 hmul + 4 hfma  (packed half2: ncu's half-precision roofline weights)
//   Tensor FP16  sm__ops_path_tensor_src_fp16.sum             Tensor BF16  ..._src_bf16_dst_fp32.sum
//   Tensor TF32  sm__ops_path_tensor_src_tf32_dst_fp32.sum    Tensor FP64  ..._src_fp64.sum
//   Tensor INT8  sm__ops_path_tensor_src_int8.sum (ops)       Tensor FP8   ..._src_fp8_sparsity_off.sum
// Each roof is compared with its Ceilings field (0: the roof is skipped); Tensor FP8 needs
// Ceilings::tensor_fp8_flops.
//
// Tensor "ops" are FLOP, weight 1 (a multiply-add is 2 ops). Worked from the H200 capture
// (tests/data/ncu/ncu_full_raw.csv): sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off
// .sum.peak_sustained = 540,672 per cycle = 4,096 per SM x 132 SMs; at the 1.83-1.98 GHz SM clock
// that is 0.99-1.07e15 per second, the 989 TFLOP/s dense BF16 datasheet figure. Were ops
// multiply-adds, the dense peak would be twice the datasheet. The same holds for TF32:
// hgmma_src_tf32_dst_fp32_sparsity_off peaks at 270,336 per cycle = 495 TFLOP/s at 1.83 GHz.
// The aggregate sm__ops_path_tensor_src_<type>.sum.peak_sustained is twice those (1,081,344 for
// BF16, 540,672 for TF32: 1.07e15/s at 1.98 GHz, 2x the dense TF32 datasheet) because it is the
// peak of its 2:4-sparse sub-path; it is never used as a ceiling. The counts themselves add every
// path (HMMA and HGMMA, dense and sparse), so a sparse kernel can exceed its dense ceiling: its
// fraction is then > 1 and an evidence line says so.
//
// Decision, in order (thresholds below):
//   1. launch-bound: the device sat idle for >= kLaunchIdleFraction of the call AND the median
//      kernel (the trace's, else ncu's) is shorter than kShortKernelSeconds. Idle share =
//      1 - busy / call, where busy is the trace's busy_s (else the summed kernel time) and call
//      is call_seconds, the timed call, when known, else the trace's span_s (the idle share is
//      then gaps_s / span_s). The timed call wins over the trace: when the timing replays a CUDA
//      graph, the gaps of a traced stream launch are not what the candidate is measured on (an
//      evidence line still reports them). limiter "launch overhead", sol_fraction busy / call,
//      headroom call / busy. Example: 40 kernels of 3 us, 5 us apart, timed at 330 us per call:
//      busy 120 us, idle 1 - 120 / 330 = 64% >= 50%, median 3 us < 10 us: launch-bound,
//      headroom 2.75x.
//   2. the largest roof fraction >= kRoofBoundFraction: memory-bound (DRAM, L2) or
//      compute-bound (any arithmetic roof, CUDA-core or tensor).
//   3. else ncu's own SOL percentages, when the larger of SM% and Mem% >= kNcuLatencyPct (a unit
//      we have no roof for is busy: L1/shared memory, integer or load/store issue): memory-bound
//      when Mem% is the larger, else compute-bound. limiter "SM (ncu SM%)" or
//      "memory (ncu Mem%)", sol_fraction that percentage / 100.
//   4. else latency-bound: limiter the highest roof, with occupancy and issue activity as
//      evidence.
// headroom = 1 / sol_fraction except for launch-bound.
//
// Worked example, saxpy over 2^26 floats (fixture row 1), H200 ceilings DRAM 4.30 TB/s, FP32
// 67 TFLOP/s: 232,192 ns; DRAM 536,907,776 + 250,159,616 B = 787 MB -> 3.39 TB/s = 79% of 4.30;
// FP32 2^26 FFMA = 134 MFLOP -> 0.578 TFLOP/s = 0.9% of 67. Limiter DRAM at 0.79 >= 0.6:
// memory-bound, headroom 1.27x; arithmetic intensity 134e6 / 787e6 = 0.17 FLOP/B, FP32 ridge
// 67 / 4.3 = 15.6 FLOP/B. ncu: SM 34.9%, Mem 70.5%: not both < 60, |SM - Mem| >= 10, Mem larger:
// "memory", which agrees.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/ceilings.h"
#include "profile/kernel_metrics.h"
#include "profile/trace/trace.h"

namespace kp::analysis {

// A roof at or above this fraction of its ceiling bounds the call (ncu's latency threshold, 60%,
// applied to calibrated ceilings).
inline constexpr double kRoofBoundFraction = 0.6;
// Launch-bound: the device idle for at least this share of the call ...
inline constexpr double kLaunchIdleFraction = 0.5;
// ... and the median kernel shorter than this (seconds): launch latency is 2-5 us.
inline constexpr double kShortKernelSeconds = 10e-6;
// Evidence wording only: achieved occupancy below this percentage of the warp slots is "low",
// and so is an issue rate below this many instructions per scheduler cycle (ncu's
// IssueSlotUtilization threshold).
inline constexpr double kLowOccupancyPct = 25;
inline constexpr double kLowIssuePerCycle = 0.6;
// ncu's SOLBottleneck thresholds (sections/SpeedOfLight.py), in percent and waves.
inline constexpr double kNcuLatencyPct = 60;
inline constexpr double kNcuHighPct = 80;
inline constexpr double kNcuBalancedPoints = 10;
inline constexpr double kNcuWaves = 1;

enum class BottleneckClass {
  kMemoryBound,   // a memory roof (DRAM or L2) is the closest to its ceiling, and high
  kComputeBound,  // an arithmetic roof (a CUDA-core or tensor-core precision) is
  kLatencyBound,  // no roof is near its ceiling: the kernels wait (occupancy, dependencies)
  kLaunchBound,   // the device sits idle between short kernels: launch overhead dominates
};
const char* to_string(BottleneckClass c);  // "memory-bound", "compute-bound", "latency-bound", "launch-bound"
std::optional<BottleneckClass> bottleneck_class_from_string(std::string_view s);

// Everything the classifier looks at for one candidate call.
struct RooflineInput {
  std::vector<profile::KernelMetrics> kernels;  // the call's kernels with stage-1 metrics
  profile::Ceilings ceilings;
  std::optional<profile::TraceCall> trace;  // one representative traced call, if traced;
                                            // span_s, busy_s and gaps_s filled (summarize_call)
  double call_seconds = 0;                  // median event time of one call (eval timing); 0 if unknown
};

// One roof: a ceiling and how close the call came to it.
struct Roof {
  std::string name;     // "DRAM", "L2", "FP32", "FP64", "FP16", "Tensor FP16", "Tensor BF16",
                        // "Tensor TF32", "Tensor FP64", "Tensor INT8", "Tensor FP8"
  std::string unit;     // "B/s", "FLOP/s", or "OP/s" (INT8)
  double achieved = 0;  // per second, over the kernels' own duration
  double peak = 0;      // the ceiling
  double fraction = 0;  // achieved / peak; may exceed 1 (sparse tensor work, a low ceiling)
  double amount = 0;    // the work behind `achieved`: bytes, FLOP or ops over the whole call
  bool memory = false;  // a memory roof (DRAM, L2), else arithmetic
};

// What Nsight Compute's SOLBottleneck rule concludes from the same counters (profiling.md
// section 2), reproduced so that every page can show both.
struct NcuRuleVerdict {
  std::string verdict;                      // "high-throughput", "compute", "memory", "balanced", "latency",
                                            // "small-grid"; empty when SM% or Mem% was not collected
  std::string title;                        // ncu's message title: "High Throughput", "High Compute Throughput",
                                            // "High Memory Throughput", "Balanced Throughput", "Latency Issue",
                                            // "Small Grid"; empty with the verdict
  std::optional<BottleneckClass> as_class;  // its verdict in our classes, where it maps to one:
                                            // compute -> compute-bound, memory -> memory-bound, high-throughput ->
                                            // the larger of the two (SM% on a tie), latency and small-grid ->
                                            // latency-bound; balanced -> none
  double sm_pct = 0, mem_pct = 0;           // the two percentages it read
  std::optional<double> waves;              // launch__waves_per_multiprocessor, when known
};

struct RooflineResult {
  BottleneckClass cls = BottleneckClass::kLatencyBound;
  std::string limiter;                // name of the limiting roof (or "launch overhead", or
                                      // "SM (ncu SM%)" / "memory (ncu Mem%)"); empty when
                                      // nothing could be measured
  double sol_fraction = 0;            // the limiting roof's achieved / peak, 0..1
  double headroom = 1;                // how many times faster the call could run before that
                                      // roof stops it (1 / sol_fraction; for launch-bound:
                                      // call time over the kernels' busy time); 0 when unknown
  double arithmetic_intensity = 0;    // FLOP (and INT8 ops) of every precision per DRAM byte;
                                      // 0 without DRAM bytes
  double ridge_intensity = 0;         // the dominant precision's peak over DRAM bandwidth
  std::string ridge_roof;             // that precision: the arithmetic roof with the most work,
                                      // "FP32" when there is none; empty when ridge_intensity is 0
  double kernel_seconds = 0;          // sum of kernel durations (ncu's, else the trace's)
  int kernel_count = 0;               // kernels in the call (the metrics', else the trace's)
  double median_kernel_seconds = 0;   // median kernel duration (the trace's when traced)
  double idle_fraction = 0;           // share of the call the device sat idle, 0..1; 0 if unknown
  std::vector<Roof> roofs;            // every roof with a known ceiling, largest fraction first
  std::vector<std::string> evidence;  // short sentences with the numbers behind the class
  NcuRuleVerdict ncu_rule;
  bool agrees_with_ncu = false;  // ncu_rule.as_class == cls
  std::string disagreement;      // why ours differs, when it does; empty when it agrees
};

// Classifies one call. Never fails: missing metrics drop their roofs (an evidence line names
// what is missing), a zero or missing duration gives no rates (no division by zero), no kernels
// at all gives latency-bound with limiter "" and headroom 0.
RooflineResult classify(const RooflineInput& input);

// ncu's SOLBottleneck rule on one kernel's (or a combined call's) metrics, exactly as
// sections/SpeedOfLight.py: both SM% and Mem% < 80: both < 60 -> "small-grid" when waves < 1,
// else "latency"; else |SM% - Mem%| >= 10 -> "compute" or "memory" (the larger); else
// "balanced". Either >= 80 -> "high-throughput". Waves come from launch__waves_per_multiprocessor;
// when that was not collected and sm_count > 0, a grid of fewer blocks than SMs counts as
// waves < 1 (it cannot fill one wave), any other grid as unknown (no small-grid, as ncu does
// without the metric).
NcuRuleVerdict ncu_sol_bottleneck(const profile::KernelMetrics& metrics, int sm_count = 0);

// Every field; the class as its string ("class"), ncu_rule.as_class as a string or null.
nlohmann::json to_json(const RooflineResult& r);

}  // namespace kp::analysis
