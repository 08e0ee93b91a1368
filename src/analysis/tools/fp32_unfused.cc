// fp32_unfused: FP32 multiplies and adds issued separately where one FFMA could do both (ncu's
// FPInstructions rule, profiling.md section 4). An FFMA does two FLOP in one issue slot; an
// FMUL followed by an FADD takes two.
//
// ncu fires when non-fused / 2 over all FP32 instructions exceeds 0.1. We count fusable pairs
// instead of all non-fused instructions: at most min(fadd, fmul) pairs can be contracted (a
// reduction made only of FADDs has nothing to fuse), so the tool fires when
//   2 * min(fadd, fmul) / (fadd + fmul + ffma) > kFusableShare (0.2, ncu's 0.1 on the pairs),
// counted on the stage-1 thread instructions (smsp__sass_thread_inst_executed_op_*_pred_on),
// and only when FP32 arithmetic matters: the FP32 roof is >= kRoofBoundFraction (60%) of its
// ceiling, or the call is compute-bound with the FP32 roof >= kComputeFp32Fraction, or
// sm__inst_executed_pipe_fma is >= 60% (ncu HighPipeUtilization "high").
// Quiet when ptxas fused at least kMaxSassFusedShare (50%) of the kernel's static FP32
// arithmetic (SASS FFMA over FFMA + FADD + FMUL): contraction is on, and the pairs left are
// deliberate, such as the exact products and sums of libdevice's expf/logf range reductions (the
// special-function flaw: 27% fusable pairs counted, 67% of its SASS FP32 already FFMA). A
// kernel compiled with contraction blocked (__fmul_rn, -fmad=false) shows few FFMA in its SASS.
// Estimated gain: instructions before over after fusing every pair, total / (total - pairs),
// the most an FP32-limited kernel gains. Severity warning; info when only the FMA pipe is busy.
// No action tag fits (fusion here is a compiler setting, not a code restructuring), so the
// finding carries none.
//
// Worked example: 1.0e9 FMUL, 1.0e9 FADD, 0.5e9 FFMA at 70% of the FP32 roof: pairs 1.0e9,
// 2 x 1.0 / 2.5 = 0.8 > 0.2: gain 2.5 / 1.5 = 1.67x.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kFusableShare = 0.2;
constexpr double kComputeFp32Fraction = 0.3;
constexpr double kFmaPipeHighPct = 60;
constexpr double kMaxSassFusedShare = 0.5;

constexpr const char* kFmaPipe = "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active";

class Fp32Unfused final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "fp32_unfused",
        "Unfused FP32 multiply-adds",
        "FP32 FMUL and FADD issued separately where an FFMA would do both in one instruction (ncu's "
        "FPInstructions rule), in a kernel whose FP32 arithmetic matters.",
        {},
        {kFmaPipe},
        false,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    for (const auto& k : e.kernels) {
      auto fadd = metric(k, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum");
      auto fmul = metric(k, "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum");
      auto ffma = metric(k, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
      if (!fadd || !fmul || !ffma) continue;
      const double total = *fadd + *fmul + *ffma;
      const double pairs = std::min(*fadd, *fmul);
      if (total <= 0 || 2 * pairs / total <= kFusableShare) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      auto ns = metric(k, "gpu__time_duration.sum");
      double roof = 0;
      if (ns && *ns > 0 && e.ceilings.fp32_flops > 0)
        roof = (*fadd + *fmul + 2 * *ffma) / (*ns * 1e-9) / e.ceilings.fp32_flops;
      const bool compute = e.roofline && e.roofline->cls == BottleneckClass::kComputeBound;
      auto pipe = metric(k, kFmaPipe);
      if (roof >= kRoofBoundFraction) {
        f.evidence.push_back(evidence("FP32 roof fraction", roof, ">=", kRoofBoundFraction));
        f.severity = Severity::kWarning;
      } else if (compute && roof >= kComputeFp32Fraction) {
        f.evidence.push_back(evidence("FP32 roof fraction (compute-bound call)", roof, ">=", kComputeFp32Fraction));
        f.severity = Severity::kWarning;
      } else if (pipe && *pipe >= kFmaPipeHighPct) {
        f.evidence.push_back(evidence(kFmaPipe, *pipe, ">=", kFmaPipeHighPct, "%"));
        f.severity = Severity::kInfo;
      } else {
        continue;
      }
      f.evidence.push_back(evidence("fusable FMUL+FADD share of FP32 instructions", 2 * pairs / total, ">",
                                    kFusableShare));
      f.evidence.push_back(context("fadd thread instructions", *fadd));
      f.evidence.push_back(context("fmul thread instructions", *fmul));
      f.evidence.push_back(context("ffma thread instructions", *ffma));
      if (const profile::KernelSass* ks = e.sass_for(k)) {
        const double fused = static_cast<double>(ks->sass.fp32_fma) /
                             std::max<int64_t>(1, ks->sass.fp32_fma + ks->sass.fp32_add + ks->sass.fp32_mul);
        // ptxas fused most of the code: the FMUL/FADD it left are meant (libdevice's range
        // reductions), not a contraction the source forbade.
        if (fused >= kMaxSassFusedShare) continue;
        f.evidence.push_back(evidence("FFMA share of FP32 arithmetic in SASS", fused, "<", kMaxSassFusedShare));
      }
      f.estimated_gain = total / (total - pairs);
      char title[160];
      std::snprintf(title, sizeof title, "%.0f%% of FP32 instructions are FMUL/FADD pairs that could be FFMA",
                    100 * 2 * pairs / total);
      f.title = title;
      f.guidance =
          "Let the compiler contract multiply-adds: build with -fmad=true (nvcc's default; check that "
          "nothing turns it off), do not use __fmul_rn/__fadd_rn (they forbid contraction) unless the "
          "rounding is needed, write fmaf(a, b, c) where it matters, and arrange expressions so each "
          "product feeds an add directly (a*b + c rather than a product kept apart and summed later; "
          "Horner form for polynomials). --use_fast_math also allows it.";
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_fp32_unfused() { return std::make_unique<Fp32Unfused>(); }

}  // namespace kp::analysis
