// atomics_contention: a latency- or memory-bound kernel whose inner work is atomics (ATOMG,
// ATOM, RED/REDG on global memory; ATOMS on shared memory) and whose warps stall waiting on
// them. Many threads updating the same addresses serialize in L2 (global) or in the shared-
// memory unit, and every returning atomic is a long-scoreboard wait.
//
// Fires on a kernel when all of:
//   - its SASS has atomics (SassClass::kAtomic) making up >= kAtomicShare (10%) of its memory
//     instructions (global loads, stores, shared accesses and atomics, counted statically): a
//     reduction that ends with one atomic per block stays well below (row_sum: 1 of 56);
//   - the call is latency- or memory-bound (spec classes);
//   - the lg_throttle plus long_scoreboard stalls are >= kStallShare (0.3) of the cycles between
//     issues (smsp__average_warp_latency_per_inst_issued.ratio): ncu's CPIStall rule reports a
//     stall reason above 0.3 of the CPI. Without these stage-2 metrics it does not fire.
// Estimated gain: ncu's CPIStall estimate, 1 / (1 - stall share), with the share capped at 0.75
// (gain <= 4x): the atomic waits cannot all vanish.
// Severity warning; critical when the share is >= kCriticalShare (0.6).
//
// Worked example: a 256-bin histogram with one global atomic per element: SASS 2 LDG, 1 ATOMG:
// atomic share 1/3 >= 0.1; warp latency 42 cycles per issue, long_scoreboard 25 + lg_throttle 4:
// share 29 / 42 = 0.69 >= 0.6: critical, gain 1 / (1 - 0.69) = 3.2x.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kAtomicShare = 0.10;
constexpr double kStallShare = 0.3;  // ncu CPIStall
constexpr double kCriticalShare = 0.6;
constexpr double kMaxShare = 0.75;

constexpr const char* kCpi = "smsp__average_warp_latency_per_inst_issued.ratio";
constexpr const char* kLg = "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio";
constexpr const char* kLong = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio";

class AtomicsContention final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "atomics_contention",
        "Atomic contention",
        "Global or shared atomics in the hot path of a latency- or memory-bound kernel, with warps stalled "
        "waiting for them: reduce within a warp or block first, then one atomic per warp or block.",
        {BottleneckClass::kLatencyBound, BottleneckClass::kMemoryBound},
        {kCpi, kLg, kLong},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (e.roofline && (e.roofline->cls == BottleneckClass::kComputeBound ||
                       e.roofline->cls == BottleneckClass::kLaunchBound))
      return out;
    for (const auto& k : e.kernels) {
      const profile::KernelSass* ks = e.sass_for(k);
      if (!ks) continue;
      const auto& s = ks->sass;
      const int64_t atomics = s.count(profile::SassClass::kAtomic);
      const int64_t memory = atomics + s.global_loads() + s.global_stores() + s.count(profile::SassClass::kShared);
      if (atomics == 0 || static_cast<double>(atomics) < kAtomicShare * static_cast<double>(memory)) continue;
      auto cpi = metric(k, kCpi);
      auto lg = metric(k, kLg);
      auto lsb = metric(k, kLong);
      if (!cpi || *cpi <= 0 || (!lg && !lsb)) continue;
      const double stall = lg.value_or(0) + lsb.value_or(0);
      const double share = stall / *cpi;
      if (share < kStallShare) continue;

      auto op = [&](const char* name) {
        auto it = s.by_opcode.find(name);
        return it == s.by_opcode.end() ? int64_t{0} : it->second;
      };
      const int64_t shared_atomics = op("ATOMS");
      const int64_t global_atomics = atomics - shared_atomics;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = share >= kCriticalShare ? Severity::kCritical : Severity::kWarning;
      f.estimated_gain = 1 / (1 - std::min(share, kMaxShare));
      f.evidence.push_back(evidence("atomics / memory instructions in SASS",
                                    static_cast<double>(atomics) / static_cast<double>(memory), ">=", kAtomicShare));
      f.evidence.push_back(evidence("(lg_throttle + long_scoreboard) stall / warp latency per issue", share, ">=",
                                    kStallShare));
      f.evidence.push_back(context(kCpi, *cpi, "cycles"));
      if (lg) f.evidence.push_back(context(kLg, *lg, "cycles"));
      if (lsb) f.evidence.push_back(context(kLong, *lsb, "cycles"));
      f.evidence.push_back(context("global atomics (ATOMG/ATOM/RED/REDG) in SASS", static_cast<double>(global_atomics)));
      f.evidence.push_back(context("shared atomics (ATOMS) in SASS", static_cast<double>(shared_atomics)));
      char title[160];
      std::snprintf(title, sizeof title, "warps wait on %lld atomic instruction%s (%.0f%% of stall cycles per issue)",
                    static_cast<long long>(atomics), atomics == 1 ? "" : "s", 100 * share);
      f.title = title;
      std::string g =
          "Combine before the atomic: reduce in registers across the warp (__shfl_down_sync, or "
          "__reduce_add_sync for integers), then one lane per warp (or one thread per block after a "
          "shared-memory reduction) does the atomic, cutting the updates 32x or more.";
      if (global_atomics > 0)
        g += " For many-bin updates (histograms, scatter-add) privatize: a copy of the bins per block in "
             "shared memory (ATOMS), merged into global memory once at the end; use atomicAdd without "
             "using its result so it compiles to RED (no return, no wait).";
      if (shared_atomics > 0)
        g += " Shared atomics on a few hot addresses serialize too: keep per-warp sub-histograms or "
             "per-thread partials in registers.";
      f.guidance = g;
      f.actions = {"avoid_atomics"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_atomics_contention() { return std::make_unique<AtomicsContention>(); }

}  // namespace kp::analysis
