#include "search/tune_space.h"

#include <gtest/gtest.h>

namespace kp::search {
namespace {

const char* kSource = R"(// KP_TUNE(BLOCK, 1) in a comment is not a declaration
#define KP_TUNE(name, ...) /* the macro itself */
KP_TUNE(BLOCK, 256, 128, 512, 1024)
KP_TUNE(VEC, 4, 1, 2)
__global__ void k() {}
)";

TEST(TuneSpace, NeighboursStepOneParameterAlongItsSortedValues) {
  TuneSpace space(task::parse_tune_params(kSource).value());
  EXPECT_EQ(space.size(), 12u);
  const TunePoint d = space.defaults();
  EXPECT_EQ(TuneSpace::describe(d), "BLOCK=256 VEC=4");
  auto n = space.neighbours(d);
  ASSERT_EQ(n.size(), 3u);  // BLOCK up, BLOCK down, VEC down (4 is VEC's largest)
  EXPECT_EQ(TuneSpace::describe(n[0]), "BLOCK=512 VEC=4");
  EXPECT_EQ(TuneSpace::describe(n[1]), "BLOCK=128 VEC=4");
  EXPECT_EQ(TuneSpace::describe(n[2]), "BLOCK=256 VEC=2");
}

TEST(TuneSpace, APointBecomesASourceWhoseDefaultsAreIt) {
  const std::string out = TuneSpace::apply(kSource, {{"BLOCK", 1024}, {"VEC", 1}});
  EXPECT_NE(out.find("KP_TUNE(BLOCK, 1024, 128, 256, 512)"), std::string::npos) << out;
  EXPECT_NE(out.find("KP_TUNE(VEC, 1, 2, 4)"), std::string::npos) << out;
  EXPECT_NE(out.find("// KP_TUNE(BLOCK, 1) in a comment"), std::string::npos) << "comments are left alone";
  auto params = task::parse_tune_params(out).value();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].values.front(), 1024);
  EXPECT_EQ(params[1].values.front(), 1);
  EXPECT_EQ(TuneSpace::apply(kSource, TuneSpace(task::parse_tune_params(kSource).value()).defaults()),
            TuneSpace::apply(TuneSpace::apply(kSource, {{"BLOCK", 512}}), {{"BLOCK", 256}}))
      << "a point's source does not depend on the path to it";
}

}  // namespace
}  // namespace kp::search
