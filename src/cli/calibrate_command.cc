// `kernelpro calibrate`: measures this GPU's ceilings on the worker, stores them for `profile`,
// and prints each one against the datasheet.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "profile/calibration.h"

namespace kp::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// In tera-units with three digits: 4.31e12 B/s -> "4.31 TB/s", 1.979e15 OP/s -> "1979 TOP/s"; 0 -> "-".
std::string format_rate(double v, const char* unit) {
  if (v <= 0) return "-";
  const double t = v / 1e12;
  return fmt::format("{:.{}f} T{}", t, t >= 100 ? 0 : t >= 10 ? 1 : 2, unit);
}

double ratio(double measured, double sheet) { return measured > 0 && sheet > 0 ? measured / sheet : 0; }

std::string format_table(const eval::DeviceInfo& dev, const profile::Ceilings& c, const profile::Ceilings& sheet,
                         const fs::path& file, bool saved, double seconds) {
  const profile::Datasheet* product = profile::find_datasheet(dev.name);
  std::string out = fmt::format("calibrated {} (sm_{}{}, {} SMs) in {:.1f} s, SM clock {:.0f} MHz\n", c.gpu, c.cc_major,
                                c.cc_minor, c.sm_count, seconds, c.sm_clock_mhz);
  if (auto it = c.method.find("sm_clock_mhz"); it != c.method.end()) out += fmt::format("  clock     {}\n", it->second);
  out += fmt::format("  {}     {}\n", saved ? "saved" : "NOT saved", file.string());
  out += fmt::format("  datasheet {}\n\n",
                     product ? product->product : "none for this product: estimated from the architecture");
  out += fmt::format("{:<16} {:>14} {:>14} {:>6}  {}\n", "ceiling", "measured", "datasheet", "ratio", "method");
  for (const profile::CeilingField& f : profile::ceiling_fields()) {
    const double m = c.*f.member, s = sheet.*f.member;
    auto it = c.method.find(f.key);
    const double r = ratio(m, s);
    out += fmt::format("{:<16} {:>14} {:>14} {:>6}  {}\n", f.label, format_rate(m, f.unit), format_rate(s, f.unit),
                       r > 0 ? fmt::format("{:.2f}", r) : std::string("-"), it != c.method.end() ? it->second : "");
  }
  return out;
}

json to_report_json(const eval::DeviceInfo& dev, const profile::Ceilings& c, const profile::Ceilings& sheet,
                    const fs::path& file, bool saved, double seconds) {
  json ratios = json::object();
  for (const profile::CeilingField& f : profile::ceiling_fields()) {
    const double r = ratio(c.*f.member, sheet.*f.member);
    ratios[f.key] = r > 0 ? json(r) : json(nullptr);
  }
  const profile::Datasheet* product = profile::find_datasheet(dev.name);
  return {{"calibrated", true},
          {"gpu_key", profile::gpu_key(dev)},
          {"file", file.string()},
          {"saved", saved},
          {"seconds", seconds},
          {"ceilings", profile::to_json(c)},
          {"datasheet_product", product ? json(product->product) : json(nullptr)},
          {"datasheet", profile::to_json(sheet)},
          {"ratio_to_datasheet", ratios}};
}

}  // namespace

int run_calibrate(const CalibrateFlags& flags, const CommonFlags& common) {
  auto scratch = make_scratch("kernelpro-calibrate-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  eval::WorkerOptions wo;
  wo.worker_path = common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker);
  wo.scratch_dir = scratch->path();
  eval::WorkerClient worker(wo);
  auto dev = worker.device();
  if (!dev.ok()) {
    if (common.json) std::cout << json{{"calibrated", false}, {"reason", dev.error().message}}.dump(2) << "\n";
    int code = exit_for(dev.error());
    if (dev.error().code == ErrorCode::kUnavailable)
      std::fprintf(stderr,
                   "Not run: calibrate measures this GPU's memory bandwidths and arithmetic rates, and needs an NVIDIA "
                   "GPU.\nRun the same command on the machine whose GPU you profile.\n");
    return code;
  }
  if (!common.json) std::fprintf(stderr, "kernelpro: calibrating %s (a few seconds)...\n", dev->name.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  auto c = profile::calibrate(worker, flags.timeout_s,
                              flags.quick ? profile::CalibrationDepth::kQuick : profile::CalibrationDepth::kFull);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  worker.stop();
  if (!c.ok()) return exit_for(Error(c.error()).wrap(fmt::format("calibrating {}", dev->name)));

  profile::CalibrationStore store(calibration_dir(flags.store));
  Status saved = store.save(*dev, *c);
  const profile::Ceilings sheet = profile::datasheet_ceilings(*dev);
  if (common.json)
    std::cout << to_report_json(*dev, *c, sheet, store.path_for(*dev), saved.ok(), seconds).dump(2) << "\n";
  else
    std::cout << format_table(*dev, *c, sheet, store.path_for(*dev), saved.ok(), seconds);
  if (!saved.ok()) return exit_for(saved.error());
  return kExitOk;
}

}  // namespace kp::cli
