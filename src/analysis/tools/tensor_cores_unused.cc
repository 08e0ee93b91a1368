// tensor_cores_unused: matrix-shaped floating-point work done on the CUDA cores (FFMA, HFMA2)
// while the tensor cores sit idle, e.g. an FP32 or BF16 GEMM written as a loop of FMAs.
//
// Fires on a kernel when all of:
//   - its SASS has no tensor-core MMA (SassSummary::tensor_instructions() == 0) and the
//     stage-1 counters sm__ops_path_tensor_src_{fp16,bf16_dst_fp32,tf32_dst_fp32}.sum were
//     collected and are 0;
//   - the work is arithmetic-heavy in a way tensor cores can take: either the task's ideal
//     intensity ideal_flops / ideal_bytes is at least the FP32 ridge (Ceilings::fp32_flops over
//     dram_bytes_per_s, about 15 FLOP/B on the H200; profiling.md section 1) and the kernel
//     does at least kMinShareOfIdeal of the ideal FLOP on CUDA cores; or, when the task gives
//     no ideal, the kernel's CUDA-core FP32/FP16 rate is at least kRoofBoundFraction (60%) of
//     its ceiling and FFMA/HFMA carry at least kMinFmaShare of the FP ops (a matrix product is
//     all multiply-adds). The second way cannot tell a GEMM from a polynomial: it is reported
//     as info, with that caveat.
//   - operands are re-read as a matrix product re-reads them: warp-level loads (global load
//     requests l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum plus shared loads
//     smsp__sass_inst_executed_op_shared_ld.sum) per warp-level multiply-add (FFMA/HFMA, plus
//     min(FMUL, FADD) and min(HMUL, HADD): uncontracted pairs; thread count / 32)
//     at least kMinLoadsPerFma (1/64). A GEMM, even 16x16 register-blocked with 128-bit shared
//     loads, loads one operand vector per 32 FMAs; a polynomial or an unrolled recurrence per
//     element loads once per hundreds (H200 flaw suite: 0.001-0.004 on the polynomial kernels
//     of flaws 06, 09, 12, 0.20 on the FP32 GEMM of flaw 13). Skipped when either count is missing;
//   - and those loads re-read data: the bytes they carry, taken as 128 B a warp request (32
//     lanes of 4 B), are at least kMinReread (4) times the DRAM bytes read
//     (dram__bytes_read.sum). A matrix product loads each operand once per tile of the other;
//     an elementwise kernel loads each input once, whatever its FMAs per element (flaw 07's fp32
//     twin on the H200: a 64-step recurrence per element, 1/63 warp loads per warp FMA, which
//     passes the bar above, but 1.0 loaded byte per DRAM byte). Skipped when DRAM bytes are
//     missing or zero (inputs resident in L2).
// Estimated gain: the kernel time over the floor it would have on tensor cores,
// max(FLOP / tensor peak, bytes / DRAM bandwidth), bytes being the kernel's share of the ideal
// bytes (else its measured DRAM bytes). The tensor peak is the calibrated TF32 rate for FP32
// work and the BF16/FP16 rate for half work. This is an upper bound: a good wgmma kernel reaches
// 70-90% of the calibrated (cuBLAS) rate.
//
// Worked example, naive 4096^3 FP32 GEMM on the H200 (bench/results/.../profile_gemm_fp32.json):
// 16.9 ms, 6.87e10 FFMA = 137 GFLOP (8.1 TFLOP/s, 12% of 65.2); ideal 137 GFLOP over
// 3 x 64 MiB = 201 MB: 683 FLOP/B >= ridge 15.3. Floor max(137e9 / 412e12, 201e6 / 4.27e12)
// = max(333 us, 47 us) = 333 us: gain up to 16.9 ms / 333 us = 51x; critical.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kMinShareOfIdeal = 0.25;  // of the task's ideal FLOP done by this kernel
constexpr double kMinFmaShare = 0.8;       // FMA share of the FP ops when there is no ideal
constexpr double kCriticalGain = 4;        // a gain this large makes it the main problem
constexpr double kMinLoadsPerFma = 1.0 / 64;  // warp loads per warp FMA of a matrix product
constexpr double kMinReread = 4;              // loaded bytes per DRAM byte read of a matrix product
constexpr double kWarpRequestBytes = 128;     // 32 lanes x 4 B

class TensorCoresUnused final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "tensor_cores_unused",
        "Tensor cores unused",
        "Matrix-shaped FP32/FP16 arithmetic on the CUDA cores with no tensor-core instruction: "
        "mma.sync or wgmma would run it several times faster.",
        {},
        {},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    for (const auto& k : e.kernels) {
      const profile::KernelSass* sass = e.sass_for(k);
      if (!sass || sass->sass.tensor_instructions() != 0) continue;
      auto t16 = metric(k, "sm__ops_path_tensor_src_fp16.sum");
      auto tbf = metric(k, "sm__ops_path_tensor_src_bf16_dst_fp32.sum");
      auto ttf = metric(k, "sm__ops_path_tensor_src_tf32_dst_fp32.sum");
      auto ns = metric(k, "gpu__time_duration.sum");
      auto fadd = metric(k, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum");
      auto fmul = metric(k, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum");
      auto ffma = metric(k, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
      if (!t16 || !tbf || !ttf || !ns || *ns <= 0 || !fadd || !fmul || !ffma) continue;
      if (*t16 + *tbf + *ttf != 0) continue;
      const double hadd = k.get_or("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", 0);
      const double hmul = k.get_or("smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", 0);
      const double hfma = k.get_or("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", 0);
      const double f32 = *fadd + *fmul + 2 * *ffma;
      const double f16 = 2 * hadd + 2 * hmul + 4 * hfma;
      const double flops = f32 + f16;
      if (flops <= 0) continue;
      auto gld = metric(k, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
      auto sld = metric(k, "smsp__sass_inst_executed_op_shared_ld.sum");
      // Multiply-adds, fused or not: an FMUL feeding an FADD is a multiply-add that was not
      // contracted (fp32_unfused's flaw), and counts as one here, as a matrix product's would.
      const double fma_warp = (*ffma + hfma + std::min(*fmul, *fadd) + std::min(hmul, hadd)) / 32;
      std::optional<double> reuse;
      if (gld && sld && fma_warp > 0) {
        reuse = (*gld + *sld) / fma_warp;
        if (*reuse < kMinLoadsPerFma) continue;  // FMAs on values a thread keeps: not a matrix product
      }
      std::optional<double> reread;
      const double dram_read = k.get_or("dram__bytes_read.sum", 0);
      if (gld && sld && dram_read > 0) {
        reread = (*gld + *sld) * kWarpRequestBytes / dram_read;
        if (*reread < kMinReread) continue;  // each input loaded once: elementwise, not a matrix product
      }
      const double seconds = *ns * 1e-9;
      const bool half = f16 > f32;
      const double cuda_peak = half ? e.ceilings.fp16_flops : e.ceilings.fp32_flops;
      const double roof = cuda_peak > 0 ? flops / seconds / cuda_peak : 0;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      if (reuse) f.evidence.push_back(evidence("warp loads per warp FMA", *reuse, ">=", kMinLoadsPerFma));
      if (reread)
        f.evidence.push_back(evidence("loaded bytes (128 B a warp request) per DRAM byte read", *reread, ">=", kMinReread));
      double bytes = k.get_or("dram__bytes_read.sum", 0) + k.get_or("dram__bytes_write.sum", 0);
      const double ridge = e.ceilings.dram_bytes_per_s > 0 ? e.ceilings.fp32_flops / e.ceilings.dram_bytes_per_s : 0;
      if (e.ideal_flops > 0 && e.ideal_bytes > 0 && ridge > 0) {
        const double intensity = e.ideal_flops / e.ideal_bytes;
        const double share = flops / e.ideal_flops;
        if (intensity < ridge || share < kMinShareOfIdeal) continue;
        f.evidence.push_back(evidence("task ideal FLOP per ideal DRAM byte", intensity, ">=", ridge, "FLOP/B"));
        f.evidence.push_back(evidence("CUDA-core FLOP / ideal FLOP", share, ">=", kMinShareOfIdeal));
        bytes = e.ideal_bytes * std::min(share, 1.0);
        f.severity = Severity::kWarning;
      } else {
        const double fma_ops = 2 * *ffma + 4 * hfma;
        if (roof < kRoofBoundFraction || fma_ops < kMinFmaShare * flops) continue;
        f.evidence.push_back(evidence(half ? "FP16 roof fraction" : "FP32 roof fraction", roof, ">=",
                                      kRoofBoundFraction));
        f.evidence.push_back(evidence("FMA share of FP ops", fma_ops / flops, ">=", kMinFmaShare));
        f.severity = Severity::kInfo;
      }
      f.evidence.push_back(evidence("tensor-core MMA instructions in SASS", 0, "==", 0));
      f.evidence.push_back(evidence("sm__ops_path_tensor_src_{fp16,bf16,tf32}.sum", 0, "==", 0));
      f.evidence.push_back(context(half ? "CUDA-core FP16 FLOP/s" : "CUDA-core FP32 FLOP/s", flops / seconds, "FLOP/s"));
      if (cuda_peak > 0) f.evidence.push_back(context("fraction of the CUDA-core ceiling", roof));

      const double tensor_peak = half ? std::max(e.ceilings.tensor_bf16_flops, e.ceilings.tensor_fp16_flops)
                                      : e.ceilings.tensor_tf32_flops;
      if (tensor_peak > 0) {
        double floor = flops / tensor_peak;
        if (e.ceilings.dram_bytes_per_s > 0) floor = std::max(floor, bytes / e.ceilings.dram_bytes_per_s);
        f.estimated_gain = std::max(1.0, seconds / floor);
        f.evidence.push_back(context(half ? "tensor BF16/FP16 ceiling" : "tensor TF32 ceiling", tensor_peak, "FLOP/s"));
      }
      if (f.severity == Severity::kWarning &&
          (f.estimated_gain >= kCriticalGain ||
           (e.roofline && e.roofline->cls == BottleneckClass::kComputeBound)))
        f.severity = Severity::kCritical;

      char title[160];
      std::snprintf(title, sizeof title, "%s arithmetic runs on CUDA cores (%.3g FLOP), tensor cores idle",
                    half ? "FP16/BF16" : "FP32", flops);
      f.title = title;
      f.guidance = half
          ? "Do the matrix products on tensor cores: stage tiles of A and B in shared memory and issue "
            "mma.sync.m16n8k16 (BF16/FP16 inputs, FP32 accumulators; ldmatrix to load fragments), or on "
            "sm_90a wgmma.m64nNk16 from shared-memory descriptors (CUTLASS/CuTe, or WMMA as a first step). "
            "Accumulate in FP32 so accuracy is unchanged."
          : "Do the matrix products on tensor cores: TF32 mma.sync.m16n8k8 (or wgmma on sm_90a) with FP32 "
            "accumulators takes FP32 inputs as they are. TF32 keeps 10 mantissa bits, so expect relative "
            "errors near 1e-3 per product: check the task's tolerance; if it is tighter, use 3xTF32 (split "
            "each operand into a high and a low TF32 part, about FP32 accuracy at a third of the TF32 rate) "
            "or BF16 inputs only where the tolerance allows. CUTLASS/CuTe GEMMs do this.";
      f.actions = {"use_tensor_cores"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_tensor_cores_unused() { return std::make_unique<TensorCoresUnused>(); }

}  // namespace kp::analysis
