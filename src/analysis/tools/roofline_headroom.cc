// roofline_headroom: where the call sits on the roofline (Evidence::roofline, analysis/roofline.h)
// and how far it is from the roof that stops it. Always runs and always reports, once per call,
// when the classifier measured something: the class, the limiting roof, the fraction of
// speed-of-light reached and the headroom (how many times faster the call could run before that
// roof stops it; for launch-bound, the call time over the kernels' busy time).
//
// Severity by headroom: >= kCriticalHeadroom (4x: the call uses a quarter of its roof or less,
// the main thing to fix) critical; >= kWarningHeadroom (1.5x: below 67% of the roof, under ncu's
// 60-80% "good throughput" band) warning; else info (within reach of the roof: only algorithmic
// changes, fewer bytes or FLOP, give more). estimated_gain is the headroom itself: by the
// definition of a roof, no change that keeps the work and traffic can gain more.
//
// Action tags follow the class: memory-bound -> reuse_data, fuse (move fewer bytes);
// compute-bound on a CUDA-core FP roof (FP32, FP16, FP64) -> use_tensor_cores; compute-bound on
// a tensor roof or on ncu's SM% -> none (the arithmetic is already where it belongs);
// latency-bound -> increase_occupancy, increase_ilp; launch-bound -> fewer_launches.
//
// Worked example, the transpose seed on the H200 (bench/results/h200-2026-12-03-profile/run2):
// memory-bound, limiter "memory (ncu Mem%)", sol 0.819 -> headroom 1 / 0.819 = 1.22x < 1.5:
// info, gain 1.22. The naive FP32 GEMM of the same run: compute roofs far below their ceilings
// and Mem% 93%: memory-bound at 0.933, headroom 1.07x: info (its real problem is the missing
// tensor cores and reuse, which other tools report). A latency-bound kernel at 12% of DRAM:
// headroom 8.3x >= 4: critical.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kCriticalHeadroom = 4;
constexpr double kWarningHeadroom = 1.5;

bool is_cuda_core_fp(const std::string& roof) { return roof == "FP32" || roof == "FP16" || roof == "FP64"; }

class RooflineHeadroom final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "roofline_headroom",
        "Roofline position and headroom",
        "The bottleneck class, the limiting roof, the fraction of speed-of-light reached and how "
        "many times faster the call could run before that roof stops it.",
        {},
        {},
        false,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    if (!e.roofline) return {};
    const RooflineResult& r = *e.roofline;
    if (r.limiter.empty() || r.headroom <= 0) return {};  // nothing was measured

    Finding f;
    f.tool = spec().name;
    f.estimated_gain = std::max(1.0, r.headroom);
    const bool launch = r.cls == BottleneckClass::kLaunchBound;
    const char* what = launch ? "call time / kernel busy time" : "headroom to the limiting roof";
    if (r.headroom >= kCriticalHeadroom) {
      f.severity = Severity::kCritical;
      f.evidence.push_back(evidence(what, r.headroom, ">=", kCriticalHeadroom, "x"));
    } else if (r.headroom >= kWarningHeadroom) {
      f.severity = Severity::kWarning;
      f.evidence.push_back(evidence(what, r.headroom, ">=", kWarningHeadroom, "x"));
    } else {
      f.severity = Severity::kInfo;
      f.evidence.push_back(evidence(what, r.headroom, "<", kWarningHeadroom, "x"));
    }
    f.evidence.push_back(context("fraction of speed-of-light (" + r.limiter + ")", r.sol_fraction));
    if (launch) f.evidence.push_back(context("device idle share of the call", r.idle_fraction));
    if (r.arithmetic_intensity > 0) f.evidence.push_back(context("arithmetic intensity", r.arithmetic_intensity, "FLOP/B"));
    if (r.ridge_intensity > 0)
      f.evidence.push_back(context("ridge intensity (" + r.ridge_roof + ")", r.ridge_intensity, "FLOP/B"));
    f.evidence.push_back(context("kernels in the call", r.kernel_count));

    char title[200];
    std::snprintf(title, sizeof title, "%s: %s at %.0f%% of its roof, %.2fx headroom", to_string(r.cls),
                  r.limiter.c_str(), 100 * r.sol_fraction, r.headroom);
    f.title = title;

    switch (r.cls) {
      case BottleneckClass::kMemoryBound:
        f.guidance =
            "The call is limited by memory traffic (" + r.limiter +
            "). It only gets faster by moving fewer bytes: keep reused data in shared memory or "
            "registers instead of reloading it, fuse neighbouring passes so intermediates never "
            "reach DRAM, and make every byte fetched count (coalesced, wide accesses).";
        f.actions = {"reuse_data", "fuse"};
        break;
      case BottleneckClass::kComputeBound:
        if (is_cuda_core_fp(r.limiter)) {
          f.guidance = "The call is limited by " + r.limiter +
                       " arithmetic on the CUDA cores. If that work is matrix-shaped (products, "
                       "convolutions, attention), move it to tensor cores (mma.sync or wgmma), "
                       "several times the CUDA-core rate; otherwise remove redundant arithmetic.";
          f.actions = {"use_tensor_cores"};
        } else {
          f.guidance = "The call is limited by " + r.limiter +
                       ". The arithmetic already runs on the unit that suits it; what is left is "
                       "to do less of it (redundant work, a cheaper algorithm) or to keep that "
                       "unit busier (deeper pipelining of its operands).";
        }
        break;
      case BottleneckClass::kLatencyBound:
        f.guidance =
            "No unit is near its ceiling: warps wait on latency. Keep more independent work in "
            "flight: more resident warps (fewer registers or less shared memory per block), and "
            "more independent loads and accumulators per thread (unroll, several elements per "
            "thread).";
        f.actions = {"increase_occupancy", "increase_ilp"};
        break;
      case BottleneckClass::kLaunchBound:
        f.guidance =
            "The GPU sits idle between short kernels: launch overhead dominates. Launch fewer, "
            "larger kernels: fuse the steps, batch the work, or capture the sequence in a CUDA "
            "graph.";
        f.actions = {"fewer_launches"};
        break;
    }
    return {std::move(f)};
  }
};

}  // namespace

std::unique_ptr<Tool> make_roofline_headroom() { return std::make_unique<RooflineHeadroom>(); }

}  // namespace kp::analysis
