// launch_overhead: a call made of many short kernels with the device idle between them: the
// launch latency (2-5 us per launch, profiling.md section 5) and the ramp of each small grid
// cost more than the work.
//
// Fires on the traced call (Evidence::trace) when it launched at least two kernels, the median
// kernel is shorter than kShortKernelSeconds (10 us, the roofline's launch-bound threshold),
// and the device sat idle for >= kIdleShare (30%) of the call: idle = 1 - busy_s / call_seconds
// when the timed call is known, else gaps_s / span_s. At 30% idle the gaps are already a third
// of the time (the roofline calls the call launch-bound from 50%). Without idle time, many
// launches (>= kManyLaunches API calls) of short kernels are still reported, as info: graph
// replay may hide the gaps but not the per-kernel ramp and drain.
// Severity critical when the roofline class is launch-bound, else warning (info for the
// many-launches case). Estimated gain: call / busy, what removing every gap would give.
//
// Worked example: 40 kernels of 3 us, timed at 330 us per call: busy 120 us, idle
// 1 - 120 / 330 = 64% >= 30%, median 3 us < 10 us: critical (launch-bound), gain 2.75x.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kIdleShare = 0.3;
constexpr double kManyLaunches = 32;

class LaunchOverhead final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "launch_overhead",
        "Launch overhead",
        "Many short kernels with the GPU idle between them: fuse them or capture the call in a CUDA graph.",
        {},
        {},
        false,
        true};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    if (!e.trace) return {};
    const profile::TraceCall& t = *e.trace;
    const size_t n = t.kernels.size();
    if (n < 2 || t.busy_s <= 0) return {};
    std::vector<double> d;
    for (const auto& k : t.kernels) d.push_back(k.duration_s());
    std::sort(d.begin(), d.end());
    const double median = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    if (median >= kShortKernelSeconds) return {};

    double idle = 0, call = 0;
    std::string idle_name;
    if (e.call_seconds > 0) {
      call = e.call_seconds;
      idle = std::max(0.0, 1 - t.busy_s / call);
      idle_name = "1 - traced busy / timed call";
    } else if (t.span_s > 0) {
      call = t.span_s;
      idle = t.gaps_s / t.span_s;
      idle_name = "traced gaps / span";
    } else {
      return {};
    }

    Finding f;
    f.tool = spec().name;
    f.severity = Severity::kWarning;
    const bool launch_bound = e.roofline && e.roofline->cls == BottleneckClass::kLaunchBound;
    if (idle >= kIdleShare) {
      f.evidence.push_back(evidence("device idle share (" + idle_name + ")", idle, ">=", kIdleShare));
      f.estimated_gain = std::max(1.0, call / t.busy_s);
      if (launch_bound) f.severity = Severity::kCritical;
    } else if (static_cast<double>(t.launch_api_calls) >= kManyLaunches) {
      f.evidence.push_back(evidence("kernel launch API calls", static_cast<double>(t.launch_api_calls), ">=",
                                    kManyLaunches));
      f.evidence.push_back(context("device idle share (" + idle_name + ")", idle));
      f.severity = Severity::kInfo;
    } else {
      return {};
    }
    f.evidence.push_back(evidence("median kernel duration", median, "<", kShortKernelSeconds, "s"));
    f.evidence.push_back(context("kernels in the call", static_cast<double>(n)));
    f.evidence.push_back(context("launch API calls", static_cast<double>(t.launch_api_calls)));
    f.evidence.push_back(context("device busy", t.busy_s, "s"));
    f.evidence.push_back(context(e.call_seconds > 0 ? "timed call" : "traced span", call, "s"));
    char title[160];
    std::snprintf(title, sizeof title, "%zu short kernels (median %.1f us), device idle %.0f%% of the call", n,
                  median * 1e6, 100 * idle);
    f.title = title;
    f.guidance =
        "Launch fewer, bigger kernels: fuse consecutive element-wise or reduction passes into one "
        "kernel that keeps intermediates in registers or shared memory (one pass over the data instead "
        "of several); batch repeated small launches into one grid over all of them, or a persistent "
        "kernel that loops over the work items. Where the sequence must stay, capture it once in a CUDA "
        "graph (stream capture, cudaGraphLaunch) so the launches cost about 1 us less each and leave no "
        "host gaps; avoid host synchronisation (cudaDeviceSynchronize, blocking copies) between launches.";
    f.actions = {"fewer_launches", "fuse"};
    return {f};
  }
};

}  // namespace

std::unique_ptr<Tool> make_launch_overhead() { return std::make_unique<LaunchOverhead>(); }

}  // namespace kp::analysis
