#include "build/builder.h"

#include <gtest/gtest.h>

namespace kp::build {
namespace {

TEST(Arch, HopperGetsTheArchSpecificTarget) {
  EXPECT_EQ(arch_for_compute_capability(9, 0), "sm_90a");
  EXPECT_EQ(arch_for_compute_capability(8, 0), "sm_80");
  EXPECT_EQ(arch_for_compute_capability(8, 9), "sm_89");
}

}  // namespace
}  // namespace kp::build
