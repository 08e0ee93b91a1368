#include "analysis/evidence_json.h"

#include <string>

#include <fmt/format.h>

#include "profile/calibration.h"
#include "profile/sass/sass_summary.h"

namespace kp::analysis {

namespace {

using nlohmann::json;

json dims(const std::array<int64_t, 3>& d) { return json::array({d[0], d[1], d[2]}); }

std::array<int64_t, 3> dims_from(const json& j) {
  std::array<int64_t, 3> d{0, 0, 0};
  for (size_t i = 0; i < 3 && i < j.size(); ++i) d[i] = j.at(i).get<int64_t>();
  return d;
}

json kernel_json(const profile::KernelMetrics& k) {
  return {{"name", k.name},     {"launch_index", k.launch_index}, {"grid", dims(k.grid)}, {"block", dims(k.block)},
          {"values", k.values}, {"units", k.units},               {"text", k.text}};
}

profile::KernelMetrics kernel_from(const json& j) {
  profile::KernelMetrics k;
  k.name = j.at("name").get<std::string>();
  k.launch_index = j.value("launch_index", int64_t{0});
  if (j.contains("grid")) k.grid = dims_from(j.at("grid"));
  if (j.contains("block")) k.block = dims_from(j.at("block"));
  k.values = j.at("values").get<std::map<std::string, double>>();
  k.units = j.value("units", std::map<std::string, std::string>{});
  k.text = j.value("text", std::map<std::string, std::string>{});
  return k;
}

std::map<int, int64_t> bits_from(const json& j) {
  std::map<int, int64_t> m;
  for (const auto& [k, v] : j.items()) m[std::stoi(k)] = v.get<int64_t>();
  return m;
}

json resources_json(const build::KernelResources& r) {
  return {{"mangled_name", r.mangled_name},
          {"name", r.name},
          {"arch", r.arch},
          {"is_entry", r.is_entry},
          {"registers", r.registers},
          {"register_limit", r.register_limit},
          {"barriers", r.barriers},
          {"shared_bytes", r.shared_bytes},
          {"stack_frame_bytes", r.stack_frame_bytes},
          {"spill_store_bytes", r.spill_store_bytes},
          {"spill_load_bytes", r.spill_load_bytes},
          {"cumulative_stack_bytes", r.cumulative_stack_bytes},
          {"gmem_bytes", r.gmem_bytes}};
}

build::KernelResources resources_from(const json& j) {
  build::KernelResources r;
  r.mangled_name = j.value("mangled_name", std::string());
  r.name = j.value("name", std::string());
  r.arch = j.value("arch", std::string());
  r.is_entry = j.value("is_entry", true);
  r.registers = j.at("registers").get<int>();
  r.register_limit = j.value("register_limit", 0);
  r.barriers = j.value("barriers", 0);
  r.shared_bytes = j.value("shared_bytes", int64_t{0});
  r.stack_frame_bytes = j.value("stack_frame_bytes", int64_t{0});
  r.spill_store_bytes = j.value("spill_store_bytes", int64_t{0});
  r.spill_load_bytes = j.value("spill_load_bytes", int64_t{0});
  r.cumulative_stack_bytes = j.value("cumulative_stack_bytes", int64_t{0});
  r.gmem_bytes = j.value("gmem_bytes", int64_t{0});
  return r;
}

// The summary as profile::to_json writes it (its derived counts are ignored when read back),
// and every resource field, which that form leaves out.
json sass_json(const profile::KernelSass& k) {
  return {{"mangled_name", k.mangled_name},
          {"name", k.name},
          {"sass", profile::to_json(k.sass)},
          {"resources", k.resources ? resources_json(*k.resources) : json(nullptr)}};
}

profile::KernelSass sass_from(const json& j) {
  profile::KernelSass k;
  k.mangled_name = j.at("mangled_name").get<std::string>();
  k.name = j.value("name", std::string());
  const json& s = j.at("sass");
  k.sass.arch = s.value("arch", std::string());
  k.sass.instructions = s.at("instructions").get<int64_t>();
  const json by_class = s.value("by_class", json::object());
  for (const auto& [cls, n] : by_class.items()) {
    auto c = profile::sass_class_from_string(cls);
    if (!c) throw std::invalid_argument(fmt::format("unknown SASS class \"{}\" in {}", cls, k.name));
    k.sass.by_class[static_cast<int>(*c)] = n.get<int64_t>();
  }
  k.sass.by_opcode = s.value("by_opcode", std::map<std::string, int64_t>{});
  k.sass.global_load_bits = bits_from(s.value("global_load_bits", json::object()));
  k.sass.global_store_bits = bits_from(s.value("global_store_bits", json::object()));
  k.sass.local_loads = s.value("local_loads", int64_t{0});
  k.sass.local_stores = s.value("local_stores", int64_t{0});
  k.sass.tensor_shapes = s.value("tensor_shapes", std::map<std::string, int64_t>{});
  k.sass.mufu = s.value("mufu", std::map<std::string, int64_t>{});
  k.sass.fp32_fma = s.value("fp32_fma", int64_t{0});
  k.sass.fp32_add = s.value("fp32_add", int64_t{0});
  k.sass.fp32_mul = s.value("fp32_mul", int64_t{0});
  if (const auto r = j.find("resources"); r != j.end() && r->is_object()) k.resources = resources_from(*r);
  return k;
}

json trace_json(const profile::TraceCall& c) {
  json kernels = json::array(), copies = json::array();
  for (const auto& k : c.kernels)
    kernels.push_back({{"name", k.name},
                       {"mangled_name", k.mangled_name},
                       {"stream", k.stream},
                       {"grid", dims(k.grid)},
                       {"block", dims(k.block)},
                       {"registers_per_thread", k.registers_per_thread},
                       {"static_shared_bytes", k.static_shared_bytes},
                       {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                       {"start_ns", k.start_ns},
                       {"end_ns", k.end_ns},
                       {"correlation_id", k.correlation_id}});
  for (const auto& m : c.copies)
    copies.push_back({{"kind", m.kind},
                      {"direction", m.direction},
                      {"bytes", m.bytes},
                      {"stream", m.stream},
                      {"start_ns", m.start_ns},
                      {"end_ns", m.end_ns}});
  return {{"index", c.index},   {"kernels", kernels}, {"copies", copies},   {"launch_api_calls", c.launch_api_calls},
          {"span_s", c.span_s}, {"busy_s", c.busy_s}, {"gaps_s", c.gaps_s}, {"streams", c.streams}};
}

profile::TraceCall trace_from(const json& j) {
  profile::TraceCall c;
  c.index = j.value("index", 0);
  for (const auto& k : j.at("kernels")) {
    profile::TraceKernel t;
    t.name = k.at("name").get<std::string>();
    t.mangled_name = k.value("mangled_name", std::string());
    t.stream = k.value("stream", uint32_t{0});
    if (k.contains("grid")) t.grid = dims_from(k.at("grid"));
    if (k.contains("block")) t.block = dims_from(k.at("block"));
    t.registers_per_thread = k.value("registers_per_thread", 0);
    t.static_shared_bytes = k.value("static_shared_bytes", int64_t{0});
    t.dynamic_shared_bytes = k.value("dynamic_shared_bytes", int64_t{0});
    t.start_ns = k.at("start_ns").get<uint64_t>();
    t.end_ns = k.at("end_ns").get<uint64_t>();
    t.correlation_id = k.value("correlation_id", uint32_t{0});
    c.kernels.push_back(std::move(t));
  }
  for (const auto& m : j.value("copies", json::array())) {
    profile::TraceCopy t;
    t.kind = m.at("kind").get<std::string>();
    t.direction = m.value("direction", std::string());
    t.bytes = m.value("bytes", uint64_t{0});
    t.stream = m.value("stream", uint32_t{0});
    t.start_ns = m.at("start_ns").get<uint64_t>();
    t.end_ns = m.at("end_ns").get<uint64_t>();
    c.copies.push_back(std::move(t));
  }
  c.launch_api_calls = j.value("launch_api_calls", uint64_t{0});
  c.span_s = j.value("span_s", 0.0);
  c.busy_s = j.value("busy_s", 0.0);
  c.gaps_s = j.value("gaps_s", 0.0);
  c.streams = j.value("streams", 0);
  return c;
}

}  // namespace

json evidence_to_json(const Evidence& e) {
  json kernels = json::array(), sass = json::array();
  for (const auto& k : e.kernels) kernels.push_back(kernel_json(k));
  for (const auto& s : e.sass) sass.push_back(sass_json(s));
  return {{"kernels", kernels},
          {"unprofiled_launches", e.unprofiled_launches},
          {"sass", sass},
          {"trace", e.trace ? trace_json(*e.trace) : json(nullptr)},
          {"ceilings", profile::to_json(e.ceilings)},
          {"device", eval::to_json(e.device)},
          {"call_seconds", e.call_seconds},
          {"ideal_bytes", e.ideal_bytes},
          {"ideal_flops", e.ideal_flops}};
}

Result<Evidence> evidence_from_json(const json& j) {
  if (!j.is_object()) return make_error(ErrorCode::kInvalidInput, "evidence: not a JSON object");
  Evidence e;
  const char* part = "kernels";
  try {
    for (const auto& k : j.at("kernels")) e.kernels.push_back(kernel_from(k));
    e.unprofiled_launches = j.value("unprofiled_launches", int64_t{0});
    part = "sass";
    for (const auto& s : j.value("sass", json::array())) e.sass.push_back(sass_from(s));
    part = "trace";
    if (const auto t = j.find("trace"); t != j.end() && t->is_object()) e.trace = trace_from(*t);
    part = "device";
    e.device = eval::device_info_from_json(j.at("device"));
    part = "call_seconds";
    e.call_seconds = j.value("call_seconds", 0.0);
    e.ideal_bytes = j.value("ideal_bytes", 0.0);
    e.ideal_flops = j.value("ideal_flops", 0.0);
  } catch (const std::exception& ex) {
    return make_error(ErrorCode::kInvalidInput, fmt::format("evidence: {}: {}", part, ex.what()));
  }
  auto ceilings = profile::ceilings_from_json(j.value("ceilings", json::object()));
  if (!ceilings.ok()) return make_error(ErrorCode::kInvalidInput, "evidence: ceilings: " + ceilings.error().message);
  e.ceilings = *ceilings;
  return e;
}

}  // namespace kp::analysis
