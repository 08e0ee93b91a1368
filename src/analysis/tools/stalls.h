// What the warp-stall tools (warp_stalls, low_ilp, atomics_contention) share: the cycles
// between two issues of a warp, and the stall cycles the collected reasons leave unexplained.
//
// Cycles between issues. Each per-reason ratio smsp__average_warps_issue_stalled_<R>_per_issue
// _active counts the warps stalled on R per issue cycle; over every reason (the issuing warp
// included) they sum to the warps resident per scheduler over the issue rate, W / I. ncu reads
// that total as smsp__average_warp_latency_per_inst_issued.ratio, which the H200's Range
// Profiler does not accept; W / I is computed from stage 1 instead: W = smsp__warps_active.avg
// .per_cycle_active when collected, else sm__warps_active.avg.pct_of_peak_sustained_active x 16
// (64 warps per SM over 4 schedulers on sm_70 to sm_90), I = smsp__issue_active.avg.per_cycle
// _active. On the flaw suite's H200 evidence the two sides agree within 1-9% on every kernel
// longer than 10 us whose stalls are all among the eight collected (bench/flaws/README.md).
//
// Unexplained stalls. 1 + the eight collected ratios falls short of W / I by the reasons the
// Range Profiler does not collect (membar, branch_resolving, drain, sleeping, dispatch, misc,
// no_instruction, tex_throttle, gmma). A share >= kUnexplainedShare (30%, ncu's CPIStall bar)
// in a kernel of >= kMinStallKernelSeconds (10 us: shorter ones ramp up and drain too much for
// the identity) is a real stall; with MEMBAR instructions in the SASS it is read as membar
// (__threadfence, fence.acq_rel, memory-model fences): the flaw suite's fence-per-store kernel
// leaves 43% unexplained, its fence-free twin 0%.
#pragma once

#include <array>
#include <optional>

#include "analysis/tool.h"

namespace kp::analysis {

inline constexpr double kUnexplainedShare = 0.3;
inline constexpr double kMinStallKernelSeconds = 10e-6;

inline constexpr std::array<const char*, 8> kCollectedStallMetrics{
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
};

struct StallCycles {
  double collected = 1;  // 1 (the issuing warp) + the collected ratios
  int present = 0;       // how many of the eight were collected
  std::optional<double> total;  // the cycles between issues, W / I (or ncu's ratio)
  // The share of `total` the collected reasons leave unexplained; 0 without a total.
  double unexplained_share() const { return total && *total > 0 ? std::max(0.0, 1 - collected / *total) : 0; }
};

StallCycles stall_cycles(const profile::KernelMetrics& k);

// The share of the cycles between issues that is read as membar stalls (see above); nullopt
// when the stall is not there or not known: too few reasons collected, a short kernel, no
// MEMBAR in the SASS, or an unexplained share below kUnexplainedShare.
std::optional<double> membar_share(const Evidence& e, const profile::KernelMetrics& k);

}  // namespace kp::analysis
