#include "verdict/statistics.h"

#include <gtest/gtest.h>

namespace kp::eval {
namespace {

TEST(Statistics, MatchesTheWorkedExample) {
  Summary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.q1, 1.75);
  EXPECT_DOUBLE_EQ(s.q3, 3.25);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.stddev, 1.2909944, 1e-6);
  EXPECT_NEAR(s.relative_iqr(), 1.5 / 2.5, 1e-12);
}

TEST(Statistics, MedianIgnoresOutliers) {
  std::vector<double> v(99, 10.0);
  v.push_back(1e6);  // one preempted trial
  Summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 10.0);
  EXPECT_GT(s.mean, 1000.0);
}

TEST(Statistics, EmptyAndSingle) {
  EXPECT_EQ(summarize({}).count, 0u);
  Summary one = summarize({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
}

}  // namespace
}  // namespace kp::eval
