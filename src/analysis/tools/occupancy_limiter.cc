// occupancy_limiter: too few resident warps to hide latency, and which resource caps them.
//
// Theoretical occupancy is computed as the CUDA occupancy calculator does for sm_90 (the only
// architecture whose limits are tabled here; other architectures stay quiet):
//   registers  ptxas' count (else the trace's), rounded up per warp to 256 (a warp of 32 regs
//              takes 1,024); each of the 4 SM sub-partitions holds 16,384 registers, so warps by
//              registers = 4 x floor(16384 / per-warp allocation); blocks = that / warps per block
//   shared     static (ptxas) + dynamic (the trace) + 1 KB the runtime reserves per block, in
//              128 B units, against 228 KB per SM
//   threads    2,048 per SM (64 warps);  blocks  32 per SM
// blocks/SM = the smallest of the four, which names the limiter; theoretical occupancy =
// blocks/SM x warps per block / 64. Achieved occupancy is sm__warps_active.avg.pct_of_peak
// _sustained_active (stage 1). ncu's launch__occupancy_limit_* and sm__maximum_warps_per_active
// _cycle_pct are not in the Range Profiler's verified lists, hence the computation here.
//
// Fires on a latency-bound kernel whose theoretical occupancy is < 50% (below about 32 warps
// per SM Hopper's schedulers run out of warps to switch to; ncu's TheoreticalOccupancy rule
// reports anything below 100% and is noisy for that reason), or whose achieved occupancy is
// < 50% and >= 20 points below theoretical while the grid fills at least one wave (ncu's
// AchievedOccupancy rule uses 10 points; below one wave the gap is small_grid's; at >= 50%
// achieved more warps help little, and few eligible warps there are low_ilp's). A
// memory-bound kernel counts too when its achieved occupancy is < 40% and DRAM/L2 is below 80%
// of its roof: too few loads in flight to saturate memory. Launch- and compute-bound kernels
// are left alone.
// Tensor-core kernels (SASS with HMMA, IMMA, HGMMA, ...) are left alone down to
// kTensorLowTheoreticalPct (12.5%, 8 warps: two per scheduler): they hide latency with the
// independent MMAs of a tile and a pipeline of loads, not with warps, so that well-built GEMMs
// run at 1-2 blocks per SM (CUTLASS's sm90 kernels at 12-19%; the WMMA GEMM of the flaw suite
// at 44% has other problems, which hopper_path_unused names).
//
// Estimated gain: latency hiding grows roughly with resident warps up to ~50%, so
// min(50 / achieved, roofline headroom) for a resource limit, min(theoretical / achieved,
// headroom) for the gap; >= 1.
//
// Worked example: 128 registers, 256 threads, no shared memory. 128 x 32 = 4,096 registers a
// warp; 16384 / 4096 = 4 warps per sub-partition, 16 per SM = 2 blocks of 8 warps; threads
// allow 8 blocks, blocks 32, shared 228: registers limit to 2 blocks = 16 warps = 25% < 50%.
// With achieved 24% and headroom 3x: gain min(50 / 24, 3) = 2.1x, critical (<= 25%), action
// reduce_registers (__launch_bounds__(256, 4) caps ptxas at 64 registers: 50%).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/occupancy.h"

namespace kp::analysis {
namespace {

constexpr double kLowTheoreticalPct = 50;
constexpr double kTensorLowTheoreticalPct = 12.5;
constexpr double kAchievedGapPoints = 20;
constexpr double kMemoryLowAchievedPct = 40;
constexpr double kMemoryRoofFraction = 0.8;
constexpr double kTargetOccupancyPct = 50;

bool is_sm90(const Evidence& e) { return e.device.cc_major == 9 || (e.device.cc_major == 0 && e.ceilings.cc_major == 9); }

class OccupancyLimiter final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "occupancy_limiter",
        "Occupancy limited by resources",
        "Theoretical occupancy from registers, shared memory and block size against the SM's limits, "
        "and achieved against theoretical: too few resident warps leave latency exposed.",
        {BottleneckClass::kLatencyBound, BottleneckClass::kMemoryBound},
        {},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (!e.roofline || !is_sm90(e)) return out;
    const bool latency = e.roofline->cls == BottleneckClass::kLatencyBound;
    const bool memory = e.roofline->cls == BottleneckClass::kMemoryBound;
    if (!latency && !memory) return out;
    if (memory && e.roofline->sol_fraction >= kMemoryRoofFraction) return out;
    const int sms = sm_count(e);

    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const auto& k = e.kernels[i];
      const KernelShape shape = kernel_shape(e, i);
      const int regs = shape.regs;
      const int64_t shared = shape.shared, threads = shape.threads, blocks = shape.blocks;
      auto occ = sm90_occupancy(threads, regs, shared);
      if (!occ) continue;
      const auto achieved = metric(k, "sm__warps_active.avg.pct_of_peak_sustained_active");
      if (!achieved) continue;
      const double headroom = e.roofline->headroom > 1 ? e.roofline->headroom : 1e9;

      const profile::KernelSass* sass = e.sass_for(k);
      const bool tensor = sass && (sass->sass.count(profile::SassClass::kTensorWarp) > 0 ||
                                   sass->sass.count(profile::SassClass::kTensorWarpgroup) > 0);
      if (tensor && occ->theoretical_pct >= kTensorLowTheoreticalPct) continue;
      const bool resource_limited = occ->theoretical_pct < kLowTheoreticalPct;
      const bool full_wave = sms > 0 && blocks >= static_cast<int64_t>(sms) * occ->blocks_per_sm;
      const bool gap = full_wave && *achieved < kTargetOccupancyPct && occ->theoretical_pct - *achieved >= kAchievedGapPoints;
      if (!resource_limited && !gap) continue;
      if (memory && *achieved >= kMemoryLowAchievedPct) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.evidence.push_back(context("registers per thread", regs));
      f.evidence.push_back(context("shared memory per block", static_cast<double>(shared), "B"));
      f.evidence.push_back(context("threads per block", static_cast<double>(threads)));
      f.evidence.push_back(context("blocks per SM by registers", occ->by_registers));
      f.evidence.push_back(context("blocks per SM by shared memory", occ->by_shared));
      f.evidence.push_back(context("blocks per SM by warps", occ->by_warps));
      if (resource_limited) {
        f.severity = occ->theoretical_pct <= 25 ? Severity::kCritical : Severity::kWarning;
        f.estimated_gain = std::clamp(kTargetOccupancyPct / std::max(*achieved, 1.0), 1.0, headroom);
        f.title = "Theoretical occupancy " + std::to_string(static_cast<int>(occ->theoretical_pct)) + "% is limited by " +
                  occ->limiter;
        f.evidence.push_back(evidence("theoretical occupancy", occ->theoretical_pct, "<", kLowTheoreticalPct, "%"));
        f.evidence.push_back(context("sm__warps_active.avg.pct_of_peak_sustained_active", *achieved, "%"));
        if (occ->limiter == "registers") {
          f.guidance = "Each thread holds " + std::to_string(regs) + " registers, so only " +
                       std::to_string(occ->blocks_per_sm) +
                       " blocks fit per SM. Cap them with __launch_bounds__(threads, minBlocks) or "
                       "-maxrregcount (at 256 threads: 32 registers allow 100%, 40 allow 75%, 64 allow 50%, 128 only 25%), keep fewer values "
                       "live (smaller per-thread tiles, recompute cheap values), and check that the cap does not "
                       "cause spills.";
          f.actions = {"reduce_registers"};
        } else if (occ->limiter == "shared memory") {
          f.guidance = "Each block needs " + std::to_string(shared / 1024) +
                       " KB of shared memory (plus 1 KB reserved), so only " + std::to_string(occ->blocks_per_sm) +
                       " blocks fit in the SM's 228 KB. Use smaller tiles or fewer pipeline stages, store tiles in "
                       "a narrower type, or reuse one buffer for successive phases.";
          f.actions = {"reduce_shared_memory"};
        } else {
          f.guidance = "The block size caps resident warps: " + std::to_string(threads) +
                       " threads per block allows " + std::to_string(occ->blocks_per_sm) +
                       " blocks per SM. Use 128-256 threads per block (a multiple of 32) so that more warps fit.";
          f.actions = {"tune_block_size"};
        }
      } else {
        f.severity = Severity::kWarning;
        f.estimated_gain = std::clamp(occ->theoretical_pct / std::max(*achieved, 1.0), 1.0, headroom);
        f.title = "Achieved occupancy " + std::to_string(static_cast<int>(*achieved)) + "% is far below the theoretical " +
                  std::to_string(static_cast<int>(occ->theoretical_pct)) + "%";
        f.evidence.push_back(context("theoretical occupancy", occ->theoretical_pct, "%"));
        f.evidence.push_back(evidence("theoretical - achieved occupancy", occ->theoretical_pct - *achieved, ">=",
                                      kAchievedGapPoints, "points"));
        f.guidance = "Warp slots the resources would allow stay empty: blocks finish unevenly (work imbalance "
                     "between blocks or warps, early exits) or blocks are too large to be replaced quickly. Give "
                     "every block the same amount of work, and try smaller blocks (128 threads) so that a "
                     "finished block frees its slot sooner.";
        f.actions = {"tune_block_size"};
      }
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_occupancy_limiter() { return std::make_unique<OccupancyLimiter>(); }

}  // namespace kp::analysis
