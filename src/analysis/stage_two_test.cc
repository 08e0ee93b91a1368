#include "analysis/stage_two.h"

#include <gtest/gtest.h>

namespace kp::analysis {
namespace {

RooflineResult with(BottleneckClass c, const char* top_roof) {
  RooflineResult r;
  r.cls = c;
  if (top_roof) r.roofs.push_back(Roof{top_roof, "", 1, 1, 0.3});
  return r;
}

TEST(StageTwo, EachClassCallsForTheToolsThatExplainIt) {
  EXPECT_EQ(stage2_families_for(with(BottleneckClass::kMemoryBound, "DRAM")), std::vector<std::string>{"memory"});
  EXPECT_EQ(stage2_families_for(with(BottleneckClass::kComputeBound, "Tensor BF16")), std::vector<std::string>{"compute"});
  EXPECT_EQ(stage2_families_for(with(BottleneckClass::kLatencyBound, "FP32")), std::vector<std::string>{"latency"});
  EXPECT_EQ(stage2_families_for(with(BottleneckClass::kLatencyBound, "L2")),
            (std::vector<std::string>{"latency", "memory"}));
  EXPECT_TRUE(stage2_families_for(with(BottleneckClass::kLaunchBound, nullptr)).empty());
}

}  // namespace
}  // namespace kp::analysis
