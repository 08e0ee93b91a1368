// host_device_copies: copies inside the timed call. Host-device memcpys (HtoD, DtoH, HtoH,
// PtoP) move data over PCIe/NVLink-C2C at tens of GB/s instead of the 4.3 TB/s of HBM, and a
// blocking one synchronises the host; device-to-device copies usually mean a buffer copied
// instead of computed in place (or written directly by the kernel that produced it).
//
// Fires on the traced call (Evidence::trace, TraceCopy with kind "memcpy"):
//   - any host-side memcpy: critical when its time is >= kCriticalShare (50%) of the call,
//     warning when >= kWarnShare (5%), else info (even a small DtoH forces a round trip);
//   - DtoD memcpys taking >= kWarnShare of the call: warning.
// Memsets are not reported: a small cudaMemsetAsync to zero an accumulator is normal.
// The call's time is call_seconds when known, else the trace's span_s. Estimated gain:
// call / (call - copy time), removing the copies and nothing else (copies that overlap kernels
// on another stream would give less; at least 1). The trace has no cudaMalloc records; an
// allocation inside the call shows only as idle time (launch_overhead).
//
// Worked example: a call of 1.2 ms that copies 64 MiB HtoD in 1.0 ms (~67 GB/s) before a 0.2 ms
// kernel: share 83% >= 50%: critical, gain 1.2 / 0.2 = 6x.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kWarnShare = 0.05;
constexpr double kCriticalShare = 0.5;

class HostDeviceCopies final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "host_device_copies",
        "Copies inside the call",
        "Host-device memcpys (or large device-to-device copies) inside the timed call: move them out, or "
        "compute in place.",
        {},
        {},
        false,
        true};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    if (!e.trace) return {};
    const double call = e.call_seconds > 0 ? e.call_seconds : e.trace->span_s;
    if (call <= 0) return {};
    struct Sum {
      double seconds = 0;
      double bytes = 0;
      int count = 0;
      std::vector<std::string> directions;
    };
    Sum host, device;
    for (const auto& c : e.trace->copies) {
      if (c.kind != "memcpy") continue;
      Sum& s = c.direction == "DtoD" ? device : host;
      s.seconds += static_cast<double>(c.end_ns - c.start_ns) * 1e-9;
      s.bytes += static_cast<double>(c.bytes);
      ++s.count;
      if (std::find(s.directions.begin(), s.directions.end(), c.direction) == s.directions.end())
        s.directions.push_back(c.direction);
    }
    auto gain = [&](double seconds) { return seconds < call ? call / (call - seconds) : 1.0; };
    auto join = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& s : v) out += (out.empty() ? "" : "/") + s;
      return out;
    };
    std::vector<Finding> out;
    if (host.count > 0) {
      const double share = host.seconds / call;
      Finding f;
      f.tool = spec().name;
      f.severity = share >= kCriticalShare ? Severity::kCritical
                   : share >= kWarnShare   ? Severity::kWarning
                                           : Severity::kInfo;
      f.estimated_gain = gain(host.seconds);
      f.evidence.push_back(evidence("host-device memcpys in the call", host.count, ">", 0));
      f.evidence.push_back(share >= kWarnShare
                               ? evidence("memcpy time / call", share, ">=", share >= kCriticalShare ? kCriticalShare : kWarnShare)
                               : context("memcpy time / call", share));
      f.evidence.push_back(context("memcpy bytes", host.bytes, "B"));
      f.evidence.push_back(context("memcpy time", host.seconds, "s"));
      char title[200];
      std::snprintf(title, sizeof title, "%d %s memcpy%s inside the call (%.3g B, %.0f%% of its time)", host.count,
                    join(host.directions).c_str(), host.count == 1 ? "" : "s", host.bytes, 100 * share);
      f.title = title;
      f.guidance =
          "Keep host transfers out of the timed call: the inputs are already on the device, so read them "
          "there; allocate scratch buffers once outside (no cudaMalloc/cudaFree or staging through host "
          "memory per call); return results in the output tensor instead of copying to the host. A "
          "scalar read back (a count, a max) can stay on the device and feed the next kernel directly.";
      f.actions = {"remove_copies"};
      out.push_back(std::move(f));
    }
    const double dshare = device.seconds / call;
    if (device.count > 0 && dshare >= kWarnShare) {
      Finding f;
      f.tool = spec().name;
      f.severity = Severity::kWarning;
      f.estimated_gain = gain(device.seconds);
      f.evidence.push_back(evidence("device-to-device memcpy time / call", dshare, ">=", kWarnShare));
      f.evidence.push_back(context("DtoD memcpys", device.count));
      f.evidence.push_back(context("DtoD bytes", device.bytes, "B"));
      char title[160];
      std::snprintf(title, sizeof title, "%d device-to-device copies take %.0f%% of the call (%.3g B)", device.count,
                    100 * dshare, device.bytes);
      f.title = title;
      f.guidance =
          "A device-to-device copy is a full read and write of the buffer for no arithmetic: have the kernel "
          "that produces the data write it straight to its final place, compute in place, or pass the "
          "pointer instead of a copy.";
      f.actions = {"remove_copies"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_host_device_copies() { return std::make_unique<HostDeviceCopies>(); }

}  // namespace kp::analysis
