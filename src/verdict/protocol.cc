#include "verdict/protocol.h"

#include <fmt/format.h>

namespace kp::eval {

using nlohmann::json;

json to_json(const task::Task& t) {
  if (t.kind == task::TaskKind::kKernelBench)
    return {{"kind", "kernelbench"}, {"name", t.name}, {"problem", t.reference_path.string()}, {"level", t.level},
            {"problem_id", t.problem_id}};
  auto tensor = [](const task::TensorSpec& s, bool input) {
    json j = {{"name", s.name}, {"dtype", task::to_string(s.dtype)}, {"shape", s.shape}};
    if (input) j["init"] = {{"dist", task::to_string(s.init.kind)}, {"a", s.init.a}, {"b", s.init.b}};
    return j;
  };
  json j = {{"name", t.name}, {"inputs", json::array()}, {"outputs", json::array()}, {"scalars", json::array()},
            {"tolerances", json::array()}};
  for (const auto& s : t.inputs) j["inputs"].push_back(tensor(s, true));
  for (size_t i = 0; i < t.outputs.size(); ++i) {
    j["outputs"].push_back(tensor(t.outputs[i], false));
    auto tol = t.tolerance_for(i);
    j["tolerances"].push_back({{"atol", tol.atol}, {"rtol", tol.rtol}, {"rel_norm", tol.rel_norm}});
  }
  for (const auto& s : t.scalars)
    j["scalars"].push_back({{"name", s.name}, {"is_integer", s.is_integer}, {"f", s.f}, {"i", s.i}});
  j["ideal_flops"] = t.ideal_flops;
  j["ideal_bytes"] = t.ideal_bytes;
  return j;
}

Result<task::Task> task_from_json(const json& j) {
  try {
    task::Task t;
    t.name = j.at("name").get<std::string>();
    if (j.value("kind", std::string("native")) == "kernelbench") {
      t.kind = task::TaskKind::kKernelBench;
      t.reference_path = j.at("problem").get<std::string>();
      t.dir = t.reference_path.parent_path();
      t.level = j.value("level", 0);
      t.problem_id = j.value("problem_id", 0);
      if (t.level > 0) t.category = fmt::format("level{}", t.level);
      return t;
    }
    auto tensor = [](const json& e, bool input) -> Result<task::TensorSpec> {
      task::TensorSpec s;
      s.name = e.at("name").get<std::string>();
      auto dt = task::dtype_from_string(e.at("dtype").get<std::string>());
      if (!dt) return make_error(ErrorCode::kProtocol, "unknown dtype in task message");
      s.dtype = *dt;
      s.shape = e.at("shape").get<std::vector<int64_t>>();
      if (input) {
        auto k = task::dist_kind_from_string(e.at("init").at("dist").get<std::string>());
        if (!k) return make_error(ErrorCode::kProtocol, "unknown distribution in task message");
        s.init = {*k, e["init"].at("a").get<double>(), e["init"].at("b").get<double>()};
      }
      return s;
    };
    for (const auto& e : j.at("inputs")) {
      KP_TRY(auto s, tensor(e, true));
      t.inputs.push_back(s);
    }
    for (const auto& e : j.at("outputs")) {
      KP_TRY(auto s, tensor(e, false));
      t.outputs.push_back(s);
    }
    for (const auto& e : j.at("scalars"))
      t.scalars.push_back({e.at("name").get<std::string>(), e.at("is_integer").get<bool>(), e.at("f").get<double>(),
                           e.at("i").get<int64_t>()});
    // The message carries the resolved tolerance of each output. When they differ they are the
    // per-dtype defaults, which tolerance_for() recomputes; when equal, keep them as an override.
    const auto& tols = j.at("tolerances");
    bool all_equal = !tols.empty();
    for (const auto& e : tols) all_equal = all_equal && e == tols[0];
    if (all_equal) {
      t.tolerance = task::Tolerance{tols[0].at("atol").get<double>(), tols[0].at("rtol").get<double>(),
                                    tols[0].at("rel_norm").get<double>()};
    }
    t.ideal_flops = j.value("ideal_flops", 0.0);
    t.ideal_bytes = j.value("ideal_bytes", 0.0);
    return t;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kProtocol, fmt::format("malformed task message: {}", e.what()));
  }
}

json to_json(const EvalOptions& o) {
  json j = {{"correctness_trials", o.correctness_trials}, {"warmup_calls", o.warmup_calls},
            {"timing_budget_s", o.timing_budget_s},       {"timing_cap_s", o.timing_cap_s},
            {"min_trials", o.min_trials},
            {"max_trials", o.max_trials},                 {"median_ci", o.median_ci},
            {"time_reference", o.time_reference},         {"reference_only", o.reference_only},
            {"input_sets", o.input_sets},
            {"graph_threshold_us", o.graph_threshold_us}, {"graph_calls", o.graph_calls},
            {"wall_ratio", o.wall_ratio},                 {"wall_slack_us", o.wall_slack_us},
            {"energy_window_s", o.energy_window_s},       {"idle_window_s", o.idle_window_s},
            {"timeout_s", o.timeout_s},                   {"physics_margin", o.physics_margin},
            {"precision_policy", o.precision_policy},     {"strict_kernels", o.strict_kernels},
            {"library_only_ok", o.library_only_ok},       {"precision", o.precision}};
  if (o.seed) j["seed"] = *o.seed;
  return j;
}

EvalOptions eval_options_from_json(const json& j) {
  EvalOptions o;
  o.correctness_trials = j.value("correctness_trials", o.correctness_trials);
  o.warmup_calls = j.value("warmup_calls", o.warmup_calls);
  o.timing_budget_s = j.value("timing_budget_s", o.timing_budget_s);
  o.timing_cap_s = j.value("timing_cap_s", o.timing_cap_s);
  o.min_trials = j.value("min_trials", o.min_trials);
  o.max_trials = j.value("max_trials", o.max_trials);
  o.median_ci = j.value("median_ci", o.median_ci);
  o.time_reference = j.value("time_reference", o.time_reference);
  o.reference_only = j.value("reference_only", o.reference_only);
  o.input_sets = j.value("input_sets", o.input_sets);
  o.graph_threshold_us = j.value("graph_threshold_us", o.graph_threshold_us);
  o.graph_calls = j.value("graph_calls", o.graph_calls);
  o.wall_ratio = j.value("wall_ratio", o.wall_ratio);
  o.wall_slack_us = j.value("wall_slack_us", o.wall_slack_us);
  o.energy_window_s = j.value("energy_window_s", o.energy_window_s);
  o.idle_window_s = j.value("idle_window_s", o.idle_window_s);
  o.timeout_s = j.value("timeout_s", o.timeout_s);
  o.physics_margin = j.value("physics_margin", o.physics_margin);
  o.precision_policy = j.value("precision_policy", o.precision_policy);
  o.strict_kernels = j.value("strict_kernels", o.strict_kernels);
  o.library_only_ok = j.value("library_only_ok", o.library_only_ok);
  o.precision = j.value("precision", o.precision);
  if (j.contains("seed")) o.seed = j["seed"].get<uint64_t>();
  return o;
}

json to_json(const DeviceInfo& d) {
  return {{"name", d.name},       {"cc_major", d.cc_major},   {"cc_minor", d.cc_minor},
          {"sm_count", d.sm_count}, {"l2_bytes", d.l2_bytes}, {"memory_bytes", d.memory_bytes},
          {"driver_version", d.driver_version}, {"runtime_version", d.runtime_version},
          {"pci_bus_id", d.pci_bus_id}, {"nvml", d.nvml}, {"nvml_error", d.nvml_error},
          {"dram_bytes_per_s", d.dram_bytes_per_s}, {"sm_clock_khz", d.sm_clock_khz}};
}

DeviceInfo device_info_from_json(const json& j) {
  DeviceInfo d;
  d.name = j.value("name", "");
  d.cc_major = j.value("cc_major", 0);
  d.cc_minor = j.value("cc_minor", 0);
  d.sm_count = j.value("sm_count", 0);
  d.l2_bytes = j.value("l2_bytes", int64_t{0});
  d.memory_bytes = j.value("memory_bytes", int64_t{0});
  d.driver_version = j.value("driver_version", 0);
  d.runtime_version = j.value("runtime_version", 0);
  d.pci_bus_id = j.value("pci_bus_id", "");
  d.nvml = j.value("nvml", false);
  d.nvml_error = j.value("nvml_error", "");
  d.dram_bytes_per_s = j.value("dram_bytes_per_s", 0.0);
  d.sm_clock_khz = j.value("sm_clock_khz", 0);
  return d;
}

json to_json(const OutputCheck& c) {
  return {{"passed", c.passed},
          {"reason", c.reason},
          {"elements", c.elements},
          {"mismatches", c.mismatches},
          {"unwritten", c.unwritten},
          {"nonfinite", c.nonfinite},
          {"reference_nonfinite", c.reference_nonfinite},
          {"first_bad_index", c.first_bad_index},
          {"max_abs_error", c.max_abs_error},
          {"max_rel_error", c.max_rel_error},
          {"rel_norm_error", c.rel_norm_error},
          {"constant_output", c.constant_output}};
}

OutputCheck output_check_from_json(const json& j) {
  OutputCheck c;
  c.passed = j.value("passed", false);
  c.reason = j.value("reason", "");
  c.elements = j.value("elements", int64_t{0});
  c.mismatches = j.value("mismatches", int64_t{0});
  c.unwritten = j.value("unwritten", int64_t{0});
  c.nonfinite = j.value("nonfinite", int64_t{0});
  c.reference_nonfinite = j.value("reference_nonfinite", int64_t{0});
  c.first_bad_index = j.value("first_bad_index", int64_t{-1});
  c.max_abs_error = j.value("max_abs_error", 0.0);
  c.max_rel_error = j.value("max_rel_error", 0.0);
  c.rel_norm_error = j.value("rel_norm_error", 0.0);
  c.constant_output = j.value("constant_output", false);
  return c;
}

json to_json(const TimingReport& t) {
  return {{"method", t.method},
          {"samples_s", t.samples_s},
          {"wall_s", t.wall_s},
          {"warmup_calls", t.warmup_calls},
          {"input_sets", t.input_sets},
          {"l2_flush_bytes", t.l2_flush_bytes},
          {"stop", t.stop},
          {"median_ci_rel", t.median_ci_rel},
          {"loop_wall_s", t.loop_wall_s}};
}

TimingReport timing_report_from_json(const json& t) {
  TimingReport tr;
  tr.method = t.at("method").get<std::string>();
  tr.samples_s = t.at("samples_s").get<std::vector<double>>();
  tr.wall_s = t.value("wall_s", std::vector<double>{});
  tr.warmup_calls = t.value("warmup_calls", 0);
  tr.input_sets = t.value("input_sets", 0);
  tr.l2_flush_bytes = t.value("l2_flush_bytes", int64_t{0});
  tr.stop = t.value("stop", "");
  tr.median_ci_rel = t.value("median_ci_rel", 0.0);
  tr.loop_wall_s = t.value("loop_wall_s", 0.0);
  return tr;
}

json to_json(const WorkerReport& r) {
  json j = {{"outcome", to_string(r.outcome)}, {"reason", r.reason},       {"trials_run", r.trials_run},
            {"checks", json::array()},         {"output_names", r.output_names}, {"mutated_input", r.mutated_input}, {"reference_failed", r.reference_failed},
            {"reference_seconds", r.reference_seconds}, {"seed", r.seed}, {"phase_seconds", r.phase_seconds}};
  for (const auto& c : r.checks) j["checks"].push_back(to_json(c));
  j["cheat"] = r.cheat;
  if (!r.reference_note.empty()) j["reference_note"] = r.reference_note;
  j["physics_floor_s"] = r.physics_floor_s;
  j["physics_floor_basis"] = r.physics_floor_basis;
  j["io_bytes"] = r.io_bytes;
  j["kernels"] = r.kernels;
  if (r.timing) j["timing"] = to_json(*r.timing);
  if (r.reference_timing) j["reference_timing"] = to_json(*r.reference_timing);
  if (r.energy) j["energy"] = to_json(*r.energy);
  return j;
}

EnergyReport energy_report_from_json(const json& e) {
  EnergyReport er;
  er.measured = e.value("measured", false);
  er.unavailable_reason = e.value("unavailable_reason", "");
  er.joules_per_call = e.value("joules_per_call", 0.0);
  er.dynamic_joules_per_call = e.value("dynamic_joules_per_call", 0.0);
  er.average_watts = e.value("average_watts", 0.0);
  er.idle_watts = e.value("idle_watts", 0.0);
  er.window_s = e.value("window_s", 0.0);
  er.calls = e.value("calls", int64_t{0});
  er.checked_calls = e.value("checked_calls", 0);
  er.sm_clock_mhz = e.value("sm_clock_mhz", 0u);
  er.temperature_c = e.value("temperature_c", 0u);
  return er;
}

json to_json(const EnergyReport& e) {
  return {{"measured", e.measured},
          {"unavailable_reason", e.unavailable_reason},
          {"joules_per_call", e.joules_per_call},
          {"dynamic_joules_per_call", e.dynamic_joules_per_call},
          {"average_watts", e.average_watts},
          {"idle_watts", e.idle_watts},
          {"window_s", e.window_s},
          {"calls", e.calls},
          {"checked_calls", e.checked_calls},
          {"sm_clock_mhz", e.sm_clock_mhz},
          {"temperature_c", e.temperature_c}};
}

Result<WorkerReport> worker_report_from_json(const json& j) {
  try {
    WorkerReport r;
    auto outcome = outcome_from_string(j.at("outcome").get<std::string>());
    if (!outcome) return make_error(ErrorCode::kProtocol, "worker report: unknown outcome " + j.at("outcome").dump());
    r.outcome = *outcome;
    r.reason = j.value("reason", "");
    r.trials_run = j.value("trials_run", 0);
    for (const auto& c : j.value("checks", json::array())) r.checks.push_back(output_check_from_json(c));
    r.output_names = j.value("output_names", std::vector<std::string>{});
    r.mutated_input = j.value("mutated_input", "");
    r.reference_failed = j.value("reference_failed", false);
    r.reference_seconds = j.value("reference_seconds", 0.0);
    r.reference_note = j.value("reference_note", "");
    r.seed = j.value("seed", uint64_t{0});
    r.phase_seconds = j.value("phase_seconds", std::map<std::string, double>{});
    r.cheat = j.value("cheat", "");
    r.physics_floor_s = j.value("physics_floor_s", 0.0);
    r.physics_floor_basis = j.value("physics_floor_basis", "");
    r.io_bytes = j.value("io_bytes", 0.0);
    r.kernels = j.value("kernels", std::vector<std::string>{});
    if (j.contains("timing")) r.timing = timing_report_from_json(j["timing"]);
    if (j.contains("reference_timing")) r.reference_timing = timing_report_from_json(j["reference_timing"]);
    if (j.contains("energy")) r.energy = energy_report_from_json(j["energy"]);
    return r;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kProtocol, fmt::format("malformed worker report: {}", e.what()));
  }
}

json to_json(const BaselineModeResult& m) {
  if (!m.ok) return {{"ok", false}, {"error", m.error}};
  return {{"ok", true},           {"mean_ms", m.mean_ms},       {"std_ms", m.std_ms},
          {"min_ms", m.min_ms},   {"max_ms", m.max_ms},         {"median_ms", m.median_ms},
          {"num_trials", m.num_trials}, {"warmup_s", m.warmup_s}};
}

Result<BaselineModeResult> baseline_mode_result_from_json(const json& j) {
  try {
    BaselineModeResult m;
    m.ok = j.at("ok").get<bool>();
    if (!m.ok) {
      m.error = j.value("error", std::string("the worker gave no reason"));
      return m;
    }
    m.mean_ms = j.at("mean_ms").get<double>();
    m.std_ms = j.value("std_ms", 0.0);
    m.min_ms = j.value("min_ms", m.mean_ms);
    m.max_ms = j.value("max_ms", m.mean_ms);
    m.median_ms = j.value("median_ms", m.mean_ms);
    m.num_trials = j.value("num_trials", 0);
    m.warmup_s = j.value("warmup_s", 0.0);
    return m;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kProtocol, fmt::format("malformed baseline result: {}", e.what()));
  }
}

Result<BaselineReply> baseline_reply_from_json(const json& j) {
  try {
    BaselineReply r;
    r.hardware = j.value("hardware", "");
    r.device = j.value("device", "");
    r.torch_version = j.value("torch_version", "");
    for (const auto& [mode, v] : j.at("results").items()) {
      auto m = baseline_mode_result_from_json(v);
      if (!m.ok()) return std::move(m).error().wrap(fmt::format("mode {}", mode));
      r.results[mode] = *m;
    }
    return r;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kProtocol, fmt::format("malformed baseline reply: {}", e.what()));
  }
}

}  // namespace kp::eval

namespace kp::eval {

const char* to_string(ProfileMode m) {
  switch (m) {
    case ProfileMode::kCupti: return "cupti";
    case ProfileMode::kNvtx: return "nvtx";
    case ProfileMode::kTrace: return "trace";
  }
  return "cupti";
}

std::optional<ProfileMode> profile_mode_from_string(std::string_view s) {
  for (auto m : {ProfileMode::kCupti, ProfileMode::kNvtx, ProfileMode::kTrace})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

json to_json(const ProfileRequest& r) {
  return {{"mode", to_string(r.mode)}, {"metrics", r.metrics}, {"rangeprof_library", r.rangeprof_library},
          {"calls", r.calls},          {"warmup_calls", r.warmup_calls}, {"check", r.check},
          {"replay", r.replay}};
}

ProfileRequest profile_request_from_json(const json& j) {
  ProfileRequest r;
  if (!j.is_object()) return r;
  r.mode = profile_mode_from_string(j.value("mode", std::string("cupti"))).value_or(ProfileMode::kCupti);
  if (j.contains("metrics") && j["metrics"].is_array())
    for (const auto& m : j["metrics"])
      if (m.is_string()) r.metrics.push_back(m.get<std::string>());
  r.rangeprof_library = j.value("rangeprof_library", std::string());
  r.calls = j.value("calls", 1);
  r.warmup_calls = j.value("warmup_calls", 3);
  r.check = j.value("check", true);
  r.replay = j.value("replay", std::string("auto"));
  return r;
}

json to_json(const ProfileReply& r) {
  json j = {{"outcome", to_string(r.outcome)}, {"reason", r.reason},   {"mode", to_string(r.mode)},
            {"calls", r.calls},                {"seed", r.seed},       {"collect_seconds", r.collect_seconds},
            {"phase_seconds", r.phase_seconds}};
  if (!r.range_profile.is_null()) j["range_profile"] = r.range_profile;
  return j;
}

Result<ProfileReply> profile_reply_from_json(const json& j) {
  if (!j.is_object()) return make_error(ErrorCode::kProtocol, "profile reply: expected an object");
  ProfileReply r;
  auto outcome = outcome_from_string(j.value("outcome", std::string()));
  if (!outcome) return make_error(ErrorCode::kProtocol, "profile reply: missing or unknown \"outcome\"");
  auto mode = profile_mode_from_string(j.value("mode", std::string()));
  if (!mode) return make_error(ErrorCode::kProtocol, "profile reply: missing or unknown \"mode\"");
  r.outcome = *outcome;
  r.mode = *mode;
  r.reason = j.value("reason", std::string());
  r.calls = j.value("calls", 0);
  r.seed = j.value("seed", uint64_t{0});
  r.collect_seconds = j.value("collect_seconds", 0.0);
  if (j.contains("phase_seconds") && j["phase_seconds"].is_object())
    for (const auto& [k, v] : j["phase_seconds"].items())
      if (v.is_number()) r.phase_seconds[k] = v.get<double>();
  if (j.contains("range_profile")) r.range_profile = j["range_profile"];
  return r;
}

}  // namespace kp::eval
