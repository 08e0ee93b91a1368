#include "profile/calibration.h"


#include <cctype>
#include <cmath>
#include <system_error>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::profile {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kStoreFormat = 1;

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidInput, std::move(message)); }

}  // namespace

std::optional<CeilingSource> ceiling_source_from_string(std::string_view s) {
  if (s == "calibrated") return CeilingSource::kCalibrated;
  if (s == "datasheet") return CeilingSource::kDatasheet;
  return std::nullopt;
}

const std::vector<CeilingField>& ceiling_fields() {
  static const std::vector<CeilingField> fields = {
      {"dram_bytes_per_s", "DRAM bandwidth", "B/s", &Ceilings::dram_bytes_per_s},
      {"l2_bytes_per_s", "L2 bandwidth", "B/s", &Ceilings::l2_bytes_per_s},
      {"fp32_flops", "FP32 (FFMA)", "FLOP/s", &Ceilings::fp32_flops},
      {"fp64_flops", "FP64 (DFMA)", "FLOP/s", &Ceilings::fp64_flops},
      {"fp16_flops", "FP16 (HFMA2)", "FLOP/s", &Ceilings::fp16_flops},
      {"tensor_fp16_flops", "tensor FP16", "FLOP/s", &Ceilings::tensor_fp16_flops},
      {"tensor_bf16_flops", "tensor BF16", "FLOP/s", &Ceilings::tensor_bf16_flops},
      {"tensor_tf32_flops", "tensor TF32", "FLOP/s", &Ceilings::tensor_tf32_flops},
      {"tensor_fp64_flops", "tensor FP64", "FLOP/s", &Ceilings::tensor_fp64_flops},
      {"tensor_int8_ops", "tensor INT8", "OP/s", &Ceilings::tensor_int8_ops},
  };
  return fields;
}

json to_json(const Ceilings& c) {
  json j = {{"gpu", c.gpu},
            {"cc_major", c.cc_major},
            {"cc_minor", c.cc_minor},
            {"sm_count", c.sm_count},
            {"source", to_string(c.source)}};
  if (!c.measured_at.empty()) j["measured_at"] = c.measured_at;
  for (const CeilingField& f : ceiling_fields()) j[f.key] = c.*f.member;
  j["sm_clock_mhz"] = c.sm_clock_mhz;
  j["method"] = c.method;
  return j;
}

Result<Ceilings> ceilings_from_json(const json& j) {
  if (!j.is_object()) return invalid(fmt::format("ceilings: expected a JSON object, got {}", j.type_name()));
  Ceilings c;
  auto text = [&](const char* key, bool required, std::string* out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) return invalid(fmt::format("ceilings: \"{}\" is missing", key));
      return ok_status();
    }
    if (!it->is_string())
      return invalid(fmt::format("ceilings: \"{}\" must be a string, got {}", key, it->type_name()));
    *out = it->get<std::string>();
    return ok_status();
  };
  auto number = [&](const char* key, double* out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) return ok_status();
    if (!it->is_number())
      return invalid(fmt::format("ceilings: \"{}\" must be a number, got {}", key, it->type_name()));
    double v = it->get<double>();
    if (!std::isfinite(v) || v < 0)
      return invalid(fmt::format("ceilings: \"{}\" must be a non-negative number, got {}", key, v));
    *out = v;
    return ok_status();
  };
  KP_TRY_STATUS(text("gpu", true, &c.gpu));
  std::string source;
  KP_TRY_STATUS(text("source", true, &source));
  auto s = ceiling_source_from_string(source);
  if (!s) return invalid(fmt::format("ceilings: unknown \"source\" \"{}\" (calibrated, datasheet)", source));
  c.source = *s;
  KP_TRY_STATUS(text("measured_at", false, &c.measured_at));
  for (auto [key, field] :
       {std::pair{"cc_major", &c.cc_major}, std::pair{"cc_minor", &c.cc_minor}, std::pair{"sm_count", &c.sm_count}}) {
    double v = 0;
    KP_TRY_STATUS(number(key, &v));
    *field = static_cast<int>(v);
  }
  for (const CeilingField& f : ceiling_fields()) KP_TRY_STATUS(number(f.key, &(c.*f.member)));
  KP_TRY_STATUS(number("sm_clock_mhz", &c.sm_clock_mhz));
  if (auto it = j.find("method"); it != j.end()) {
    if (!it->is_object())
      return invalid(fmt::format("ceilings: \"method\" must be an object, got {}", it->type_name()));
    for (auto m = it->begin(); m != it->end(); ++m) {
      if (!m->is_string()) return invalid(fmt::format("ceilings: \"method\".\"{}\" must be a string", m.key()));
      c.method[m.key()] = m->get<std::string>();
    }
  }
  return c;
}

std::string gpu_key(const eval::DeviceInfo& device) {
  std::string slug;
  for (char ch : device.name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  if (slug.empty()) slug = "gpu";
  const long gib = std::lround(static_cast<double>(device.memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  return fmt::format("{}-{}sm-{}gib", slug, device.sm_count, gib);
}

CalibrationStore::CalibrationStore(fs::path dir) : dir_(std::move(dir)) {}

fs::path CalibrationStore::path_for(const eval::DeviceInfo& device) const { return dir_ / (gpu_key(device) + ".json"); }

Result<std::optional<Ceilings>> CalibrationStore::load(const eval::DeviceInfo& device) const {
  const fs::path path = path_for(device);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<Ceilings>{};
  KP_TRY(std::string text, read_file(path.string()));
  auto corrupt = [&](const std::string& why) {
    return invalid(fmt::format("the calibration file {} is corrupt ({}); delete it or run `kernelpro calibrate` again",
                               path.string(), why));
  };
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return corrupt("not valid JSON");
  auto c = ceilings_from_json(j);
  if (!c.ok()) return corrupt(c.error().message);
  if (c->source != CeilingSource::kCalibrated) return corrupt("its source is not \"calibrated\"");
  return std::optional<Ceilings>(std::move(*c));
}

Status CalibrationStore::save(const eval::DeviceInfo& device, const Ceilings& ceilings) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    return make_error(ErrorCode::kIo,
                      fmt::format("cannot create the calibration folder {}: {}; choose another with --store DIR",
                                  dir_.string(), ec.message()));
  const fs::path path = path_for(device);
  json j = to_json(ceilings);
  j["format"] = kStoreFormat;
  j["gpu_key"] = gpu_key(device);
  Status w = write_file_atomic(path.string(), j.dump(2) + "\n");
  if (!w.ok())
    return make_error(ErrorCode::kIo,
                      fmt::format("cannot write the calibration file {}: {}", path.string(), w.error().message));
  return ok_status();
}

Result<Ceilings> ceilings_from_calibrate_reply(const json& reply) {
  auto broken = [](const std::string& why) {
    return make_error(ErrorCode::kProtocol, fmt::format("the worker's calibrate reply is malformed: {}", why));
  };
  if (!reply.is_object() || !reply.contains("ceilings")) return broken("no \"ceilings\"");
  auto c = ceilings_from_json(reply["ceilings"]);
  if (!c.ok()) return broken(c.error().message);
  if (c->source != CeilingSource::kCalibrated) return broken("its ceilings' source is not \"calibrated\"");
  return c;
}

Result<Ceilings> calibrate(eval::WorkerClient& worker, double timeout_s, CalibrationDepth depth) {
  json request = {{"op", "calibrate"}, {"quick", depth == CalibrationDepth::kQuick}};
  KP_TRY(eval::WorkerClient::CallReply r, worker.call(std::move(request), timeout_s));
  return ceilings_from_calibrate_reply(r.reply);
}

Ceilings resolve_ceilings(const CalibrationStore& store, const eval::DeviceInfo& device, std::string* warning) {
  auto stored = store.load(device);
  if (stored.ok() && stored->has_value()) {
    if (warning) warning->clear();
    return **stored;
  }
  Ceilings c = datasheet_ceilings(device);
  if (!warning) return c;
  std::string using_what = find_datasheet(device.name)
                               ? fmt::format("datasheet ceilings for {}", device.name)
                               : fmt::format("ceilings estimated from the sm_{}{} architecture for {} (no datasheet)",
                                             device.cc_major, device.cc_minor, device.name);
  if (!stored.ok())
    *warning = fmt::format("{}; using {}", stored.error().message, using_what);
  else
    *warning = fmt::format("this GPU was never calibrated; using {}; run `kernelpro calibrate`", using_what);
  return c;
}

}  // namespace kp::profile
