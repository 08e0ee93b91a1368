// special_functions: the special-function unit (MUFU: exp2, rcp, rsqrt, sin, cos, lg2, tanh, on
// the XU pipe) is what holds a compute- or latency-bound kernel back. The XU pipe issues a
// quarter of the FMA pipe's rate (16 lanes per SM sub-partition against 64 FP32 lanes on
// sm_90), so a few MUFUs per element can saturate it while the FMA pipe idles.
//
// Fires on a kernel whose SASS has MUFU instructions (SassSummary::mufu) and whose
// sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active is >= 60%: ncu's
// HighPipeUtilization calls 60-80% "high utilization, might become a bottleneck" (warning) and
// >= 80% "very high, likely the bottleneck" (critical). Only in compute- and latency-bound
// calls: in a memory-bound one the XU waits like everything else.
// Estimated gain: XU% over the busiest other unit (FMA, ALU, LSU pipes and DRAM throughput,
// those collected): halving the MUFU work lets the kernel run until that unit limits it, so
// the gain is at most that ratio, capped at kMaxGain.
//
// Worked example: a softmax that calls expf and divides per element: SASS MUFU 10 EX2, 6 RCP;
// XU 86%, FMA 31%, LSU 12%, DRAM 40%: critical, gain min(86 / 40, 4) = 2.2x.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kHighPct = 60;      // ncu HighPipeUtilization: high
constexpr double kVeryHighPct = 80;  // ncu HighPipeUtilization: very high, likely the bottleneck
constexpr double kMaxGain = 4;
constexpr double kIssueBound = 0.8;
constexpr double kIssueBoundXuPct = 30;
constexpr const char* kIssue = "smsp__issue_active.avg.per_cycle_active";

constexpr const char* kXu = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active";

class SpecialFunctions final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "special_functions",
        "Special-function unit pressure",
        "MUFU instructions (exp, reciprocal, rsqrt, sin/cos) keep the quarter-rate XU pipe busy: fast-math "
        "intrinsics and algebra that needs fewer of them.",
        {BottleneckClass::kComputeBound, BottleneckClass::kLatencyBound},
        {kXu, "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
         "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
         "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    if (e.roofline && (e.roofline->cls == BottleneckClass::kMemoryBound ||
                       e.roofline->cls == BottleneckClass::kLaunchBound))
      return out;
    for (const auto& k : e.kernels) {
      const profile::KernelSass* ks = e.sass_for(k);
      auto xu = metric(k, kXu);
      auto issue = metric(k, kIssue);
      const bool issue_bound = issue && *issue >= kIssueBound && xu && *xu >= kIssueBoundXuPct && *xu < kHighPct;
      if (!ks || !xu || (*xu < kHighPct && !issue_bound)) continue;
      int64_t mufu = 0;
      std::string mix;
      for (const auto& [fn, n] : ks->sass.mufu) {
        mufu += n;
        mix += (mix.empty() ? "" : ", ") + std::to_string(n) + " " + fn;
      }
      if (mufu == 0) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = *xu >= kVeryHighPct ? Severity::kCritical : Severity::kWarning;
      if (issue_bound) {
        f.evidence.push_back(evidence(kXu, *xu, ">=", kIssueBoundXuPct, "%"));
        f.evidence.push_back(evidence(kIssue, *issue, ">=", kIssueBound));
      } else {
        f.evidence.push_back(evidence(kXu, *xu, ">=", *xu >= kVeryHighPct ? kVeryHighPct : kHighPct, "%"));
      }
      f.evidence.push_back(context("MUFU instructions in SASS", static_cast<double>(mufu)));
      double other = 0;
      for (const char* m : {"sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
                            "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
                            "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
                            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"})
        if (auto v = metric(k, m)) {
          other = std::max(other, *v);
          f.evidence.push_back(context(m, *v, "%"));
        }
      if (issue_bound) f.estimated_gain = 1 + *xu / 100;
      else if (other > 0) f.estimated_gain = std::clamp(*xu / other, 1.0, kMaxGain);

      auto has = [&](const char* fn) { return ks->sass.mufu.count(fn) > 0; };
      std::string g = "The XU pipe runs at a quarter of the FMA rate; cut the MUFU work per element.";
      if (has("EX2") || has("LG2"))
        g += " exp/log: use __expf/__logf (or exp2f(x * log2e) with the constant folded into a preceding "
             "multiply, one EX2 each), and share one exponential between terms (e^a * e^b = e^(a+b)).";
      if (has("RCP") || ks->sass.by_opcode.count("FCHK"))
        g += " Division: compute 1/x once and multiply (a softmax divides by one row sum: take its reciprocal "
             "outside the loop); __fdividef or -prec-div=false drops the IEEE slow path (FCHK and a call).";
      if (has("RSQ") || has("SQRT")) g += " sqrt: use rsqrtf(x) and multiply instead of 1.0f / sqrtf(x).";
      if (has("SIN") || has("COS")) g += " sin/cos: __sinf/__cosf or sincosf once for both.";
      if (has("TANH")) g += " tanh: tanh.approx (one MUFU.TANH) already; fold the GELU-style polynomial into FMAs.";
      g += " --use_fast_math does the intrinsic swaps everywhere if the task's tolerance allows (about 2 ulp).";
      f.guidance = g;
      if (issue_bound)
        f.title = "special functions in an issue-bound kernel: XU " + std::to_string(static_cast<int>(*xu + 0.5)) +
                  "% busy with every issue slot in use (MUFU: " + mix + ")";
      else
        f.title = "special-function unit " + std::to_string(static_cast<int>(*xu + 0.5)) + "% busy (MUFU: " + mix + ")";
      f.actions = {"reduce_special_functions"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_special_functions() { return std::make_unique<SpecialFunctions>(); }

}  // namespace kp::analysis
