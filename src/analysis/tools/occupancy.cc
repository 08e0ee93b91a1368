#include "analysis/tools/occupancy.h"

#include <algorithm>

namespace kp::analysis {
namespace {

constexpr int kWarpSize = 32;
constexpr int kSm90SubPartitions = 4;
constexpr int kSm90RegistersPerSubPartition = 65536 / kSm90SubPartitions;
constexpr int kSm90RegisterUnit = 256;  // per-warp allocation granularity
constexpr int64_t kSm90SharedPerSm = 228 * 1024;
constexpr int64_t kSm90ReservedSharedPerBlock = 1024;
constexpr int64_t kSm90SharedUnit = 128;

}  // namespace

std::optional<Occupancy> sm90_occupancy(int64_t threads, int regs, int64_t shared) {
  if (threads <= 0 || threads > 1024 || regs <= 0 || regs > 255) return std::nullopt;
  Occupancy o;
  o.warps_per_block = static_cast<int>((threads + kWarpSize - 1) / kWarpSize);
  const int per_warp = (regs * kWarpSize + kSm90RegisterUnit - 1) / kSm90RegisterUnit * kSm90RegisterUnit;
  o.by_registers = kSm90SubPartitions * (kSm90RegistersPerSubPartition / per_warp) / o.warps_per_block;
  const int64_t smem = (shared + kSm90ReservedSharedPerBlock + kSm90SharedUnit - 1) / kSm90SharedUnit * kSm90SharedUnit;
  o.by_shared = static_cast<int>(std::min<int64_t>(kSm90SharedPerSm / smem, 1 << 20));
  o.by_warps = kSm90MaxWarps / o.warps_per_block;
  o.blocks_per_sm = std::min({o.by_registers, o.by_shared, o.by_warps, o.by_blocks});
  if (o.blocks_per_sm == o.by_registers) o.limiter = "registers";
  else if (o.blocks_per_sm == o.by_shared) o.limiter = "shared memory";
  else if (o.blocks_per_sm == o.by_warps) o.limiter = "warps per SM";
  else o.limiter = "blocks per SM";
  o.theoretical_pct = 100.0 * o.blocks_per_sm * o.warps_per_block / kSm90MaxWarps;
  return o;
}

}  // namespace kp::analysis
