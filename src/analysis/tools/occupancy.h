// sm_90 occupancy of one block shape, shared by the tools that reason about resident blocks
// (occupancy_limiter, tail_effect, small_grid): the CUDA occupancy calculator's rules for
// compute capability 9.0 (registers allocated per warp in units of 256, shared memory per block
// in units of 128 bytes plus 1 KB reserved, 64 warps and 32 blocks per SM).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

}  // namespace kp::analysis
