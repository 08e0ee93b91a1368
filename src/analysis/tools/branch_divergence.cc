// branch_divergence: warps execute with many lanes masked off (divergent branches, early exits,
// partial warps).
//
// Reads smsp__thread_inst_executed_per_inst_executed.ratio: threads active per executed warp
// instruction, 32 when every lane works. Fires below 24, ncu's ThreadDivergence rule; the share
// of lanes idle is 1 - ratio / 32. Latency- and compute-bound kernels only: a memory-bound
// kernel's idle lanes cost issue slots it is not short of. Quiet when the ratio was not
// collected. Estimated gain, ncu's: the idle-lane share of the SM's busy time, 1 / (1 - (1 -
// ratio / 32) x SM%), SM% = sm__throughput.avg.pct_of_peak_sustained_elapsed / 100 (stage 1);
// 1 when SM% is missing. A block size that is not a multiple of 32 leaves the last warp partly
// empty: the finding then adds tune_block_size.
//
// Worked example: a kernel that branches on threadIdx.x % 4 has a ratio of 11.2: 65% of lanes
// idle, at SM% 55: gain 1 / (1 - 0.65 x 0.55) = 1.56x. Regroup the work so a whole warp takes
// one path (sort or bin items by case, assign cases per warp, not per thread), and replace
// short branches by predicated selects.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr const char* kRatio = "smsp__thread_inst_executed_per_inst_executed.ratio";
constexpr double kThreshold = 24;

class BranchDivergence final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{"branch_divergence",
                            "Divergent warps",
                            "Fewer than 24 of a warp's 32 lanes do useful work per instruction on average: "
                            "divergent control flow, early exits or partial warps.",
                            {BottleneckClass::kLatencyBound, BottleneckClass::kComputeBound},
                            {kRatio},
                            false,
                            false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (!e.roofline) return out;
    if (e.roofline->cls != BottleneckClass::kLatencyBound && e.roofline->cls != BottleneckClass::kComputeBound) return out;
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const auto& k = e.kernels[i];
      const auto ratio = metric(k, kRatio);
      if (!ratio || *ratio <= 0 || *ratio >= kThreshold) continue;
      const double idle = 1 - std::min(*ratio, 32.0) / 32;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = *ratio < 8 ? Severity::kCritical : (*ratio < 16 ? Severity::kWarning : Severity::kInfo);
      if (auto sm = metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed"))
        f.estimated_gain = 1 / (1 - idle * std::clamp(*sm / 100, 0.0, 0.95));
      f.title = "Only " + std::to_string(*ratio).substr(0, 4) + " of 32 threads active per warp instruction";
      f.evidence.push_back(evidence(kRatio, *ratio, "<", kThreshold));
      f.evidence.push_back(context("idle lanes", 100 * idle, "%"));
      f.guidance = "On average " + std::to_string(static_cast<int>(100 * idle)) +
                   "% of each warp's lanes sit masked off. Make control flow uniform within a warp: assign work so "
                   "that all 32 threads of a warp take the same branch (bin or sort items by case, decide per warp "
                   "rather than per thread), turn short if/else bodies into selects, and replace loops whose trip "
                   "count differs per thread by a loop over a warp-uniform bound.";
      f.actions = {"reduce_divergence"};
      const int64_t threads = e.block_threads(i);
      if (threads > 0 && threads % 32 != 0) {
        f.evidence.push_back(context("threads per block (not a multiple of 32)", static_cast<double>(threads)));
        f.guidance += " The block of " + std::to_string(threads) +
                      " threads is not a multiple of 32, so its last warp runs partly empty: use a multiple of 32.";
        f.actions.push_back("tune_block_size");
      }
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_branch_divergence() { return std::make_unique<BranchDivergence>(); }

}  // namespace kp::analysis
