#include "profile/metric_lists.h"

#include <algorithm>
#include <map>

namespace kp::profile {

const std::vector<std::string>& stage1_metrics() {
  static const std::vector<std::string> kList = {
      "gpu__time_duration.sum",
      "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "lts__t_bytes.sum",
      "smsp__cycles_elapsed.avg.per_second",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "smsp__issue_active.avg.per_cycle_active",
      "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
      "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
      "sm__ops_path_tensor_src_fp16.sum",
      "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
      "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
      "sm__ops_path_tensor_src_fp64.sum",
      "sm__ops_path_tensor_src_int8.sum",
      "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
  };
  return kList;
}

const std::vector<std::string>& stage2_families() {
  static const std::vector<std::string> kFamilies = {"memory", "latency", "compute", "shared"};
  return kFamilies;
}

const std::vector<std::string>& stage2_metrics(std::string_view family) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kLists = {
      {"memory",
       {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
        "l1tex__throughput.avg.pct_of_peak_sustained_active", "lts__throughput.avg.pct_of_peak_sustained_elapsed"}},
      {"latency",
       {"smsp__warps_eligible.avg.per_cycle_active", "smsp__warps_active.avg.per_cycle_active",
        "smsp__average_warp_latency_per_inst_issued.ratio",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
        "smsp__thread_inst_executed_per_inst_executed.ratio"}},
      {"compute",
       {"sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed.avg.per_cycle_active", "smsp__inst_executed.sum"}},
      {"shared",
       {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum"}},
  };
  static const std::vector<std::string> kEmpty;
  auto it = kLists.find(family);
  return it == kLists.end() ? kEmpty : it->second;
}

std::vector<std::string> merge_metric_lists(const std::vector<std::string>& base, const std::vector<std::string>& extra) {
  std::vector<std::string> out = base;
  for (const auto& m : extra)
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  return out;
}

}  // namespace kp::profile
