#include "analysis/stage_two.h"

#include <algorithm>

namespace kp::analysis {

std::vector<std::string> stage2_families_for(const RooflineResult& r) {
  std::vector<std::string> out;
  auto add = [&](const char* f) {
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  auto top_is_memory = [&]() {
    return !r.roofs.empty() && (r.roofs.front().name == "DRAM" || r.roofs.front().name == "L2");
  };
  switch (r.cls) {
    case BottleneckClass::kMemoryBound: add("memory"); break;
    case BottleneckClass::kComputeBound: add("compute"); break;
    case BottleneckClass::kLatencyBound:
      add("latency");
      if (top_is_memory()) add("memory");
      break;
    case BottleneckClass::kLaunchBound: break;
  }
  return out;
}

}  // namespace kp::analysis
