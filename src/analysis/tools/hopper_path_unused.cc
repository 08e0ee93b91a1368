// hopper_path_unused: a tensor-core kernel on Hopper (sm_90) that stays on the Ampere path:
// warp-level mma.sync (HMMA/IMMA) instead of warpgroup MMA (HGMMA/IGMMA/QGMMA: wgmma), or
// wgmma fed without the Tensor Memory Accelerator (no UTMALDG/UBLKCP: SassClass::kTma).
//
// Fires on a kernel when the device is sm_90 (Evidence::device.cc_major == 9, else
// Ceilings::cc_major, else the SASS arch "sm_90*"), its SASS has warp MMAs and no warpgroup
// MMA, or warpgroup MMAs and no TMA instruction, and the tensor pipe is busy:
// sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active >= 20% (ncu's
// HighPipeUtilization: below 20% every pipe is under-utilized and the tensor path is not what
// limits the kernel), or, when that stage-2 metric is absent, the stage-1 tensor ops reach 20%
// of the calibrated tensor ceiling of their precision. With mma.sync it fires on a tensor-core
// kernel (tensor ops >= the CUDA-core FLOPs it executes, stage 1) below kWgmmaReach of the
// ceiling even when the pipe is idle: a mma.sync GEMM that starves its tensor pipe (the flaw
// suite's WMMA GEMM: 3.7% of the BF16 ceiling, pipe 6.6% busy) is fixed by the same move, as
// TMA's asynchronous, register-free loads into a multi-stage ring are what feed the pipe.
// Why it matters: on the H200 mma.sync peaks at 643 TFLOP/s BF16 on registers alone (our
// calibration) against 802 TFLOP/s for cuBLAS's wgmma kernels, and a real mma.sync GEMM also
// spends issue slots on ldmatrix and registers on fragments; wgmma reads B (and A) from shared
// memory, and TMA moves tiles without using threads or registers.
// Estimated gain (mma.sync): kWgmmaReach x the ceiling over the achieved tensor rate, at least
// 1; a CUTLASS sm90 kernel reaches about kWgmmaReach of the calibrated (cuBLAS) rate. Without
// TMA: 1 (unknown: the loads may already overlap).
//
// Worked example: BF16 GEMM with HMMA.16816.F32.BF16, no HGMMA, 4.0e14 tensor ops/s against
// the 8.02e14 BF16 ceiling, tensor pipe 85%: gain 0.8 x 8.02 / 4.0 = 1.6x, critical when the
// call is compute-bound.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kBusyPipePct = 20;   // ncu HighPipeUtilization: under-utilized below 20%
constexpr double kBusyFraction = 0.2;  // the same, as a fraction of the tensor ceiling
constexpr double kWgmmaReach = 0.8;    // share of the calibrated rate a wgmma kernel reaches

int64_t opcode_count(const profile::SassSummary& s, const char* op) {
  auto it = s.by_opcode.find(op);
  return it == s.by_opcode.end() ? 0 : it->second;
}

class HopperPathUnused final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "hopper_path_unused",
        "Hopper tensor path unused",
        "Tensor-core work on sm_90 through warp-level mma.sync, or wgmma without TMA: Hopper's "
        "warpgroup MMA fed by the Tensor Memory Accelerator is the faster path.",
        {},
        {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    for (const auto& k : e.kernels) {
      const profile::KernelSass* ks = e.sass_for(k);
      if (!ks) continue;
      const profile::SassSummary& s = ks->sass;
      const bool sm90 = e.device.cc_major == 9 || (e.device.cc_major == 0 && e.ceilings.cc_major == 9) ||
                        (e.device.cc_major == 0 && e.ceilings.cc_major == 0 && s.arch.rfind("sm_90", 0) == 0);
      if (!sm90) continue;
      const int64_t warp_mma = opcode_count(s, "HMMA") + opcode_count(s, "IMMA");
      const int64_t group_mma =
          opcode_count(s, "HGMMA") + opcode_count(s, "IGMMA") + opcode_count(s, "QGMMA") + opcode_count(s, "BGMMA");
      const int64_t tma = s.count(profile::SassClass::kTma);
      const bool no_wgmma = warp_mma > 0 && group_mma == 0;
      const bool no_tma = group_mma > 0 && tma == 0;
      if (!no_wgmma && !no_tma) continue;

      // Tensor rate and its ceiling, by the precision with the most ops.
      struct Path { const char* metric; double peak; };
      const Path paths[] = {
          {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", e.ceilings.tensor_bf16_flops},
          {"sm__ops_path_tensor_src_fp16.sum", e.ceilings.tensor_fp16_flops},
          {"sm__ops_path_tensor_src_tf32_dst_fp32.sum", e.ceilings.tensor_tf32_flops},
          {"sm__ops_path_tensor_src_int8.sum", e.ceilings.tensor_int8_ops},
          {"sm__ops_path_tensor_src_fp8_sparsity_off.sum", e.ceilings.tensor_fp8_flops},
      };
      const Path* top = nullptr;
      double ops = 0;
      for (const auto& p : paths) {
        double v = k.get_or(p.metric, 0);
        if (v > ops) {
          ops = v;
          top = &p;
        }
      }
      auto ns = metric(k, "gpu__time_duration.sum");
      double fraction = 0;
      if (top && ns && *ns > 0 && top->peak > 0) fraction = ops / (*ns * 1e-9) / top->peak;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      // A tensor-core kernel: its tensor ops are at least the CUDA-core FLOPs it executes.
      double cuda_flops = 0;
      for (const auto& [m, w] : {std::pair{"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 2.0},
                                 {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 1.0},
                                 {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 1.0},
                                 {"smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", 2.0},
                                 {"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", 1.0},
                                 {"smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", 1.0},
                                 {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 2.0},
                                 {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", 1.0},
                                 {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", 1.0}})
        cuda_flops += w * k.get_or(m, 0);
      const bool tensor_kernel = ops > 0 && ops >= cuda_flops;
      auto pipe = metric(k, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active");
      const bool busy = pipe ? *pipe >= kBusyPipePct : fraction >= kBusyFraction;
      // mma.sync: the Hopper path is the fix for any tensor-core kernel short of its reach,
      // busy pipe or not (a starved pipe is what TMA's asynchronous loads fix). wgmma without
      // TMA: only when the pipe is busy (the loads may already overlap).
      const bool short_of_reach = fraction > 0 && fraction < kWgmmaReach;
      if (no_wgmma ? !(busy || (tensor_kernel && short_of_reach)) : !busy) continue;
      if (pipe)
        f.evidence.push_back(busy ? evidence("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", *pipe,
                                             ">=", kBusyPipePct, "%")
                                  : context("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", *pipe, "%"));
      if (!busy) {
        f.evidence.push_back(evidence("tensor ops / CUDA-core FLOPs", cuda_flops > 0 ? ops / cuda_flops : ops, ">=", 1));
        f.evidence.push_back(evidence("tensor ops / calibrated ceiling", fraction, "<", kWgmmaReach));
      } else if (fraction > 0) {
        f.evidence.push_back(pipe ? context("tensor ops / calibrated ceiling", fraction)
                                  : evidence("tensor ops / calibrated ceiling", fraction, ">=", kBusyFraction));
      }
      if (no_wgmma) {
        f.evidence.push_back(evidence("warp MMA (HMMA/IMMA) in SASS", static_cast<double>(warp_mma), ">", 0));
        f.evidence.push_back(evidence("warpgroup MMA (HGMMA/IGMMA/QGMMA) in SASS", 0, "==", 0));
        f.severity = e.roofline && e.roofline->cls == BottleneckClass::kComputeBound ? Severity::kCritical
                                                                                       : Severity::kWarning;
        if (fraction > 0) f.estimated_gain = std::max(1.0, kWgmmaReach / fraction);
        if (e.roofline && e.roofline->headroom > 1) f.estimated_gain = std::min(f.estimated_gain, e.roofline->headroom);
        char title[160];
        std::snprintf(title, sizeof title, "sm_90 kernel uses mma.sync (%lld warp MMAs), not wgmma",
                      static_cast<long long>(warp_mma));
        f.title = title;
        f.guidance =
            "Move the main loop to Hopper's warpgroup MMA: wgmma.mma_async.m64nNk16 (N up to 256) issued by "
            "a warpgroup of 128 threads, with A and B in shared memory described by matrix descriptors "
            "(128B swizzle), fed by TMA loads (cp.async.bulk.tensor) into a multi-stage ring of buffers "
            "guarded by mbarriers, one producer warp and consumer warpgroups. Compile for sm_90a. The "
            "CUTLASS/CuTe sm90 collectives (KernelTmaWarpSpecializedCooperative) do exactly this.";
      } else {
        f.evidence.push_back(evidence("warpgroup MMA in SASS", static_cast<double>(group_mma), ">", 0));
        f.evidence.push_back(evidence("TMA instructions (UTMALDG, UBLKCP, ...) in SASS", 0, "==", 0));
        f.evidence.push_back(context("cp.async (LDGSTS) in SASS",
                                     static_cast<double>(s.count(profile::SassClass::kAsyncCopy))));
        f.severity = Severity::kWarning;
        f.title = "wgmma kernel loads its tiles without TMA";
        f.guidance =
            "Load the A and B tiles with TMA (cp.async.bulk.tensor from a CUtensorMap, one elected thread, "
            "completion counted on an mbarrier with expect_tx) into a 3-5 stage shared-memory ring, so the "
            "loads overlap the wgmma of earlier stages and cost no registers or issue slots. CUTLASS/CuTe "
            "sm90 TMA collectives give the swizzled layouts wgmma expects.";
      }
      f.actions = {"use_wgmma_tma"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_hopper_path_unused() { return std::make_unique<HopperPathUnused>(); }

}  // namespace kp::analysis
