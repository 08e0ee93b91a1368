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

KernelShape kernel_shape(const Evidence& e, size_t i) {
  KernelShape s;
  const profile::KernelSass* sass = i < e.kernels.size() ? e.sass_for(e.kernels[i]) : nullptr;
  const profile::TraceKernel* tk = e.traced(i);
  s.regs = sass && sass->resources ? sass->resources->registers : 0;
  if (s.regs <= 0 && tk) s.regs = tk->registers_per_thread;
  s.shared = sass && sass->resources ? sass->resources->shared_bytes : (tk ? tk->static_shared_bytes : 0);
  if (tk) s.shared += tk->dynamic_shared_bytes;
  s.threads = e.block_threads(i);
  s.blocks = e.grid_blocks(i);
  return s;
}

int sm_count(const Evidence& e) { return e.device.sm_count > 0 ? e.device.sm_count : e.ceilings.sm_count; }

bool residency_capped(const Evidence& e, size_t i) {
  const KernelShape s = kernel_shape(e, i);
  if (auto o = sm90_occupancy(s.threads, s.regs, s.shared); o && o->theoretical_pct < kLowTheoreticalOccupancyPct) return true;
  const int sms = sm_count(e);
  if (sms <= 0 || s.blocks <= 0 || s.threads <= 0) return false;
  if (leaves_sms_idle(s.blocks, sms)) return true;
  if (s.blocks < sms) return false;  // nearly every SM has a block: one wave, full SMs
  const double warps_per_sm = static_cast<double>(s.blocks) * ((s.threads + kWarpSize - 1) / kWarpSize) / sms;
  return warps_per_sm < kLowGridWarpsPerSm;
}

}  // namespace kp::analysis
