#include "profile/cupti/range_profile.h"

#include <array>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kp::profile {

namespace {

using nlohmann::json;

Error invalid(const std::string& what) {
  return make_error(ErrorCode::kInvalidInput, "CUPTI range profiler result: " + what);
}

struct TagName {
  RangeProfFailure failure;
  const char* tag;
};
constexpr std::array<TagName, 7> kTags = {{
    {RangeProfFailure::kPrivileges, "privileges"},
    {RangeProfFailure::kUnsupported, "unsupported"},
    {RangeProfFailure::kUnknownMetric, "unknown-metric"},
    {RangeProfFailure::kNoContext, "no-context"},
    {RangeProfFailure::kInvalidArgument, "invalid-argument"},
    {RangeProfFailure::kDropped, "dropped"},
    {RangeProfFailure::kCupti, "cupti"},
}};

}  // namespace

Result<KernelProfile> parse_range_profile(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid("not a JSON object: " + std::string(text.substr(0, 80)));
  if (j.empty()) return invalid("empty ({}): the collection did not finish (kp_rp_end failed or never ran)");
  auto ranges = j.find("ranges");
  if (ranges == j.end() || !ranges->is_array()) return invalid("no \"ranges\" array");
  KernelProfile p;
  p.collector = Collector::kCupti;
  if (auto m = j.find("metrics"); m != j.end() && m->is_array()) {
    for (const auto& name : *m) {
      if (name.is_string()) p.metrics.push_back(name.get<std::string>());
    }
  }
  if (auto n = j.find("passes"); n != j.end() && n->is_number_integer()) p.passes = n->get<int>();
  if (auto d = j.find("dropped"); d != j.end() && d->is_number() && d->get<double>() > 0)
    p.unprofiled_launches = d->get<int64_t>();
  if (auto c = j.find("max_kernels"); c != j.end() && c->is_number_integer()) p.capacity = c->get<int>();
  if (auto c = j.find("capacity_grown_from"); c != j.end() && c->is_number_integer())
    p.capacity_grown_from = c->get<int>();
  if (auto r = j.find("replay"); r != j.end() && r->is_string()) p.replay = r->get<std::string>();
  if (auto r = j.find("replay_fallback"); r != j.end() && r->is_string()) p.replay_fallback = r->get<std::string>();
  if (auto t = j.find("timing_s"); t != j.end() && t->is_object()) {
    for (const char* phase : {"create", "begin", "end", "prepare", "passes"}) {
      auto v = t->find(phase);
      if (v != t->end() && v->is_number()) p.wall_s += v->get<double>();
    }
  }
  const json* units = nullptr;
  if (auto u = j.find("units"); u != j.end() && u->is_object()) units = &*u;

  for (size_t i = 0; i < ranges->size(); ++i) {
    const json& r = (*ranges)[i];
    if (!r.is_object()) return invalid(fmt::format("range {} is not an object", i));
    KernelMetrics k;
    k.launch_index = static_cast<int64_t>(i);
    if (auto n = r.find("name"); n != r.end() && n->is_string() && !n->get<std::string>().empty()) {
      k.name = n->get<std::string>();
    } else if (auto rn = r.find("range"); rn != r.end() && rn->is_string()) {
      k.name = rn->get<std::string>();
    } else {
      k.name = std::to_string(i);
    }
    auto values = r.find("values");
    if (values == r.end() || !values->is_object())
      return invalid(fmt::format("range {} ({}) has no \"values\" object", i, k.name));
    for (const auto& [metric, v] : values->items()) {
      if (v.is_null()) continue;
      if (!v.is_number()) return invalid(fmt::format("range {} ({}): {} is not a number", i, k.name, metric));
      k.values[metric] = v.get<double>();
      if (units != nullptr) {
        auto u = units->find(metric);
        if (u != units->end() && u->is_string()) k.units[metric] = u->get<std::string>();
      }
    }
    p.kernels.push_back(std::move(k));
  }
  return p;
}

Result<std::vector<KernelMetrics>> parse_range_profile_json(std::string_view json) {
  KP_TRY(KernelProfile p, parse_range_profile(json));
  return std::move(p.kernels);
}

const char* to_string(RangeProfFailure f) {
  for (const auto& t : kTags) {
    if (t.failure == f) return t.tag;
  }
  return "cupti";
}

std::optional<RangeProfFailure> range_prof_failure_from_string(std::string_view s) {
  for (const auto& t : kTags) {
    if (s == t.tag) return t.failure;
  }
  return std::nullopt;
}

std::optional<RangeProfFailure> range_prof_failure_of(std::string_view message) {
  size_t colon = message.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  return range_prof_failure_from_string(message.substr(0, colon));
}

Error range_prof_error(std::string_view message) {
  ErrorCode code = ErrorCode::kTool;
  if (auto f = range_prof_failure_of(message)) {
    switch (*f) {
      case RangeProfFailure::kPrivileges:
      case RangeProfFailure::kUnsupported: code = ErrorCode::kUnavailable; break;
      case RangeProfFailure::kUnknownMetric:
      case RangeProfFailure::kDropped: code = ErrorCode::kInvalidInput; break;
      case RangeProfFailure::kNoContext:
      case RangeProfFailure::kInvalidArgument: code = ErrorCode::kInternal; break;
      case RangeProfFailure::kCupti: code = ErrorCode::kTool; break;
    }
  }
  return make_error(code, "CUPTI range profiler: " + std::string(message));
}

}  // namespace kp::profile
