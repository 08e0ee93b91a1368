// GPU tier: `kernelpro profile`'s session on the example seeds, end to end on the real worker:
// counters in process (CUPTI Range Profiler) checked against ncu on the same calls, the trace,
// SASS and the class. Skipped without a GPU (and the ncu comparison without ncu).
#include "driver/profile_session.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "profile/calibration.h"
#include "profile/datasheets.h"
#include "sys/temp_dir.h"
#include "task/native_task_loader.h"
#include "tests/support/paths.h"

namespace kp::driver {
namespace {

namespace fs = std::filesystem;

// The metrics the roofline rests on, which both collectors must agree on within 5% for kernels
// long enough to time well (>= 50 us): bytes, FLOP counts, the SOL percentages, the duration.
const std::set<std::string> kAgreementMetrics = {
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "lts__t_bytes.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
};

class ProfileSessionGpu : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
    scratch_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-profile-gpu-").value());
  }
  ProfileSessionOptions options(bool compare_ncu) {
    ProfileSessionOptions o;
    o.evaluator.build.cache_dir = scratch_->path() / "cache";
    o.evaluator.build.find_cutlass = testing::cutlass_finder();
    o.evaluator.build.include_dir = testing::source_dir() / "include";
    o.evaluator.eval.correctness_trials = 1;
    o.evaluator.eval.timing_budget_s = 0.1;
    o.evaluator.eval.min_trials = 10;
    o.evaluator.eval.energy_window_s = 0;
    o.evaluator.eval.timeout_s = 60;
    o.evaluator.worker.worker_path = testing::worker_binary();
    o.evaluator.worker.scratch_dir = scratch_->path();
    o.profiler.once_argv = {testing::worker_binary().string()};
    o.profiler.rangeprof_library = testing::binary_dir() / "libkp_rangeprof.so";
    o.profiler.trace_library = testing::binary_dir() / "libkp_trace.so";
    o.profiler.scratch_dir = scratch_->path();
    o.profiler.sass.search_dirs = {testing::kp_tools_python_dir()};
    o.compare_ncu = compare_ncu;
    o.ceilings_for = [](const eval::DeviceInfo& d, std::string* warning) {
      *warning = "datasheet (test)";
      return profile::datasheet_ceilings(d);
    };
    return o;
  }
  std::unique_ptr<sys::TempDir> scratch_;
};

TEST_P(ProfileSessionGpu, InProcessCountersAgreeWithNcuAndGiveAClass) {
  auto task = task::load_native_task(testing::examples_dir() / GetParam());
  ASSERT_TRUE(task.ok()) << task.error().message;
  auto page = run_profile(*task, *task->seed_path, {}, options(true));
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_EQ(page->eval.outcome, eval::Outcome::kOk) << page->eval.reason;
  ASSERT_TRUE(page->counters);
  ASSERT_FALSE(page->counters->kernels.empty());
  EXPECT_EQ(page->counters->collector, profile::Collector::kCupti);
  // The worker set up the stage-1 session after its hello and kept it through the evaluation:
  // the stage-1 collection created nothing.
  EXPECT_TRUE(page->counters->timing_s.count("worker.prewarm")) << "the worker did not prewarm the Range Profiler";
  EXPECT_FALSE(page->counters->timing_s.count("step.host_initialize")) << "the stage-1 collection made a new session";
  EXPECT_TRUE(page->counters->timing_s.count("step.counter_data_copy"));
  ASSERT_TRUE(page->roofline);
  EXPECT_FALSE(page->roofline->limiter.empty());
  ASSERT_TRUE(page->trace) << (page->notes.empty() ? "" : page->notes.front());
  EXPECT_EQ(page->trace->calls.size(), 3u);
  for (const auto& c : page->trace->calls) EXPECT_EQ(c.kernels.size(), page->counters->kernels.size());
  EXPECT_FALSE(page->sass.empty());
  if (!page->ncu_counters) GTEST_SKIP() << "no ncu comparison: " << (page->notes.empty() ? "" : page->notes.back());
  std::map<std::string, double> duration_ns, l2_per_dram;
  for (const auto& k : page->ncu_counters->kernels) {
    duration_ns[k.name] = k.get_or("gpu__time_duration.sum", 0);
    double dram = k.get_or("dram__bytes_read.sum", 0) + k.get_or("dram__bytes_write.sum", 0);
    l2_per_dram[k.name] = dram > 0 ? k.get_or("lts__t_bytes.sum", 0) / dram : 0;
  }
  int compared = 0;
  for (const auto& a : page->agreement) {
    if (!kAgreementMetrics.count(a.metric)) continue;
    if (duration_ns[a.kernel] < 50e3) continue;
    // Counts near zero (a few stray FADDs) are not compared; percentages always are.
    const bool count = a.metric.find("pct") == std::string::npos;
    if (count && std::fabs(a.ncu) < 1e3 && std::fabs(a.cupti) < 1e3) continue;
    // DRAM bytes of a kernel that re-reads its data through L2 (L2 traffic >= 4x DRAM traffic)
    // depend on what L2 held as each pass began and on the order the CTAs ran in, which no two
    // collectors share: on the H200 the naive bf16 GEMM read 1.93e9 B with kernel replay and
    // 1.96e9 B with user replay in process, 2.24e9 B and 2.59e9 B in two ncu runs, while its L2
    // bytes, time and SOL percentages agreed within 2%. Such a kernel is held to its L2 bytes;
    // its DRAM bytes are printed below, not compared.
    if (a.metric == "dram__bytes_read.sum" && l2_per_dram[a.kernel] >= 4) continue;
    ++compared;
    const double bound = 0.05;
    EXPECT_LE(a.relative_difference, bound) << GetParam() << " " << a.kernel << " " << a.metric << ": cupti " << a.cupti
                                            << " ncu " << a.ncu;
  }
  EXPECT_GE(compared, 3);
  // The figures for the log: every compared value and the largest difference.
  double worst = 0;
  std::string worst_metric;
  for (const auto& a : page->agreement)
    if (kAgreementMetrics.count(a.metric) && a.relative_difference > worst) {
      worst = a.relative_difference;
      worst_metric = a.metric;
    }
  std::printf("AGREEMENT %-10s class=%s cupti_s=%.3f passes=%d compared=%d max=%.2f%% (%s)\n", GetParam(),
              analysis::to_string(page->roofline->cls), page->counters->wall_s, page->counters->passes, compared,
              worst * 100, worst_metric.c_str());
  for (const auto& a : page->agreement)
    if (kAgreementMetrics.count(a.metric) || a.metric == "dram__bytes_write.sum")
      std::printf("  %-10s %-66s cupti %-14.6g ncu %-14.6g %.2f%%\n", GetParam(), a.metric.c_str(), a.cupti, a.ncu,
                  a.relative_difference * 100);
}

// A call of 40 launches overflows the worker's first Range Profiler session (16 launches,
// verdict/worker_plan.h): the session grows to 64 and the call is collected again, so that every
// launch has its counters and none is a sample.
class ProfileSessionCapacityGpu : public ProfileSessionGpu {};

TEST_F(ProfileSessionCapacityGpu, ACallOfFortyLaunchesGrowsTheSession) {
  auto task = task::load_native_task(testing::examples_dir() / "gelu");
  ASSERT_TRUE(task.ok()) << task.error().message;
  ProfileSessionOptions o = options(false);
  o.trace = false;
  o.sass = false;
  auto page = run_profile(*task, testing::test_data_dir() / "honest" / "gelu" / "forty_launches.cu", {}, o);
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_EQ(page->eval.outcome, eval::Outcome::kOk) << page->eval.reason;
  ASSERT_TRUE(page->counters);
  EXPECT_EQ(page->counters->kernels.size(), 40u);
  EXPECT_EQ(page->counters->unprofiled_launches, 0);
  EXPECT_EQ(page->counters->capacity_grown_from, 16);
  EXPECT_EQ(page->counters->capacity, 64);
  for (const auto& k : page->counters->kernels) EXPECT_GT(k.get_or("gpu__time_duration.sum", 0), 0) << k.name;
  bool noted = false;
  for (const auto& n : page->notes) noted |= n.find("grew to 64") != std::string::npos;
  EXPECT_TRUE(noted);
}

INSTANTIATE_TEST_SUITE_P(Examples, ProfileSessionGpu,
                         ::testing::Values("gelu", "softmax", "layernorm", "row_sum", "transpose", "gemm_fp32",
                                           "gemm_bf16"));

}  // namespace
}  // namespace kp::driver
