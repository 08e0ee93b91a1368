// sm_90 occupancy of one block shape, shared by the tools that reason about resident blocks
// (occupancy_limiter, tail_effect, small_grid): the CUDA occupancy calculator's rules for
// compute capability 9.0 (registers allocated per warp in units of 256, shared memory per block
// in units of 128 bytes plus 1 KB reserved, 64 warps and 32 blocks per SM).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {

inline constexpr int kSm90MaxWarps = 64;
inline constexpr int kSm90MaxBlocks = 32;

struct Occupancy {
  int warps_per_block = 0;
  int by_registers = 0, by_shared = 0, by_warps = 0, by_blocks = kSm90MaxBlocks;
  int blocks_per_sm = 0;
  std::string limiter;  // "registers", "shared memory", "warps per SM", "blocks per SM"
  double theoretical_pct = 0;
};

// The occupancy of a block of `threads` with `regs` registers a thread and `shared` bytes
// (static + dynamic) a block; nullopt for an impossible launch.
std::optional<Occupancy> sm90_occupancy(int64_t threads, int regs, int64_t shared);

// Its blocks per SM; 0 for an impossible launch.
inline int sm90_blocks_per_sm(int64_t threads, int regs, int64_t shared) {
  auto o = sm90_occupancy(threads, regs, shared);
  return o ? o->blocks_per_sm : 0;
}

// What decides kernel i's residency: registers (ptxas' count, else the trace's), shared memory
// per block (static from ptxas, else the trace, plus the trace's dynamic), block and grid size.
struct KernelShape {
  int regs = 0;
  int64_t shared = 0;
  int64_t threads = 0;
  int64_t blocks = 0;
};
KernelShape kernel_shape(const Evidence& e, size_t i);

// The SM count of the evidence's device (the calibration's when the device has none); 0 unknown.
int sm_count(const Evidence& e);

// Whether kernel i's resident warps are capped by a cause that occupancy_limiter or small_grid
// names: a theoretical occupancy below kLowTheoreticalOccupancyPct (50%), a grid that leaves at least
// kMinIdleSmShare (10%) of the SMs without a block, or one of fewer than kLowGridWarpsPerSm (16)
// warps per SM. Tools that reason about what each resident
// warp does (narrow_loads) stay quiet then: more warps is the first fix.
inline constexpr double kLowTheoreticalOccupancyPct = 50;
inline constexpr double kLowGridWarpsPerSm = 16;
inline constexpr double kMinIdleSmShare = 0.1;
// Whether a grid of `blocks` leaves at least kMinIdleSmShare of `sms` SMs without a block.
inline bool leaves_sms_idle(int64_t blocks, int sms) { return sms > 0 && blocks < sms && double(sms - blocks) >= kMinIdleSmShare * sms; }
bool residency_capped(const Evidence& e, size_t i);

}  // namespace kp::analysis
