// tail_effect: a partial last wave of blocks leaves most SMs idle at the end of the kernel.
//
// A wave is the number of blocks the whole GPU holds at once: SMs x blocks per SM, the latter
// from the same sm_90 occupancy computation as occupancy_limiter.cc (registers in 256-register
// warp units over 4 sub-partitions of 16,384, shared memory + 1 KB reserved per block against
// 228 KB, 64 warps, 32 blocks). waves = blocks / wave (launch__waves_per_multiprocessor is not
// in the Range Profiler's verified lists). The kernel runs ceil(waves) wave-times
// for waves' worth of work, so the share of block slots left idle is
// 1 - waves / ceil(waves), and the gain of a grid with no partial wave is ceil(waves) / waves.
// Fires when waves >= 1 (below one wave is small_grid's) and the idle share is > 20%, which is
// ncu's LaunchConfiguration "Tail Effect" rule (it reports the partial wave only when it may
// cost >= 20% of the runtime); that bound also confines it to fewer than 4 waves, since 4 full
// waves and a tail waste at most 1 - 4/5 = 20%. Latency- and compute-bound kernels only: on a
// memory-bound kernel the last wave's blocks get the whole DRAM bandwidth and finish sooner,
// so the idle slots cost little. Blocks are assumed to take equal time (an upper bound).
//
// Worked example: 132 SMs, 256 threads and 64 registers: 4 blocks per SM by registers, a wave
// of 528 blocks. A grid of 600 blocks is 1.14 waves: the second wave holds 72 blocks, the idle
// share is 1 - 1.14 / 2 = 43% > 20%, gain 2 / 1.14 = 1.76x. Launching 528 blocks that loop over
// the 600 blocks' work (a grid-stride loop) removes the tail; halving the block size alone does
// not (1,200 blocks in waves of 1,056 is the same 1.14).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/occupancy.h"

namespace kp::analysis {
namespace {

constexpr double kTailIdleShare = 0.2;


class TailEffect final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{"tail_effect",
                            "Partial last wave",
                            "The grid is a few waves of blocks plus a partial one: during the last wave most SMs "
                            "sit idle.",
                            {BottleneckClass::kLatencyBound, BottleneckClass::kComputeBound},
                            {},
                            true,
                            false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (!e.roofline) return out;
    if (e.roofline->cls != BottleneckClass::kLatencyBound && e.roofline->cls != BottleneckClass::kComputeBound) return out;
    const bool sm90 = e.device.cc_major == 9 || (e.device.cc_major == 0 && e.ceilings.cc_major == 9);
    const int sms = sm_count(e);
    if (!sm90 || sms <= 0) return out;

    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const auto& k = e.kernels[i];
      const KernelShape shape = kernel_shape(e, i);
      const int regs = shape.regs;
      const int64_t shared = shape.shared, threads = shape.threads, blocks = shape.blocks;
      const int per_sm = sm90_blocks_per_sm(threads, regs, shared);
      if (per_sm <= 0 || blocks <= 0) continue;

      const int64_t wave = static_cast<int64_t>(sms) * per_sm;
      const double waves = static_cast<double>(blocks) / static_cast<double>(wave);
      if (waves < 1) continue;
      const double full = std::ceil(waves);
      const double idle = 1 - waves / full;
      if (idle <= kTailIdleShare) continue;
      const int64_t tail_blocks = blocks - static_cast<int64_t>(std::floor(waves)) * wave;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = idle >= 0.33 ? Severity::kWarning : Severity::kInfo;
      f.estimated_gain = std::max(1.0, full / waves);
      if (e.roofline->headroom > 1) f.estimated_gain = std::min(f.estimated_gain, e.roofline->headroom);
      f.title = std::to_string(static_cast<int64_t>(std::floor(waves))) + " full wave(s) and a partial wave of " +
                std::to_string(tail_blocks) + " blocks";
      f.evidence.push_back(context("blocks", static_cast<double>(blocks)));
      f.evidence.push_back(context("blocks per SM (occupancy)", per_sm));
      f.evidence.push_back(context("blocks per wave", static_cast<double>(wave)));
      f.evidence.push_back(context("waves", waves));
      f.evidence.push_back(evidence("idle block slots over the last wave", 100 * idle, ">", 100 * kTailIdleShare, "%"));
      f.guidance = "The grid of " + std::to_string(blocks) + " blocks fills " +
                   std::to_string(static_cast<int64_t>(std::floor(waves))) + " wave(s) of " + std::to_string(wave) +
                   " and leaves " + std::to_string(tail_blocks) +
                   " blocks for the last one, which runs with most SMs idle. Launch a grid that is a whole number of "
                   "waves (a persistent grid of " + std::to_string(wave) +
                   " blocks looping over the work), or change the work per block or the block size so the block "
                   "count divides evenly; many more, smaller blocks also shrink the tail.";
      f.actions = {"tune_block_size", "increase_parallelism"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_tail_effect() { return std::make_unique<TailEffect>(); }

}  // namespace kp::analysis
