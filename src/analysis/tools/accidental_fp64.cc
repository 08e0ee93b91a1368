// accidental_fp64: double-precision arithmetic inside FP32/FP16 code, the usual result of a
// double literal (x * 0.5 instead of 0.5f), a double math call on a float (std::exp, sqrt,
// pow from <cmath> with a double argument) or a double accumulator. Each such operation costs
// two conversions (F2F.F64.F32 and back) plus an FP64 op on a pipe half as fast as FP32 on the
// H200 (30.7 against 65.2 TFLOP/s calibrated) and with longer latency.
//
// Fires on a kernel whose stage-1 counters show FP64 work (dadd + dmul + dfma thread
// instructions) above kMinFp64Share (1%) of its FP32 work (fadd + fmul + ffma), with no FP64
// tensor-core ops (sm__ops_path_tensor_src_fp64.sum == 0, when collected). A kernel whose FP64
// work is more than kFp64TaskRatio times its FP32 work looks like an FP64 task and is left alone
// unless its SASS converts between float and double (F2F), the mark of promotion.
// Severity: warning when the FP64 share is >= 10%, or sm__inst_executed_pipe_fp64 is >= 20%
// (ncu HighPipeUtilization's "not under-utilized"), or the FP64 roof fraction is >= 15% (ncu's
// SOLFPRoofline: "FP64 above 15% of peak: consider FP32"); info otherwise.
// Estimated gain, when the call is compute- or latency-bound: FP64 issue costs about twice an
// FP32 op, so (fp32 + 2 fp64) / (fp32 + fp64); 1 otherwise.
//
// Worked example: GELU written with tanh(0.79788456 * (x + 0.044715 * x * x * x)) on floats:
// 2.7e8 FFMA and 1.3e8 DMUL + 1.3e8 DFMA: FP64 share 96% >= 1%, F2F in the SASS; warning, gain
// (2.7 + 5.2) / (2.7 + 2.6) = 1.5x when latency-bound.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kMinFp64Share = 0.01;  // FP64 ops per FP32 op
constexpr double kWarnShare = 0.10;
constexpr double kFp64TaskRatio = 4;
constexpr double kPipeBusyPct = 20;
constexpr double kSolFp64Fraction = 0.15;

constexpr const char* kPipe = "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active";

class AccidentalFp64 final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "accidental_fp64",
        "Accidental FP64",
        "Double-precision instructions in single-precision code (double literals, double math calls): "
        "conversions and the slower FP64 pipe for no accuracy the task needs.",
        {},
        {kPipe},
        false,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    for (const auto& k : e.kernels) {
      auto dadd = metric(k, "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum");
      auto dmul = metric(k, "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum");
      auto dfma = metric(k, "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum");
      auto fadd = metric(k, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum");
      auto fmul = metric(k, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum");
      auto ffma = metric(k, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
      if (!dadd || !dmul || !dfma || !fadd || !fmul || !ffma) continue;
      if (k.get_or("sm__ops_path_tensor_src_fp64.sum", 0) > 0) continue;
      const double f64 = *dadd + *dmul + *dfma;
      const double f32 = *fadd + *fmul + *ffma + k.get_or("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", 0) +
                         k.get_or("smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", 0) +
                         k.get_or("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", 0);
      if (f64 <= 0 || f64 <= kMinFp64Share * f32) continue;
      const profile::KernelSass* ks = e.sass_for(k);
      int64_t f2f = 0, sass_fp64 = 0;
      if (ks) {
        auto it = ks->sass.by_opcode.find("F2F");
        f2f = it == ks->sass.by_opcode.end() ? 0 : it->second;
        sass_fp64 = ks->sass.count(profile::SassClass::kFp64);
      }
      if (f64 > kFp64TaskRatio * f32 && f2f == 0) continue;  // looks like FP64 on purpose

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      const double share = f32 > 0 ? f64 / f32 : f64;
      f.evidence.push_back(f32 > 0 ? evidence("FP64 ops per FP32/FP16 op", share, ">", kMinFp64Share)
                                   : evidence("FP64 thread instructions", f64, ">", 0));
      f.evidence.push_back(context("dadd + dmul + dfma thread instructions", f64));
      f.evidence.push_back(context("fadd + fmul + ffma (+ half) thread instructions", f32));
      if (ks) {
        f.evidence.push_back(context("FP64 instructions in SASS", static_cast<double>(sass_fp64)));
        f.evidence.push_back(context("F2F conversions in SASS", static_cast<double>(f2f)));
      }
      bool warn = share >= kWarnShare;
      if (auto pipe = metric(k, kPipe)) {
        if (*pipe >= kPipeBusyPct) {
          warn = true;
          f.evidence.push_back(evidence(kPipe, *pipe, ">=", kPipeBusyPct, "%"));
        } else {
          f.evidence.push_back(context(kPipe, *pipe, "%"));
        }
      }
      auto ns = metric(k, "gpu__time_duration.sum");
      if (ns && *ns > 0 && e.ceilings.fp64_flops > 0) {
        const double frac = (*dadd + *dmul + 2 * *dfma) / (*ns * 1e-9) / e.ceilings.fp64_flops;
        if (frac >= kSolFp64Fraction) {
          warn = true;
          f.evidence.push_back(evidence("FP64 roof fraction", frac, ">=", kSolFp64Fraction));
        }
      }
      f.severity = warn ? Severity::kWarning : Severity::kInfo;
      if (e.roofline && (e.roofline->cls == BottleneckClass::kComputeBound ||
                         e.roofline->cls == BottleneckClass::kLatencyBound))
        f.estimated_gain = (f32 + 2 * f64) / (f32 + f64);
      char title[160];
      std::snprintf(title, sizeof title, "FP64 arithmetic in single-precision code (%.3g FP64 ops, %.1f%% of FP32)",
                    f64, 100 * share);
      f.title = f32 > 0 ? title : "FP64 arithmetic in a kernel with no FP32 arithmetic, with float-double conversions";
      f.guidance =
          "Keep the arithmetic in float: write literals with an f suffix (0.5f, 1.0f), call the float "
          "functions (expf, sqrtf, tanhf, fabsf, powf, or std::exp on a float argument, not exp(double)), "
          "and accumulate in float (or in a pair of floats / Kahan summation if accuracy matters). "
          "-Wdouble-promotion finds the promotions; cuobjdump -sass shows them as F2F.F64.F32 next to "
          "DADD/DMUL/DFMA. Only keep double where the task's tolerance needs it.";
      f.actions = {"avoid_fp64"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_accidental_fp64() { return std::make_unique<AccidentalFp64>(); }

}  // namespace kp::analysis
