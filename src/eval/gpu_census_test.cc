#include "eval/gpu_census.h"

#include <gtest/gtest.h>

namespace kp::eval {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(GpuCensus, OthersAreAllButTheWorkerWhenItIsListed) {
  std::vector<GpuProcess> census = {{100, 900 * kMiB}, {200, 30000 * kMiB}};
  auto others = other_processes(census, 100);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].pid, 200u);
  EXPECT_TRUE(other_processes({{100, 900 * kMiB}}, 100).empty());
  EXPECT_TRUE(other_processes({}, 100).empty());
}

TEST(GpuCensus, InAnotherPidNamespaceOneHolderIsTakenForTheWorker) {
  // NVML gives host pids inside a container: the worker's pid is not among them.
  EXPECT_TRUE(other_processes({{4001, 900 * kMiB}}, 12).empty());
  auto others = other_processes({{4001, 900 * kMiB}, {4002, 20000 * kMiB}}, 12);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].pid, 4002u);  // the larger holder; the smaller is taken for the worker
  EXPECT_EQ(describe(others), "pid 4002 (20000 MiB)");
}

TEST(GpuCensus, OnlySamplesWholeInsideTheIdleWindowAreJudged) {
  // Samples every 100 ms (one came early); the worker went idle at t = 1'000'000 µs. The sample at
  // 1'050'000 may cover 950'000..1'050'000: the reference's own kernels may be in it.
  std::vector<UtilSample> s = {{800'000, 90}, {900'000, 95}, {1'000'000, 80}, {1'050'000, 40}};
  IdleVerdict v = judge_idle_window(s, 1'000'000);
  EXPECT_EQ(v.judged, 0);
  EXPECT_FALSE(v.busy());
  s.push_back({1'150'000, 0});
  s.push_back({1'250'000, 0});
  v = judge_idle_window(s, 1'000'000);
  EXPECT_EQ(sample_period_us(s), 100'000u);  // the largest gap
  EXPECT_EQ(v.judged, 2);
  EXPECT_FALSE(v.busy());
  s.push_back({1'350'000, 35});
  v = judge_idle_window(s, 1'000'000);
  EXPECT_TRUE(v.busy());
  EXPECT_EQ(v.max_percent, 35u);
}

TEST(GpuCensus, APeriodIsNeverTakenLongerThanNvmlsLongest) {
  EXPECT_EQ(sample_period_us({{1'000'000, 0}, {9'000'000, 0}}), 1'000'000u);
  EXPECT_EQ(sample_period_us({{1'000'000, 0}}), 0u);
}

TEST(GpuCensus, WithoutAPeriodASampleCountsOneSecondAfterTheWindowOpens) {
  EXPECT_EQ(judge_idle_window({{1'500'000, 60}}, 1'000'000).judged, 0);
  EXPECT_EQ(judge_idle_window({{2'000'000, 60}}, 1'000'000).judged, 1);
  EXPECT_EQ(judge_idle_window({{1'500'000, 60}}, 1'000'000, 200'000).judged, 1);
}

TEST(GpuCensus, ForeignActivePidsBesideAListedWorker) {
  std::vector<GpuProcess> census = {{100, 900 * kMiB}, {200, 900 * kMiB}};
  std::vector<ProcessSample> samples = {{100, 1, 80}, {200, 1, 0}, {100, 2, 75}};
  EXPECT_TRUE(foreign_active_pids(samples, 100, census).empty()) << "pid 200 held a context but ran nothing";
  samples.push_back({200, 3, 12});
  EXPECT_EQ(foreign_active_pids(samples, 100, census), std::vector<unsigned>{200});
}

TEST(GpuCensus, ForeignActivePidsInAnotherNamespaceNeedTwoActive) {
  std::vector<GpuProcess> census = {{4001, 900 * kMiB}, {4002, 900 * kMiB}};
  std::vector<ProcessSample> samples = {{4001, 1, 80}};
  EXPECT_TRUE(foreign_active_pids(samples, 12, census).empty()) << "one active pid is taken for the worker's";
  samples.push_back({4002, 2, 30});
  EXPECT_EQ(foreign_active_pids(samples, 12, census), (std::vector<unsigned>{4001, 4002}));
}

}  // namespace
}  // namespace kp::eval
