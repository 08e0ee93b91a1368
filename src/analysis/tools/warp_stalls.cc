// warp_stalls: what the warps of a latency-bound kernel wait on, from the stall breakdown.
//
// Reads smsp__average_warps_issue_stalled_<R>_per_issue_active.ratio for the eight reasons
// CUPTI accepts on the H200 (long_scoreboard, short_scoreboard, mio_throttle, lg_throttle,
// barrier, wait, math_pipe_throttle, not_selected): warps stalled on R per issue cycle. Their
// sum plus 1 (the issuing warp) stands in for the cycles between two issues of a warp (ncu
// divides by smsp__average_warp_latency_per_inst_issued.ratio, which the Range Profiler does not
// accept; the uncollected reasons are usually small, so the shares are slight overestimates).
// A reason fires at a share >= 30% of that, with issue activity < 0.8, ncu's CPIStall rule.
// At least 4 of the 8 must have been collected.
//
// Reasons other tools own stay out: barrier (barrier_overhead), not_selected (a sign of enough
// eligible warps, not a problem). The dependency stalls (long_scoreboard, short_scoreboard,
// wait) are left out too when a tool with the cause fires on the same kernel: low_ilp (enough
// warps, each waiting on its own results), occupancy_limiter or small_grid (too few warps to
// hide the latency), hopper_path_unused (a mma.sync kernel that waits on its synchronous tile
// loads, which TMA into a multi-stage ring overlaps), atomics_contention (warps queued on
// same-address atomics); the stall is then their symptom. lg_throttle and long_scoreboard are left
// out when uncoalesced_access fires on the kernel: a scattered access splits into many sectors
// that fill the LSU queue and lengthen each load (the uncoalesced flaw: lg_throttle 31%).
// Memory fences: the Range Profiler does not collect the membar reason; when the collected
// reasons leave >= 30% of the cycles between issues unexplained and the SASS has MEMBAR
// (stalls.h, membar_share), membar is reported with that share, and the dependency reasons
// are left out (a fence after a store makes the next load wait as well). Estimated gain 1 / (1 - share of the
// reasons reported), ncu's speedup, capped by the roofline headroom.
//
// Worked example: long_scoreboard 6.1, short 0.2, mio 0.3, lg 0.1, barrier 0.2, wait 0.9, math
// 0.0, not_selected 0.1 -> cycles per issue 1 + 7.9 = 8.9; long_scoreboard is 6.1 / 8.9 = 69%
// >= 30% at achieved occupancy 40% of a theoretical 50% (no occupancy_limiter, which wants < 50%
// or a 20-point gap; no low_ilp, which wants >= 50%): "warps wait on global memory"; gain 1 / (1 - 0.69) = 3.2x, capped by the headroom.
// Kernels shorter than kMinStallKernelSeconds (10 us, stalls.h) are left alone: their ramp-up
// and drain weigh on every stall average. So are kernels whose schedulers had at least
// kMaxEligible (1) eligible warp per cycle on average (smsp__warps_eligible): the stalls are
// then hidden by other warps, and removing them frees no issue slot (ncu's IssueSlotUtilization
// reasoning). The low-ILP flaw's fixed twin on the H200: long_scoreboard 37% of the cycles between
// issues, but 3.0 eligible warps and not_selected 25%: it waits for issue slots, not on memory.
#include <algorithm>
#include <array>
#include <initializer_list>
#include <optional>
#include <memory>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/stalls.h"

namespace kp::analysis {

std::unique_ptr<Tool> make_low_ilp();
std::unique_ptr<Tool> make_occupancy_limiter();
std::unique_ptr<Tool> make_small_grid();
std::unique_ptr<Tool> make_uncoalesced_access();
std::unique_ptr<Tool> make_hopper_path_unused();
std::unique_ptr<Tool> make_atomics_contention();

namespace {

constexpr double kStallShare = 0.3;
constexpr double kMaxIssueActive = 0.8;
constexpr double kMaxEligible = 1;

struct Reason {
  const char* name;
  const char* metric;
};
constexpr std::array<Reason, 8> kReasons{{
    {"long_scoreboard", "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"},
    {"short_scoreboard", "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"},
    {"mio_throttle", "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"},
    {"lg_throttle", "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"},
    {"barrier", "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"},
    {"wait", "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"},
    {"math_pipe_throttle", "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio"},
    {"not_selected", "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio"},
}};

bool is_dependency(std::string_view r) { return r == "wait" || r == "short_scoreboard" || r == "long_scoreboard"; }
bool is_lsu_symptom(std::string_view r) { return r == "lg_throttle" || r == "long_scoreboard"; }

struct Guidance {
  std::string text;
  std::vector<std::string> actions;
};

Guidance guidance_for(std::string_view reason, const profile::KernelSass* sass) {
  if (reason == "long_scoreboard")
    return {"Warps wait for global or local memory (L1TEX) results. Issue loads earlier and keep several in "
            "flight (load the next tile while computing this one, cp.async/TMA into shared memory), make "
            "accesses coalesced and reuse data through shared memory or registers instead of reloading it; "
            "check for local-memory spills.",
            {"use_async_copy", "reuse_data"}};
  if (reason == "short_scoreboard")
    return {"Warps wait for shared-memory or special-function (MUFU) results. Remove shared-memory bank "
            "conflicts (pad or swizzle), keep reused values in registers rather than re-reading shared memory, "
            "and replace MUFU work (exp, rcp, sqrt) by algebra or cheaper forms where possible.",
            {"avoid_bank_conflicts", "reduce_special_functions"}};
  if (reason == "mio_throttle")
    return {"The MIO queue (shared memory, special math, shuffles) is full. Issue fewer, wider shared accesses "
            "(LDS.128, ldmatrix), remove bank conflicts, and spread special-function work among arithmetic.",
            {"vectorize_loads", "avoid_bank_conflicts"}};
  if (reason == "lg_throttle")
    return {"The load/store queue for global and local memory is full: too many small memory instructions. Use "
            "128-bit loads and stores (float4), drop redundant reloads, and remove local-memory spills.",
            {"vectorize_loads"}};
  if (reason == "math_pipe_throttle") {
    std::vector<std::string> actions;
    if (sass && sass->sass.count(profile::SassClass::kFp64) > 0) actions.push_back("avoid_fp64");
    if (sass && sass->sass.count(profile::SassClass::kSpecialFunction) > 0) actions.push_back("reduce_special_functions");
    return {"One arithmetic pipe is oversubscribed while the others idle. Rebalance the instruction mix: "
            "single precision instead of FP64, fewer special functions, tensor cores for matrix work.",
            actions};
  }
  return {"Warps wait on fixed-latency dependencies (each instruction needs the previous result). Interleave "
          "independent work: unroll loops, keep several accumulators, and give the scheduler more warps.",
          {"increase_ilp", "increase_occupancy"}};
}

// Whether one of the tools made by `makers` fires on the kernel `name`.
bool fires_on(const Evidence& e, const std::string& name, std::initializer_list<std::unique_ptr<Tool> (*)()> makers) {
  for (auto make : makers)
    for (const auto& f : make()->run(e))
      if (f.kernel == name) return true;
  return false;
}

constexpr const char* kMembarGuidance =
    "Warps wait for memory fences (MEMBAR: __threadfence, fence.acq_rel, atomics with a memory order): each "
    "fence waits until every earlier store of the thread is visible GPU-wide. Fence once where the ordering is "
    "needed (once per block before publishing a flag, not after every store), use a release store or "
    "atom.release for the flag itself, and drop fences that order nothing.";

class WarpStalls final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s = [] {
      ToolSpec t{"warp_stalls",
                 "Dominant warp stall",
                 "The stall breakdown of a latency-bound kernel: what its warps wait on most, with advice for "
                 "that reason.",
                 {BottleneckClass::kLatencyBound},
                 {},
                 false,
                 false};
      for (const auto& r : kReasons) t.metrics.emplace_back(r.metric);
      return t;
    }();
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (!e.roofline || e.roofline->cls != BottleneckClass::kLatencyBound) return out;
    for (const auto& k : e.kernels) {
      const auto issue = metric(k, "smsp__issue_active.avg.per_cycle_active");
      if (k.get_or("gpu__time_duration.sum", 0) * 1e-9 < kMinStallKernelSeconds) continue;  // stalls.h
      if (!issue || *issue >= kMaxIssueActive) continue;
      const auto eligible = metric(k, "smsp__warps_eligible.avg.per_cycle_active");
      if (eligible && *eligible >= kMaxEligible) continue;  // other warps hide the stalls
      std::array<double, kReasons.size()> v{};
      int present = 0;
      double cpi = 1;
      for (size_t r = 0; r < kReasons.size(); ++r)
        if (auto x = metric(k, kReasons[r].metric)) {
          v[r] = std::max(0.0, *x);
          cpi += v[r];
          ++present;
        }
      if (present < 4) continue;
      const auto achieved = metric(k, "sm__warps_active.avg.pct_of_peak_sustained_active");
      std::vector<size_t> hits;
      for (size_t r = 0; r < kReasons.size(); ++r) {
        const std::string_view n = kReasons[r].name;
        if (n == "barrier" || n == "not_selected") continue;
        if (v[r] / cpi >= kStallShare) hits.push_back(r);
      }
      const std::optional<double> membar = membar_share(e, k);
      if (std::any_of(hits.begin(), hits.end(), [](size_t r) { return is_dependency(kReasons[r].name); }) &&
          (membar || fires_on(e, k.name, {make_low_ilp, make_occupancy_limiter, make_small_grid, make_hopper_path_unused,
                                                   make_atomics_contention})))
        std::erase_if(hits, [](size_t r) { return is_dependency(kReasons[r].name); });
      if (std::any_of(hits.begin(), hits.end(), [](size_t r) { return is_lsu_symptom(kReasons[r].name); }) &&
          fires_on(e, k.name, {make_uncoalesced_access}))
        std::erase_if(hits, [](size_t r) { return is_lsu_symptom(kReasons[r].name); });
      if (hits.empty() && !membar) continue;
      std::sort(hits.begin(), hits.end(), [&](size_t a, size_t b) { return v[a] > v[b]; });

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      double share = membar.value_or(0);
      for (size_t r : hits) share += v[r] / cpi * (membar ? 1 - *membar : 1);  // shares of the whole then
      share = std::min(share, 0.95);
      f.severity = share >= 0.5 ? Severity::kCritical : Severity::kWarning;
      f.estimated_gain = 1 / (1 - share);
      if (e.roofline->headroom > 1) f.estimated_gain = std::min(f.estimated_gain, e.roofline->headroom);
      const profile::KernelSass* sass = e.sass_for(k);
      const bool membar_top = membar && (hits.empty() || *membar >= v[hits[0]] / cpi * (1 - *membar));
      if (membar_top)
        f.title = "Warps stall mostly on memory fences (membar, about " + std::to_string(static_cast<int>(100 * *membar)) +
                  "% of the cycles between issues)";
      else
        f.title = "Warps stall mostly on " + std::string(kReasons[hits[0]].name) + " (" +
                  std::to_string(static_cast<int>(100 * v[hits[0]] / cpi)) + "% of the cycles between issues)";
      f.evidence.push_back(context("cycles between issues (1 + collected stalls)", cpi));
      f.evidence.push_back(evidence("smsp__issue_active.avg.per_cycle_active", *issue, "<", kMaxIssueActive));
      if (eligible)
        f.evidence.push_back(evidence("smsp__warps_eligible.avg.per_cycle_active", *eligible, "<", kMaxEligible));
      if (membar) {
        const StallCycles sc = stall_cycles(k);
        f.evidence.push_back(context("cycles between issues (warps per scheduler / issue activity)", sc.total.value_or(0)));
        f.evidence.push_back(evidence("share unexplained by the collected reasons (membar: SASS has MEMBAR)",
                                      100 * *membar, ">=", 100 * kUnexplainedShare, "%"));
        f.guidance = kMembarGuidance;
        f.actions = {"remove_fences"};
      }
      for (size_t r : hits) {
        f.evidence.push_back(evidence(std::string(kReasons[r].name) + " share of stall cycles", 100 * v[r] / cpi, ">=",
                                      100 * kStallShare, "%"));
        f.evidence.push_back(context(kReasons[r].metric, v[r]));
        Guidance g = guidance_for(kReasons[r].name, sass);
        if (!f.guidance.empty()) f.guidance += " ";
        f.guidance += g.text;
        for (auto& a : g.actions)
          if (std::find(f.actions.begin(), f.actions.end(), a) == f.actions.end()) f.actions.push_back(a);
      }
      if (achieved) f.evidence.push_back(context("sm__warps_active.avg.pct_of_peak_sustained_active", *achieved, "%"));
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_warp_stalls() { return std::make_unique<WarpStalls>(); }

}  // namespace kp::analysis
