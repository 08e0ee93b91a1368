// small_grid: the grid is too small to fill the GPU, so SMs sit idle or nearly empty.
//
// Two cases, both below one full wave (waves >= 1 is tail_effect's):
//   1. fewer blocks than SMs: blocks < SMs leaves SMs with nothing to run (ncu's
//      LaunchConfiguration "Small Grid" check, and SOLBottleneck's waves < 1), when at least
//      kMinIdleSmShare (10%, occupancy.h) of the SMs get no block: 128 blocks on 132 SMs (cuBLAS
//      picks such grids) leave 3% idle, within the noise of any fix. Gain SMs / blocks, ncu's
//      estimate (SMs - grid) / SMs of the runtime.
//   2. enough blocks for every SM but so few warps per SM that latency cannot be hidden:
//      blocks x warps per block / SMs < 16 warps per SM (25% of Hopper's 64, the occupancy
//      roofline.h calls low), and the grid below one wave (blocks < SMs x blocks per SM, the
//      sm_90 occupancy of occupancy_limiter.cc when ptxas' resources are known). Gain 16 / that.
// Only for kernels that run long enough for it to matter: > 10 us (shorter ones are launch
// overhead, launch_overhead's), and not memory-bound at >= 80% of its roof (nothing to gain).
// Gains are capped by the roofline headroom.
//
// Worked example: a row reduction over 64 rows launches one block of 256 threads per row:
// 64 blocks < 132 SMs, 68 SMs idle, for 45 us. Gain 132 / 64 = 2.06x: split each row over
// several blocks (two-pass or atomics) or give each row one warp and launch many more blocks.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/occupancy.h"

namespace kp::analysis {
namespace {

constexpr double kMinKernelSeconds = 10e-6;
constexpr double kLowWarpsPerSm = kLowGridWarpsPerSm;  // 25% of 64
constexpr double kSaturatedRoof = 0.8;


class SmallGrid final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{"small_grid",
                            "Grid too small to fill the GPU",
                            "Fewer blocks than SMs, or too few warps per SM, for a kernel long enough to matter: "
                            "the GPU runs partly empty.",
                            {BottleneckClass::kLatencyBound, BottleneckClass::kMemoryBound,
                             BottleneckClass::kComputeBound},
                            {},
                            false,
                            false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (!e.roofline || e.roofline->cls == BottleneckClass::kLaunchBound) return out;
    if (e.roofline->cls == BottleneckClass::kMemoryBound && e.roofline->sol_fraction >= kSaturatedRoof) return out;
    const int sms = sm_count(e);
    if (sms <= 0) return out;
    const double headroom = e.roofline->headroom > 1 ? e.roofline->headroom : 1e9;

    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const auto& k = e.kernels[i];
      const profile::TraceKernel* tk = e.traced(i);
      double seconds = k.get_or("gpu__time_duration.sum", 0) * 1e-9;
      if (seconds <= 0 && tk) seconds = tk->duration_s();
      if (seconds <= kMinKernelSeconds) continue;
      const int64_t threads = e.block_threads(i);
      const int64_t blocks = e.grid_blocks(i);
      if (blocks <= 0) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.evidence.push_back(context("kernel duration", seconds * 1e6, "us"));
      if (blocks < sms && !leaves_sms_idle(blocks, sms)) continue;
      if (blocks < sms) {
        f.severity = blocks * 2 <= sms ? Severity::kCritical : Severity::kWarning;
        f.estimated_gain = std::clamp(static_cast<double>(sms) / static_cast<double>(blocks), 1.0, headroom);
        f.title = "Only " + std::to_string(blocks) + " blocks for " + std::to_string(sms) + " SMs";
        f.evidence.push_back(evidence("blocks", static_cast<double>(blocks), "<", sms));
        f.guidance = std::to_string(sms - blocks) + " of " + std::to_string(sms) +
                     " SMs get no block. Split the work finer so the grid has at least one block per SM, better "
                     "several: more blocks with fewer elements each, several blocks per row or tile (split-K, "
                     "two-pass reductions), or smaller blocks.";
      } else {
        if (threads <= 0) continue;
        const double warps_per_block = std::ceil(static_cast<double>(threads) / 32);
        const double warps_per_sm = static_cast<double>(blocks) * warps_per_block / sms;
        if (warps_per_sm >= kLowWarpsPerSm) continue;
        const KernelShape shape = kernel_shape(e, i);
        const int per_sm = sm90_blocks_per_sm(threads, shape.regs, shape.shared);
        // Resources that already cap the SM at this many warps make it occupancy_limiter's case.
        if (per_sm > 0 && blocks >= static_cast<int64_t>(sms) * per_sm) continue;
        f.severity = Severity::kWarning;
        f.estimated_gain = std::clamp(kLowWarpsPerSm / warps_per_sm, 1.0, headroom);
        f.title = "The grid gives each SM only " + std::to_string(warps_per_sm).substr(0, 4) + " warps";
        f.evidence.push_back(context("blocks", static_cast<double>(blocks)));
        f.evidence.push_back(context("threads per block", static_cast<double>(threads)));
        f.evidence.push_back(evidence("warps per SM from the grid", warps_per_sm, "<", kLowWarpsPerSm));
        f.guidance = "Every SM has a block, but the whole grid holds too few warps to hide memory and pipeline "
                     "latency. Launch more threads: one element (or a few) per thread instead of a long loop, "
                     "several blocks per row or tile, so that each SM holds 32 or more warps.";
      }
      f.actions = {"increase_parallelism"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_small_grid() { return std::make_unique<SmallGrid>(); }

}  // namespace kp::analysis
