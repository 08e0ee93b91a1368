// The "calibrate" op: runs the microbenchmarks (calibrate.cu) and writes the reply.
#include "worker/calibrate.h"

#include "util/strings.h"

#include <ctime>
#include <memory>

#include <nlohmann/json.hpp>

#include "verdict/protocol.h"
#include "judge/nvml_energy.h"

namespace kp::worker {

using judge::Nvml;

nlohmann::json calibrate_reply(const nlohmann::json& request, const eval::DeviceInfo& device) {
  nlohmann::json reply = {{"id", request.value("id", 0)}};
  CalibrateOptions options;
  options.depth = request.value("quick", false) ? CalibrationDepth::kQuick : CalibrationDepth::kFull;
  std::shared_ptr<Nvml> nvml;
  if (auto n = Nvml::open(device.pci_bus_id); n.ok()) nvml = std::shared_ptr<Nvml>(std::move(*n));
  if (nvml) options.read_sm_clock_mhz = [nvml] { return nvml->sm_clock_mhz(); };
  auto cal = run_calibration(options);
  if (!cal.ok()) {
    reply["ok"] = false;
    reply["error"] = cal.error().message;
    reply["exiting"] = true;
    return reply;
  }
  // The JSON of profile::Ceilings (profile/calibration.h reads it back).
  nlohmann::json c = {{"gpu", device.name},
                      {"cc_major", device.cc_major},
                      {"cc_minor", device.cc_minor},
                      {"sm_count", device.sm_count},
                      {"source", "calibrated"},
                      {"measured_at", kp::utc_now_iso8601()},
                      {"sm_clock_mhz", cal->sm_clock_mhz}};
  nlohmann::json method = {{"sm_clock_mhz", cal->sm_clock_method}};
  for (const auto& [name, figure] : cal->figures) {
    c[name] = figure.value;
    method[name] = figure.method;
  }
  c["method"] = method;
  reply["ok"] = true;
  reply["ceilings"] = c;
  reply["seconds"] = cal->seconds;
  reply["exiting"] = false;
  return reply;
}

}  // namespace kp::worker
