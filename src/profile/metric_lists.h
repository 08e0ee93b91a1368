// The metric lists kernelpro collects, by stage (DESIGN.md section 6, "Two-stage invocation").
// Never `--set full`: every extra replay pass costs time. Names are Nsight Compute / Perfworks
// metric names, valid for both collectors (ncu --metrics and the CUPTI Range Profiler): each was
// accepted by the Range Profiler on the H200 (tests/data/cupti/probe_each_h200.txt); two that ncu
// knows were refused there and are left out (sass__inst_executed_register_spilling,
// smsp__maximum_warps_avg_per_active_cycle).
//
// Stage 1 always runs and feeds the roofline classifier: duration, the two speed-of-light
// percentages ncu's SOLBottleneck rule reads, DRAM and L2 bytes, FLOP counts per precision on
// the CUDA cores (SASS thread-instruction counts) and on the tensor cores (sm__ops_path_*),
// achieved occupancy and issue activity. Stage 2 lists are added per finding family when the
// class and the stage-1 numbers call for them (issue 5's micro-profiling tools).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kp::profile {

// The stage-1 list, in a fixed order.
const std::vector<std::string>& stage1_metrics();

// Stage-2 families: "memory" (coalescing, cache hit rates, sectors per request), "latency"
// (stall reasons, eligible warps, occupancy limiters), "compute" (pipe utilisation, instruction
// mix), "shared" (bank conflicts, shared wavefronts). An unknown family gives an empty list.
const std::vector<std::string>& stage2_metrics(std::string_view family);
// The family names, in order: memory, latency, compute, shared.
const std::vector<std::string>& stage2_families();

// `base` followed by each name of `extra` not already in it, order kept.
std::vector<std::string> merge_metric_lists(const std::vector<std::string>& base, const std::vector<std::string>& extra);

}  // namespace kp::profile
