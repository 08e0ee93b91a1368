// barrier_overhead: warps spend a large share of their time waiting at __syncthreads.
//
// Reads smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio (warps waiting at a
// barrier per issue cycle) against the cycles between two issues of a warp, taken as 1 + the
// eight stall ratios the H200's Range Profiler accepts (as warp_stalls.cc; at least 4 of them
// collected). Fires when the barrier share is >= 25% with issue activity < 0.8: ncu's CPIStall
// rule reports a reason at 30% of the cycles between issues; barriers get a slightly lower bar
// because the fix (warp shuffles, fewer phases) is cheap and local. The SASS count of BAR
// instructions is context only: a static count says nothing about how often they run, so it
// never fires the tool on its own. Latency- and memory-bound kernels (a memory-bound kernel
// below 80% of its roof: barriers keep loads from overlapping); not on missing stall metrics.
// A memory-bound kernel at 80% or more of its roof is left alone when the busy unit is DRAM or
// L2 (gpu__dram_throughput or lts__throughput >= 80%, or either missing): barriers then cost
// nothing the memory system would give back. When only L1/shared memory is busy, the traffic is
// the shared-memory exchange the barriers order, and the fix (registers and shuffles) removes
// both: the flaw-17 tree reduction on the H200, Mem% 82% from l1tex at 83%, DRAM 17%, L2 23%,
// barrier 34% of the cycles between issues; the shuffle twin runs 4.9x faster (166 us to 34).
// Estimated gain 1 / (1 - share), ncu's speedup, capped by the roofline headroom.
//
// Worked example: a shared-memory tree reduction over 512 threads with __syncthreads at each of
// its 9 steps (SASS: 10 BAR): barrier 3.1, long_scoreboard 1.2, others 0.7 -> 1 + 5.0 = 6.0
// cycles between issues; barrier share 3.1 / 6.0 = 52% >= 25%: gain 1 / (1 - 0.52) = 2.1x.
// Reduce within each warp with __shfl_xor_sync (no barrier), then one barrier to combine the
// warp results.
// Kernels shorter than kMinStallKernelSeconds (10 us, stalls.h) are left alone: their ramp-up
// and drain weigh on every stall average.
#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/stalls.h"

namespace kp::analysis {
namespace {

constexpr double kBarrierShare = 0.25;
constexpr double kMaxIssueActive = 0.8;
constexpr double kSaturatedRoof = 0.8;
constexpr const char* kBarrier = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio";
constexpr std::array<const char*, 7> kOthers{
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
};

class BarrierOverhead final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s = [] {
      ToolSpec t{"barrier_overhead",
                 "Time lost at barriers",
                 "Warps wait at __syncthreads for a large share of their cycles: too many block-wide barriers, "
                 "or uneven work before them.",
                 {BottleneckClass::kLatencyBound, BottleneckClass::kMemoryBound},
                 {kBarrier},
                 false,
                 false};
      for (const char* m : kOthers) t.metrics.emplace_back(m);
      return t;
    }();
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (!e.roofline) return out;
    const auto cls = e.roofline->cls;
    if (cls != BottleneckClass::kLatencyBound && cls != BottleneckClass::kMemoryBound) return out;
    const bool saturated = cls == BottleneckClass::kMemoryBound && e.roofline->sol_fraction >= kSaturatedRoof;
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const auto& k = e.kernels[i];
      if (saturated) {
        const auto dram = metric(k, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
        const auto l2 = metric(k, "lts__throughput.avg.pct_of_peak_sustained_elapsed");
        if (!dram || !l2 || std::max(*dram, *l2) >= 100 * kSaturatedRoof) continue;  // global memory is the roof
      }
      const auto barrier = metric(k, kBarrier);
      const auto issue = metric(k, "smsp__issue_active.avg.per_cycle_active");
      if (k.get_or("gpu__time_duration.sum", 0) * 1e-9 < kMinStallKernelSeconds) continue;  // stalls.h
      if (!barrier || !issue || *issue >= kMaxIssueActive) continue;
      double cpi = 1 + std::max(0.0, *barrier);
      int present = 1;
      for (const char* m : kOthers)
        if (auto x = metric(k, m)) {
          cpi += std::max(0.0, *x);
          ++present;
        }
      if (present < 4) continue;
      const double share = std::max(0.0, *barrier) / cpi;
      if (share < kBarrierShare) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = share >= 0.5 ? Severity::kCritical : Severity::kWarning;
      f.estimated_gain = 1 / (1 - std::min(share, 0.95));
      if (e.roofline->headroom > 1) f.estimated_gain = std::max(1.0, std::min(f.estimated_gain, e.roofline->headroom));
      f.title = "Warps wait at barriers " + std::to_string(static_cast<int>(100 * share)) + "% of the time";
      f.evidence.push_back(evidence("barrier share of stall cycles", 100 * share, ">=", 100 * kBarrierShare, "%"));
      f.evidence.push_back(context(kBarrier, *barrier));
      f.evidence.push_back(context("cycles between issues (1 + collected stalls)", cpi));
      if (saturated)
        f.evidence.push_back(context("busiest global-memory unit, % of peak (DRAM or L2; the busy unit is L1/shared)",
                                     std::max(k.get_or("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 0),
                                              k.get_or("lts__throughput.avg.pct_of_peak_sustained_elapsed", 0))));
      int64_t bars = 0;
      if (const profile::KernelSass* sass = e.sass_for(k)) {
        auto it = sass->sass.by_opcode.find("BAR");
        bars = it == sass->sass.by_opcode.end() ? 0 : it->second;
        f.evidence.push_back(context("BAR instructions in SASS", static_cast<double>(bars)));
      }
      const int64_t threads = e.block_threads(i);
      f.guidance = "Block-wide barriers hold every warp until the slowest arrives.";
      if (bars >= 6)
        f.guidance += " " + std::to_string(bars) +
                      " BAR instructions suggest a shared-memory tree reduction with a barrier per step: reduce "
                      "within each warp with __shfl_xor_sync first, then combine the per-warp results after a "
                      "single barrier.";
      else
        f.guidance += " Remove barriers that protect nothing (a warp that only reads its own data needs none), "
                      "replace block-wide exchanges by warp shuffles where 32 threads suffice, and double-buffer "
                      "shared tiles so one barrier per iteration is enough.";
      f.guidance += " Give every warp the same work before the barrier.";
      f.actions = {"fewer_barriers"};
      if (threads >= 512) {
        f.guidance += " With " + std::to_string(threads) +
                      " threads per block, every barrier waits for 16+ warps: smaller blocks (128-256) wait less.";
        f.actions.push_back("tune_block_size");
      }
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_barrier_overhead() { return std::make_unique<BarrierOverhead>(); }

}  // namespace kp::analysis
