#include "analysis/tools/builtin.h"

namespace kp::analysis {

// Defined in analysis/tools/<name>.cc, one tool each.
std::unique_ptr<Tool> make_accidental_fp64();
std::unique_ptr<Tool> make_atomics_contention();
std::unique_ptr<Tool> make_bank_conflicts();
std::unique_ptr<Tool> make_barrier_overhead();
std::unique_ptr<Tool> make_branch_divergence();
std::unique_ptr<Tool> make_dram_over_ideal();
std::unique_ptr<Tool> make_fp32_unfused();
std::unique_ptr<Tool> make_hopper_path_unused();
std::unique_ptr<Tool> make_host_device_copies();
std::unique_ptr<Tool> make_launch_overhead();
std::unique_ptr<Tool> make_low_ilp();
std::unique_ptr<Tool> make_low_l2_hit_rate();
std::unique_ptr<Tool> make_narrow_loads();
std::unique_ptr<Tool> make_occupancy_limiter();
std::unique_ptr<Tool> make_register_spills();
std::unique_ptr<Tool> make_roofline_headroom();
std::unique_ptr<Tool> make_small_grid();
std::unique_ptr<Tool> make_special_functions();
std::unique_ptr<Tool> make_tail_effect();
std::unique_ptr<Tool> make_tensor_cores_unused();
std::unique_ptr<Tool> make_uncoalesced_access();
std::unique_ptr<Tool> make_warp_stalls();

const std::vector<ToolFactory>& builtin_tool_factories() {
  static const std::vector<ToolFactory> factories = {
      make_accidental_fp64,
      make_atomics_contention,
      make_bank_conflicts,
      make_barrier_overhead,
      make_branch_divergence,
      make_dram_over_ideal,
      make_fp32_unfused,
      make_hopper_path_unused,
      make_host_device_copies,
      make_launch_overhead,
      make_low_ilp,
      make_low_l2_hit_rate,
      make_narrow_loads,
      make_occupancy_limiter,
      make_register_spills,
      make_roofline_headroom,
      make_small_grid,
      make_special_functions,
      make_tail_effect,
      make_tensor_cores_unused,
      make_uncoalesced_access,
      make_warp_stalls};
  return factories;
}

}  // namespace kp::analysis
