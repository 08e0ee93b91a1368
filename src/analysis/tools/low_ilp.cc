// low_ilp: enough warps are resident, but each one waits on its own previous result, so the
// scheduler rarely has a warp ready: too little instruction-level parallelism per thread.
//
// Fires on a latency-bound kernel when all of these hold:
//   smsp__issue_active.avg.per_cycle_active < 0.6   ncu's IssueSlotUtilization threshold
//   smsp__warps_eligible.avg.per_cycle_active < 1   no warp ready in most cycles (ncu's
//                                                   scheduler statistics: below 1 the
//                                                   scheduler idles)
//   achieved occupancy >= 50%                       occupancy is not the limiter (below that,
//                                                   more warps is the fix: occupancy_limiter)
//   the top stall reason is wait, short_scoreboard or long_scoreboard, and those three are
//   >= 50% of the cycles between issues (1 + the collected stall ratios, as warp_stalls.cc):
//   dependency chains, not throttled queues or barriers.
// Only kernels of >= kMinStallKernelSeconds (10 us, stalls.h): in shorter ones the ramp-up and
// drain of the grid weigh on every stall and eligibility average (the launch-overhead flaw's
// fused 8.7 us elementwise kernel reads 0.4 eligible warps).
// Quiet when memory fences explain the stalls (stalls.h, membar_share: the collected reasons
// leave >= 30% of the cycles between issues unexplained and the SASS has MEMBAR): a fence after
// a store makes the next load wait too, and more independent work does not remove the fence
// (warp_stalls names it). Quiet too when uncoalesced_access or atomics_contention fires on the
// kernel: a scattered access or a queue of same-address atomics makes each load wait longer,
// which is their cause to name, not a lack of independent work.
// Estimated gain: ncu's IssueSlotUtilization bound, 1 / issue activity (one instruction per
// cycle per scheduler at best), capped by the roofline headroom.
//
// Worked example: a dot-product loop with one accumulator: achieved occupancy 75%, eligible
// 0.35 warps, issue 0.30; wait 2.8, long_scoreboard 3.0, short 0.1 of 7.2 cycles between
// issues: 81% dependency stalls. Gain min(1 / 0.30, headroom) = 3.3x: unroll by 4 with four
// independent accumulators and load the next elements before using the current ones.
#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/stalls.h"

namespace kp::analysis {

std::unique_ptr<Tool> make_uncoalesced_access();
std::unique_ptr<Tool> make_atomics_contention();

namespace {

constexpr double kMaxIssue = 0.6;
constexpr double kMaxEligible = 1;
constexpr double kMinAchievedPct = 50;
constexpr double kMinDependencyShare = 0.5;

constexpr std::array<const char*, 8> kStalls{
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
};
constexpr std::array<const char*, 3> kDependencyNames{"long_scoreboard", "short_scoreboard", "wait"};

class LowIlp final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s = [] {
      ToolSpec t{"low_ilp",
                 "Low instruction-level parallelism",
                 "Warps are resident but rarely eligible: each waits on its own previous result. More independent "
                 "work per thread lets the scheduler issue every cycle.",
                 {BottleneckClass::kLatencyBound},
                 {"smsp__warps_eligible.avg.per_cycle_active"},
                 false,
                 false};
      for (const char* m : kStalls) t.metrics.emplace_back(m);
      return t;
    }();
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (!e.roofline || e.roofline->cls != BottleneckClass::kLatencyBound) return out;
    for (const auto& k : e.kernels) {
      const auto issue = metric(k, "smsp__issue_active.avg.per_cycle_active");
      const auto eligible = metric(k, "smsp__warps_eligible.avg.per_cycle_active");
      const auto achieved = metric(k, "sm__warps_active.avg.pct_of_peak_sustained_active");
      if (!issue || !eligible || !achieved) continue;
      if (k.get_or("gpu__time_duration.sum", 0) * 1e-9 < kMinStallKernelSeconds) continue;
      if (*issue >= kMaxIssue || *eligible >= kMaxEligible || *achieved < kMinAchievedPct) continue;
      std::array<double, kStalls.size()> v{};
      int present = 0;
      double cpi = 1;
      for (size_t i = 0; i < kStalls.size(); ++i)
        if (auto x = metric(k, kStalls[i])) {
          v[i] = std::max(0.0, *x);
          cpi += v[i];
          ++present;
        }
      // The three dependency reasons must have been collected.
      if (present < 4 || !metric(k, kStalls[0]) || !metric(k, kStalls[1]) || !metric(k, kStalls[2])) continue;
      size_t top = 0;
      for (size_t i = 1; i + 1 < kStalls.size(); ++i)
        if (v[i] > v[top]) top = i;
      const double dependency = (v[0] + v[1] + v[2]) / cpi;
      if (top > 2 || dependency < kMinDependencyShare) continue;
      if (membar_share(e, k)) continue;
      bool explained = false;
      for (auto make : {make_uncoalesced_access, make_atomics_contention})
        for (const auto& g : make()->run(e)) explained = explained || g.kernel == k.name;
      if (explained) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = *issue < 0.3 ? Severity::kCritical : Severity::kWarning;
      f.estimated_gain = 1 / std::max(*issue, 0.05);
      if (e.roofline->headroom > 1) f.estimated_gain = std::min(f.estimated_gain, e.roofline->headroom);
      f.estimated_gain = std::max(1.0, f.estimated_gain);
      f.title = "Dependency chains: " + std::to_string(*eligible).substr(0, 4) +
                " eligible warps per cycle although occupancy is " + std::to_string(static_cast<int>(*achieved)) + "%";
      f.evidence.push_back(evidence("smsp__issue_active.avg.per_cycle_active", *issue, "<", kMaxIssue));
      f.evidence.push_back(evidence("smsp__warps_eligible.avg.per_cycle_active", *eligible, "<", kMaxEligible));
      f.evidence.push_back(evidence("sm__warps_active.avg.pct_of_peak_sustained_active", *achieved, ">=", kMinAchievedPct, "%"));
      f.evidence.push_back(evidence("wait + short_scoreboard + long_scoreboard share of stall cycles", 100 * dependency,
                                    ">=", 100 * kMinDependencyShare, "%"));
      f.evidence.push_back(context(kStalls[top], v[top]));
      f.guidance = std::string("The top stall is ") + kDependencyNames[top] +
                   ": with occupancy already reasonable, more warps will not help; each thread needs more "
                   "independent instructions in flight. Unroll the inner loop and keep several independent "
                   "accumulators (sum the partial results at the end), process 2-4 elements per thread, and ";
      if (top == 0)
        f.guidance += "issue the loads of the next iteration before using the current ones (software pipelining: "
                      "prefetch into registers) so several memory requests overlap.";
      else if (top == 1)
        f.guidance += "load several shared-memory values (or start several MUFU operations) before consuming the "
                      "first.";
      else
        f.guidance += "break long chains of dependent arithmetic (tree reductions instead of serial sums).";
      f.actions = {"increase_ilp"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_low_ilp() { return std::make_unique<LowIlp>(); }

}  // namespace kp::analysis
