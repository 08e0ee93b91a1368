#include "driver/profile_session.h"

#include <gtest/gtest.h>

namespace kp::driver {
namespace {

profile::KernelMetrics kernel(const std::string& name, std::map<std::string, double> values) {
  profile::KernelMetrics k;
  k.name = name;
  k.values = std::move(values);
  return k;
}

TEST(CompareCollectors, RelativeDifferenceOfEveryMetricBothReportByLaunchOrder) {
  profile::KernelProfile cupti, ncu;
  cupti.kernels = {kernel("0", {{"dram__bytes_read.sum", 536901000}, {"gpu__time_duration.sum", 236896}, {"only.cupti", 1}}),
                   kernel("1", {{"dram__bytes_read.sum", 0}})};
  ncu.kernels = {kernel("saxpy", {{"dram__bytes_read.sum", 536879000}, {"gpu__time_duration.sum", 231040}}),
                 kernel("strided", {{"dram__bytes_read.sum", 0}})};
  auto a = compare_collectors(cupti, ncu);
  ASSERT_EQ(a.size(), 3u);  // only.cupti has no ncu value
  EXPECT_EQ(a[0].kernel, "saxpy");  // ncu's demangled name is the one shown
  EXPECT_EQ(a[0].metric, "dram__bytes_read.sum");
  EXPECT_NEAR(a[0].relative_difference, 22000.0 / 536879000, 1e-12);
  EXPECT_EQ(a[1].metric, "gpu__time_duration.sum");
  EXPECT_NEAR(a[1].relative_difference, (236896.0 - 231040) / 231040, 1e-9);
  EXPECT_EQ(a[2].kernel, "strided");
  EXPECT_EQ(a[2].relative_difference, 0);  // two zeros agree, no division by zero
}

TEST(CountersExplainCall, OneProfiledKernelOfNinetyPercentOfTheCallNeedsNoTrace) {
  profile::KernelProfile c;
  // The H200 gelu seed: 0.2316 ms of kernel in a 0.2376 ms call.
  c.kernels = {kernel("gelu", {{"gpu__time_duration.sum", 231600}})};
  const std::string why = counters_explain_call(c, 0.2376e-3);
  EXPECT_NE(why.find("one kernel, 97%"), std::string::npos) << why;
  // Half the call unaccounted for (gaps, copies, host work): the trace is what shows it.
  EXPECT_EQ(counters_explain_call(c, 0.4632e-3), "");
}

TEST(CountersExplainCall, SeveralKernelsASampleOrNoDurationTakeTheTrace) {
  profile::KernelProfile two;
  two.kernels = {kernel("a", {{"gpu__time_duration.sum", 1e5}}), kernel("b", {{"gpu__time_duration.sum", 1e5}})};
  EXPECT_EQ(counters_explain_call(two, 0.2e-3), "") << "the gaps between launches are the trace's";
  profile::KernelProfile sampled;
  sampled.kernels = {kernel("a", {{"gpu__time_duration.sum", 1e5}})};
  sampled.unprofiled_launches = 300;
  EXPECT_EQ(counters_explain_call(sampled, 0.1e-3), "");
  profile::KernelProfile no_time;
  no_time.kernels = {kernel("a", {{"dram__bytes_read.sum", 1e6}})};
  EXPECT_EQ(counters_explain_call(no_time, 0.1e-3), "");
  profile::KernelProfile none;
  EXPECT_EQ(counters_explain_call(none, 0.1e-3), "");
  profile::KernelProfile one;
  one.kernels = {kernel("a", {{"gpu__time_duration.sum", 1e5}})};
  EXPECT_EQ(counters_explain_call(one, 0), "") << "no verdict median, nothing to compare with";
}

TEST(CompareCollectors, ExtraKernelsOnOneSideAreLeftOut) {
  profile::KernelProfile cupti, ncu;
  cupti.kernels = {kernel("a", {{"m", 1}}), kernel("b", {{"m", 2}})};
  ncu.kernels = {kernel("a", {{"m", 2}})};
  auto a = compare_collectors(cupti, ncu);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_DOUBLE_EQ(a[0].relative_difference, 0.5);
}

// Beside PyTorch's CUPTI client the Range Profiler names its ranges "0", "1": on the H100 the
// planner was told "kernel 1: 1, 8.44 ms" for torch.softmax. The worker's own trace of the call
// names them, by launch when it lists as many, else by its one name; a bare number never reaches
// the prompts.
TEST(NameNumberedKernels, TheWorkersTraceNamesWhatCuptiOnlyNumbered) {
  profile::KernelProfile c;
  c.kernels = {kernel("0", {}), kernel("rowsum(float const*, float*)", {})};
  name_numbered_kernels(c, {"softmax_kernel(float const*)", "rowsum(float const*, float*)"});
  EXPECT_EQ(c.kernels[0].name, "softmax_kernel(float const*)");
  EXPECT_EQ(c.kernels[1].name, "rowsum(float const*, float*)") << "a named kernel keeps its name";

  c.kernels = {kernel("0", {}), kernel("1", {}), kernel("2", {})};
  name_numbered_kernels(c, {"vectorized_elementwise_kernel<4>"});
  EXPECT_EQ(c.kernels[2].name, "vectorized_elementwise_kernel<4>") << "one name for every launch";

  c.kernels = {kernel("0", {}), kernel("1", {})};
  name_numbered_kernels(c, {"a", "b", "c"});
  EXPECT_EQ(c.kernels[1].name, "launch 2 (name not traced)");
  c.kernels = {kernel("", {})};
  name_numbered_kernels(c, {});
  EXPECT_EQ(c.kernels[0].name, "launch 1 (name not traced)");
}

}  // namespace
}  // namespace kp::driver
