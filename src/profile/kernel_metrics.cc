#include "profile/kernel_metrics.h"

#include <fmt/format.h>

namespace kp::profile {

const char* to_string(Collector c) { return c == Collector::kNcu ? "ncu" : "cupti"; }

std::optional<Collector> collector_from_string(std::string_view s) {
  if (s == "cupti") return Collector::kCupti;
  if (s == "ncu") return Collector::kNcu;
  return std::nullopt;
}

std::optional<double> KernelMetrics::get(std::string_view metric) const {
  auto it = values.find(std::string(metric));
  if (it == values.end()) return std::nullopt;
  return it->second;
}

double KernelMetrics::get_or(std::string_view metric, double fallback) const {
  auto v = get(metric);
  return v ? *v : fallback;
}

namespace {

// Counts, bytes and durations add up over kernels; rates and percentages do not.
bool is_additive(const std::string& metric) {
  auto ends_with = [&](std::string_view suffix) {
    return metric.size() >= suffix.size() && metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".sum") && metric.find("pct") == std::string::npos;
}

}  // namespace

KernelMetrics combine_kernels(const std::vector<KernelMetrics>& kernels) {
  if (kernels.size() == 1) return kernels.front();
  KernelMetrics out;
  out.name = fmt::format("<{} kernels>", kernels.size());
  std::map<std::string, double> weight;  // per averaged metric: the durations behind it
  for (const auto& k : kernels) {
    double w = k.get_or("gpu__time_duration.sum", 1.0);
    for (const auto& [name, v] : k.values) {
      if (is_additive(name)) {
        out.values[name] += v;
      } else {
        out.values[name] += v * w;
        weight[name] += w;
      }
    }
    for (const auto& [name, u] : k.units) out.units.emplace(name, u);
  }
  for (const auto& [name, w] : weight) out.values[name] = w > 0 ? out.values[name] / w : 0;
  return out;
}

}  // namespace kp::profile
