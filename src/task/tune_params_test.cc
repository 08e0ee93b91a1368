#include "task/tune_params.h"

#include <gtest/gtest.h>

namespace kp::task {
namespace {

TEST(TuneParams, ReadsDeclarationsWithTheDefaultFirst) {
  auto p = parse_tune_params("KP_TUNE(BLOCK, 256, 128, 512)\n// KP_TUNE(IGNORED, 1)\nKP_TUNE( TILE ,16,0x20)\n");
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].name, "BLOCK");
  EXPECT_EQ((*p)[0].values, (std::vector<long long>{256, 128, 512}));
  EXPECT_EQ((*p)[1].name, "TILE");
  EXPECT_EQ((*p)[1].values, (std::vector<long long>{16, 32}));
}

TEST(TuneParams, RejectsEmptyAndNonIntegerValues) {
  EXPECT_FALSE(parse_tune_params("KP_TUNE(BLOCK)").ok());
  auto bad = parse_tune_params("KP_TUNE(BLOCK, 1.5)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not an integer"), std::string::npos);
}

}  // namespace
}  // namespace kp::task
