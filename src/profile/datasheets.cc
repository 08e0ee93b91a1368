#include "profile/datasheets.h"

#include <cctype>
#include <string>

#include <fmt/format.h>

#include "verdict/physics_floor.h"

namespace kp::profile {

namespace {

// Hopper and Ampere figures: NVIDIA's H200, H100 and A100 datasheets (dense tensor rates, i.e.
// half the "with sparsity" figures); CUDA-core FP16 from the H100 and A100 whitepapers.
#define KP_HOPPER_FP16 {"fp16_flops"}, "2 x FP32, as in the H100 whitepaper"
#define KP_AMPERE_FP16 {"fp16_flops"}, "from the A100 whitepaper"

std::vector<Datasheet> make_table() {
  std::vector<Datasheet> t;
  auto add = [&](Datasheet d) { t.push_back(d); };
  // clang-format off
  // product, all_of, none_of, cc, SMs, boost MHz, DRAM B/s, FP32, FP64, FP16 (CUDA cores),
  // tensor fp16, bf16, tf32, fp64, int8, derived figures and how
  add({"NVIDIA H200 SXM", {"h200"}, {"nvl"}, 9, 0, 132, 1980, 4.8e12, 67e12, 34e12, 134e12,
       990e12, 990e12, 495e12, 67e12, 1979e12, KP_HOPPER_FP16});
  add({"NVIDIA H200 NVL", {"h200", "nvl"}, {}, 9, 0, 132, 1785, 4.8e12, 60e12, 30e12, 120e12,
       836e12, 836e12, 418e12, 60e12, 1671e12, KP_HOPPER_FP16});
  add({"NVIDIA H100 SXM", {"h100"}, {"pcie", "nvl"}, 9, 0, 132, 1980, 3.35e12, 67e12, 34e12, 134e12,
       990e12, 990e12, 495e12, 67e12, 1979e12, KP_HOPPER_FP16});
  add({"NVIDIA H100 NVL", {"h100", "nvl"}, {}, 9, 0, 132, 1785, 3.9e12, 60e12, 30e12, 120e12,
       836e12, 836e12, 418e12, 60e12, 1671e12, KP_HOPPER_FP16});
  add({"NVIDIA H100 PCIe", {"h100", "pcie"}, {}, 9, 0, 114, 1755, 2.0e12, 51e12, 26e12, 102e12,
       756e12, 756e12, 378e12, 51e12, 1513e12, KP_HOPPER_FP16});
  add({"NVIDIA A100 SXM 80GB", {"a100", "80gb"}, {"pcie"}, 8, 0, 108, 1410, 2.039e12, 19.5e12, 9.7e12, 78e12,
       312e12, 312e12, 156e12, 19.5e12, 624e12, KP_AMPERE_FP16});
  add({"NVIDIA A100 SXM 40GB", {"a100", "40gb"}, {"pcie"}, 8, 0, 108, 1410, 1.555e12, 19.5e12, 9.7e12, 78e12,
       312e12, 312e12, 156e12, 19.5e12, 624e12, KP_AMPERE_FP16});
  add({"NVIDIA A100 PCIe 80GB", {"a100", "80gb", "pcie"}, {}, 8, 0, 108, 1410, 1.935e12, 19.5e12, 9.7e12, 78e12,
       312e12, 312e12, 156e12, 19.5e12, 624e12, KP_AMPERE_FP16});
  add({"NVIDIA A100 PCIe 40GB", {"a100", "40gb", "pcie"}, {}, 8, 0, 108, 1410, 1.555e12, 19.5e12, 9.7e12, 78e12,
       312e12, 312e12, 156e12, 19.5e12, 624e12, KP_AMPERE_FP16});
  add({"NVIDIA L40S", {"l40s"}, {}, 8, 9, 142, 2520, 864e9, 91.6e12, 1.43e12, 91.6e12,
       362e12, 362e12, 183e12, 0, 733e12,
       {"fp64_flops", "fp16_flops"}, "FP64 is 1/64 of FP32 and FP16 equals FP32 on Ada CUDA cores"});
  // clang-format on
  return t;
}
#undef KP_HOPPER_FP16
#undef KP_AMPERE_FP16

// FLOP (or int8 ops) per clock per SM of one architecture, for GPUs without a datasheet row.
// The tensor columns only where eval::flops_per_clock_per_sm has no row (0 here: it has one).
struct ArchRates {
  int cc_major, cc_minor;
  double fp32, fp64, fp16;                                    // CUDA cores: FFMA, DFMA, HFMA2
  double tensor_fp16, tensor_tf32, tensor_fp64, tensor_int8;  // dense
};
constexpr ArchRates kArchRates[] = {
    {8, 0, 128, 64, 512, 0, 0, 0, 0},         // A100
    {8, 6, 256, 4, 256, 1024, 512, 0, 2048},  // GA10x (A10, A40)
    {8, 9, 256, 4, 256, 1024, 512, 0, 2048},  // AD10x (L4, L40S)
    {9, 0, 256, 128, 512, 0, 0, 0, 0},        // H100, H200
};

std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words;
  std::string w;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  if (!w.empty()) words.push_back(w);
  return words;
}

bool has_word(const std::vector<std::string>& words, const char* w) {
  for (const auto& x : words)
    if (x == w) return true;
  return false;
}

struct RateField {
  const char* key;
  double Ceilings::*ceiling;
  double Datasheet::*sheet;
};
constexpr RateField kRateFields[] = {
    {"dram_bytes_per_s", &Ceilings::dram_bytes_per_s, &Datasheet::dram_bytes_per_s},
    {"fp32_flops", &Ceilings::fp32_flops, &Datasheet::fp32_flops},
    {"fp64_flops", &Ceilings::fp64_flops, &Datasheet::fp64_flops},
    {"fp16_flops", &Ceilings::fp16_flops, &Datasheet::fp16_flops},
    {"tensor_fp16_flops", &Ceilings::tensor_fp16_flops, &Datasheet::tensor_fp16_flops},
    {"tensor_bf16_flops", &Ceilings::tensor_bf16_flops, &Datasheet::tensor_bf16_flops},
    {"tensor_tf32_flops", &Ceilings::tensor_tf32_flops, &Datasheet::tensor_tf32_flops},
    {"tensor_fp64_flops", &Ceilings::tensor_fp64_flops, &Datasheet::tensor_fp64_flops},
    {"tensor_int8_ops", &Ceilings::tensor_int8_ops, &Datasheet::tensor_int8_ops},
};

// The architecture estimate for a device without a datasheet row.
void estimate_from_architecture(const eval::DeviceInfo& d, Ceilings* c) {
  const std::string why = fmt::format("no datasheet for \"{}\"", d.name);
  if (d.dram_bytes_per_s > 0) {
    c->dram_bytes_per_s = d.dram_bytes_per_s;
    c->method["dram_bytes_per_s"] =
        fmt::format("estimate: the device-to-device copy bandwidth kp-worker measured at start ({})", why);
  } else {
    c->method["dram_bytes_per_s"] = fmt::format("unknown: {}, and the worker measured no copy bandwidth", why);
  }
  const ArchRates* arch = nullptr;
  for (const ArchRates& a : kArchRates)
    if (a.cc_major == d.cc_major && a.cc_minor == d.cc_minor) arch = &a;
  const double mhz = d.sm_clock_khz / 1000.0;
  c->sm_clock_mhz = mhz;
  using eval::PrecisionClass;
  auto tensor = [&](PrecisionClass pc, double fallback) {
    double v = eval::flops_per_clock_per_sm(d.cc_major, d.cc_minor, pc);
    return v > 0 ? v : fallback;
  };
  struct Rate {
    const char* key;
    double Ceilings::*field;
    double per_clock;
  };
  const Rate rates[] = {
      {"fp32_flops", &Ceilings::fp32_flops, arch ? arch->fp32 : 0},
      {"fp64_flops", &Ceilings::fp64_flops, arch ? arch->fp64 : 0},
      {"fp16_flops", &Ceilings::fp16_flops, arch ? arch->fp16 : 0},
      {"tensor_fp16_flops", &Ceilings::tensor_fp16_flops, tensor(PrecisionClass::kBf16, arch ? arch->tensor_fp16 : 0)},
      {"tensor_bf16_flops", &Ceilings::tensor_bf16_flops, tensor(PrecisionClass::kBf16, arch ? arch->tensor_fp16 : 0)},
      {"tensor_tf32_flops", &Ceilings::tensor_tf32_flops, tensor(PrecisionClass::kTf32, arch ? arch->tensor_tf32 : 0)},
      {"tensor_fp64_flops", &Ceilings::tensor_fp64_flops, tensor(PrecisionClass::kFp64, arch ? arch->tensor_fp64 : 0)},
      {"tensor_int8_ops", &Ceilings::tensor_int8_ops, tensor(PrecisionClass::kInt8Fp8, arch ? arch->tensor_int8 : 0)},
  };
  for (const Rate& r : rates) {
    if (r.per_clock > 0 && d.sm_count > 0 && mhz > 0) {
      c->*r.field = r.per_clock * d.sm_count * mhz * 1e6;
      c->method[r.key] =
          fmt::format("estimate: sm_{}{} rate of {:g} per clock per SM x {} SMs x {:g} MHz (peak clock; {})",
                      d.cc_major, d.cc_minor, r.per_clock, d.sm_count, mhz, why);
    } else if (r.per_clock <= 0) {
      c->method[r.key] =
          fmt::format("unknown: {}, and no per-clock rate for compute capability {}.{}", why, d.cc_major, d.cc_minor);
    } else {
      c->method[r.key] = fmt::format("unknown: {}, and the device reported no SM count or clock", why);
    }
  }
}

}  // namespace

const std::vector<Datasheet>& datasheets() {
  static const std::vector<Datasheet> table = make_table();
  return table;
}

const Datasheet* find_datasheet(std::string_view device_name) {
  const std::vector<std::string> words = name_words(device_name);
  const Datasheet* best = nullptr;
  int best_words = 0;
  for (const Datasheet& d : datasheets()) {
    int n = 0;
    bool match = true;
    for (const char* const* w = d.all_of; match && w < std::end(d.all_of) && *w; ++w, ++n) match = has_word(words, *w);
    for (const char* const* w = d.none_of; match && w < std::end(d.none_of) && *w; ++w) match = !has_word(words, *w);
    if (match && n > best_words) {
      best = &d;
      best_words = n;
    }
  }
  return best;
}

Ceilings datasheet_ceilings(const eval::DeviceInfo& device) {
  Ceilings c;
  c.gpu = device.name;
  c.cc_major = device.cc_major;
  c.cc_minor = device.cc_minor;
  c.sm_count = device.sm_count;
  c.source = CeilingSource::kDatasheet;
  c.method["l2_bytes_per_s"] = "unknown: the L2 bandwidth is on no datasheet; run `kernelpro calibrate` to measure it";
  const Datasheet* sheet = find_datasheet(device.name);
  if (!sheet) {
    estimate_from_architecture(device, &c);
    return c;
  }
  c.sm_clock_mhz = sheet->boost_clock_mhz;
  for (const RateField& f : kRateFields) {
    c.*f.ceiling = sheet->*f.sheet;
    c.method[f.key] = sheet->*f.sheet > 0 ? fmt::format("datasheet: {}", sheet->product)
                                          : fmt::format("none: the {} has no such unit", sheet->product);
  }
  for (const char* const* k = sheet->derived; k < std::end(sheet->derived) && *k; ++k)
    c.method[*k] = fmt::format("derived, not on the datasheet of the {}: {}", sheet->product, sheet->derived_how);
  return c;
}

}  // namespace kp::profile
