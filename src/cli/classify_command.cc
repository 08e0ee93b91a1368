// `kernelpro classify NCU_RAW.csv`: the roofline class of every kernel in an Nsight Compute
// table a user already has (`ncu --csv --page raw --print-units base ...`, e.g. --set full or
// kernelpro's stage-1 list), beside ncu's own SOLBottleneck verdict. No GPU needed: the device
// is read from the table's device__attribute_* columns and its ceilings from the calibration
// store (or the datasheet, with a warning).
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/roofline.h"
#include "cli/cli_support.h"
#include "cli/commands.h"
#include "profile/calibration.h"
#include "profile/ncu/ncu_csv.h"
#include "util/strings.h"

namespace kp::cli {

namespace {

// The GPU an ncu table was taken on, from its device__attribute_* columns.
eval::DeviceInfo device_of(const profile::KernelMetrics& k) {
  eval::DeviceInfo d;
  if (auto it = k.text.find("device__attribute_display_name"); it != k.text.end()) d.name = it->second;
  d.cc_major = static_cast<int>(k.get_or("device__attribute_compute_capability_major", 0));
  d.cc_minor = static_cast<int>(k.get_or("device__attribute_compute_capability_minor", 0));
  d.sm_count = static_cast<int>(k.get_or("device__attribute_multiprocessor_count", 0));
  d.memory_bytes = static_cast<int64_t>(k.get_or("device__attribute_total_memory", 0));
  d.l2_bytes = static_cast<int64_t>(k.get_or("device__attribute_l2_cache_size", 0));
  d.sm_clock_khz = static_cast<int>(k.get_or("device__attribute_clock_rate", 0));
  return d;
}

}  // namespace

int run_classify(const ClassifyFlags& flags, const CommonFlags& common) {
  auto text = read_file(flags.csv);
  if (!text.ok()) return exit_for(make_error(ErrorCode::kNotFound, fmt::format("{}: cannot read it", flags.csv)));
  auto kernels = profile::parse_ncu_raw_csv(*text);
  if (!kernels.ok())  // a file the user named that is not an ncu table is bad input
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("{}: not an ncu raw table ({}); write one with ncu --csv --page raw "
                                           "--print-units base",
                                           flags.csv, kernels.error().message)));
  if (kernels->empty())
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("{} holds no profiled kernel; write it with ncu --csv --page raw --print-units base",
                                           flags.csv)));
  eval::DeviceInfo dev = device_of(kernels->front());
  if (!flags.gpu.empty()) dev.name = flags.gpu;
  if (dev.name.empty())
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("{} does not say which GPU it was taken on (no device__attribute_display_name "
                                           "column); name it with --gpu \"NVIDIA H200\"",
                                           flags.csv)));
  std::string warning;
  profile::CalibrationStore store(calibration_dir(flags.calibration_dir));
  profile::Ceilings ceilings = profile::resolve_ceilings(store, dev, &warning);
  nlohmann::json out = nlohmann::json::array();
  if (!common.json) {
    std::printf("%s: %zu kernels on %s; ceilings: %s%s\n", flags.csv.c_str(), kernels->size(), dev.name.c_str(),
                profile::to_string(ceilings.source), warning.empty() ? "" : (" (" + warning + ")").c_str());
    std::printf("%-4s %-34s %-14s %-14s %7s  %-16s %s\n", "id", "kernel", "class", "limiter", "SOL", "ncu rule", "");
  }
  for (const auto& k : *kernels) {
    analysis::RooflineInput in;
    in.kernels = {k};
    in.ceilings = ceilings;
    analysis::RooflineResult r = analysis::classify(in);
    if (common.json) {
      nlohmann::json j = analysis::to_json(r);
      j["kernel"] = k.name;
      j["id"] = k.launch_index;
      out.push_back(std::move(j));
      continue;
    }
    std::string name = k.name.substr(0, k.name.find('('));
    if (name.size() > 34) name = name.substr(0, 31) + "...";
    std::printf("%-4lld %-34s %-14s %-14s %6.1f%%  %-16s %s\n", static_cast<long long>(k.launch_index), name.c_str(),
                analysis::to_string(r.cls), r.limiter.c_str(), r.sol_fraction * 100, r.ncu_rule.verdict.c_str(),
                r.agrees_with_ncu ? "agrees" : ("differs: " + r.disagreement).c_str());
    for (const auto& e : r.evidence) std::printf("       - %s\n", e.c_str());
  }
  if (common.json) std::cout << out.dump(2) << "\n";
  return kExitOk;
}

}  // namespace kp::cli
