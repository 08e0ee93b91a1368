// atomics_contention: a latency- or memory-bound kernel whose inner work is atomics (ATOMG,
// ATOM, RED/REDG on global memory; ATOMS on shared memory) and whose warps stall waiting on
// them. Many threads updating the same addresses serialize in L2 (global) or in the shared-
// memory unit, and every returning atomic is a long-scoreboard wait.
//
// Fires on a kernel when its SASS has atomics (SassClass::kAtomic) making up >= kAtomicShare
// (10%) of its memory instructions (global loads, stores, shared accesses and atomics, counted
// statically; a reduction that ends with one atomic per block stays well below: row_sum 1 of
// 56), the call is latency- or memory-bound (spec classes), and the warps wait on them, by
// either of:
//   - queueing: the cycles between two issues of a warp (stalls.h: ncu's warp latency per
//     issue, else warps per scheduler / issue activity) are >= kQueueCpi (1,000). No memory
//     access takes that long unqueued (the uncoalesced flaw, the slowest stream in the flaw
//     suite, waits 560); same-address atomics do, serialized in the L2 slice that owns the
//     address (the contention flaw: 10,195 cycles; its warp-reduced twin 81). The Range
//     Profiler collects no stall reason for it (52% of the cycles go unexplained);
//   - returning atomics (ATOMG, ATOM, ATOMS: their result is waited for) and lg_throttle plus
//     long_scoreboard >= kStallShare (0.3) of the cycles between issues: ncu's CPIStall rule
//     reports a reason above 0.3 of the CPI. RED/REDG return nothing, so in a kernel whose only
//     atomics are reductions those stalls are its loads' (the twin's one LDG per element).
// Estimated gain: queueing, cycles between issues / kQueueCpi; returning atomics, ncu's
// CPIStall estimate 1 / (1 - stall share) with the share capped at 0.75 (gain <= 4x: the atomic
// waits cannot all vanish); both capped by the roofline headroom.
// Severity warning; critical when the share is >= kCriticalShare (0.6) or the cycles between
// issues >= 4 x kQueueCpi.
//
// Worked examples: a 256-bin histogram with one global atomicAdd per element whose result is
// used: SASS 2 LDG, 1 ATOMG: atomic share 1/3 >= 0.1; warp latency 42 cycles per issue,
// long_scoreboard 25 + lg_throttle 4: share 29 / 42 = 0.69 >= 0.6: critical, gain 1 / (1 - 0.69)
// = 3.2x. The flaw suite's row sum by one atomicAdd per element (REDG, 4,096 per address):
// 81% of the warps resident (13.0 per scheduler) at 0.0013 issues per cycle: 10,195 cycles
// between issues >= 4,000: critical, gain 10.2x.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/stalls.h"

namespace kp::analysis {
namespace {

constexpr double kAtomicShare = 0.10;
constexpr double kStallShare = 0.3;  // ncu CPIStall
constexpr double kCriticalShare = 0.6;
constexpr double kMaxShare = 0.75;
constexpr double kQueueCpi = 1000;

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
      auto op = [&](const char* name) {
        auto it = s.by_opcode.find(name);
        return it == s.by_opcode.end() ? int64_t{0} : it->second;
      };
      const int64_t shared_atomics = op("ATOMS");
      const int64_t global_atomics = atomics - shared_atomics;
      const int64_t returning = op("ATOMG") + op("ATOM") + shared_atomics;
      const StallCycles sc = stall_cycles(k);
      if (!sc.total) continue;
      const double cpi = *sc.total;
      auto lg = metric(k, kLg);
      auto lsb = metric(k, kLong);
      const double share = (lg.value_or(0) + lsb.value_or(0)) / cpi;
      const bool queueing = cpi >= kQueueCpi;
      const bool waiting = returning > 0 && (lg || lsb) && share >= kStallShare;
      if (!queueing && !waiting) continue;
      const double headroom = e.roofline && e.roofline->headroom > 1 ? e.roofline->headroom : 1e9;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = (waiting && share >= kCriticalShare) || cpi >= 4 * kQueueCpi ? Severity::kCritical
                                                                                : Severity::kWarning;
      f.estimated_gain = queueing ? cpi / kQueueCpi : 1 / (1 - std::min(share, kMaxShare));
      f.estimated_gain = std::clamp(f.estimated_gain, 1.0, headroom);
      f.evidence.push_back(evidence("atomics / memory instructions in SASS",
                                    static_cast<double>(atomics) / static_cast<double>(memory), ">=", kAtomicShare));
      if (queueing)
        f.evidence.push_back(evidence("cycles between issues of a warp", cpi, ">=", kQueueCpi, "cycles"));
      else
        f.evidence.push_back(context("cycles between issues of a warp", cpi, "cycles"));
      if (waiting)
        f.evidence.push_back(evidence("(lg_throttle + long_scoreboard) stall / cycles between issues", share, ">=",
                                      kStallShare));
      if (lg) f.evidence.push_back(context(kLg, *lg, "cycles"));
      if (lsb) f.evidence.push_back(context(kLong, *lsb, "cycles"));
      f.evidence.push_back(context("returning atomics (ATOMG/ATOM/ATOMS) in SASS", static_cast<double>(returning)));
      f.evidence.push_back(context("global atomics (ATOMG/ATOM/RED/REDG) in SASS", static_cast<double>(global_atomics)));
      f.evidence.push_back(context("shared atomics (ATOMS) in SASS", static_cast<double>(shared_atomics)));
      char title[160];
      if (queueing)
        std::snprintf(title, sizeof title, "warps queue on %lld atomic instruction%s: %.0f cycles between issues",
                      static_cast<long long>(atomics), atomics == 1 ? "" : "s", cpi);
      else
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
