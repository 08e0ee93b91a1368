// GPU tier: the real ncu on a real program. tests/data/ncu/nvtx_app.cu launches a warm-up
// kernel, then rowsoftmax (4096 rows of 32768 floats) inside the NVTX range "kp_candidate", then
// another warm-up kernel; run_ncu with the stage-1 metric list must profile rowsoftmax alone and
// read its counters. Skipped without a GPU, nvcc or ncu (the reason is printed).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "profile/metric_lists.h"
#include "profile/ncu/ncu_runner.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;

TEST(NcuRunnerGpu, ProfilesOnlyTheKernelInsideTheCandidateRange) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  NcuOptions options;
  auto ncu = find_ncu(options);
  if (!ncu.ok()) GTEST_SKIP() << ncu.error().message;
  auto version = ncu_version(*ncu);
  ASSERT_TRUE(version.ok()) << version.error().message;
  std::printf("ncu %s at %s\n", version->c_str(), ncu->c_str());

  auto dir = sys::TempDir::create("kp-ncu-gpu-test-");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  fs::path app = dir->path() / "nvtx_app";
  sys::Command nvcc;
  nvcc.argv = {"nvcc",
               "-O3",
               "-arch=sm_90",
               "-lineinfo",
               "-o",
               app.string(),
               (testing::test_data_dir() / "ncu" / "nvtx_app.cu").string(),
               "-ldl"};
  nvcc.timeout = std::chrono::seconds(120);
  auto built = sys::run(nvcc);
  ASSERT_TRUE(built.ok()) << built.error().message;
  ASSERT_TRUE(built->success()) << "nvcc " << built->describe() << ":\n" << built->stderr_text;

  options.ncu = *ncu;
  options.metrics = stage1_metrics();
  options.log_file = dir->path() / "ncu.log";
  sys::Command program;
  program.argv = {app.string()};
  program.cwd = dir->path().string();
  auto profile = run_ncu(options, program);
  ASSERT_TRUE(profile.ok()) << profile.error().message;  // names a rejected stage-1 metric
  std::printf("ncu run: %.2f s wall, %d replay passes, log %s\n", profile->wall_s, profile->passes,
              profile->log_path.c_str());

  ASSERT_EQ(profile->kernels.size(), 1u) << "the warm kernels outside the range must not be profiled";
  const KernelMetrics& k = profile->kernels[0];
  EXPECT_EQ(k.name.rfind("rowsoftmax", 0), 0u) << k.name;
  EXPECT_EQ(k.grid, (std::array<int64_t, 3>{4096, 1, 1}));
  EXPECT_EQ(k.block, (std::array<int64_t, 3>{256, 1, 1}));

  // Every stage-1 metric got a column: one that ncu dropped ("Unable to access ...") is named.
  std::vector<std::string> absent;
  for (const auto& m : stage1_metrics())
    if (!k.units.count(m)) absent.push_back(m);
  EXPECT_TRUE(absent.empty()) << "ncu returned no column for: " << join(absent, ", ");

  const double ideal = 4096.0 * 32768.0 * 4.0;  // one pass over the input, and over the output
  ASSERT_TRUE(k.get("gpu__time_duration.sum")) << "no duration";
  EXPECT_GT(*k.get("gpu__time_duration.sum"), 0.0);
  // The kernel reads each 128 KiB row three times (max, sum, normalise); with about a thousand
  // rows in flight they do not fit in L2, so DRAM reads lie between one and three passes (the
  // H200 capture, tests/data/ncu/ncu_nvtx_small_raw.csv, read 3.00 passes).
  ASSERT_TRUE(k.get("dram__bytes_read.sum")) << "no dram__bytes_read.sum";
  double read = *k.get("dram__bytes_read.sum");
  std::printf("dram__bytes_read.sum = %.0f bytes = %.2f x the input\n", read, read / ideal);
  EXPECT_GE(read, 0.9 * ideal);
  EXPECT_LE(read, 3.3 * ideal);
  // The output is written once (the capture: 0.96 of it reached DRAM by the kernel's end).
  ASSERT_TRUE(k.get("dram__bytes_write.sum")) << "no dram__bytes_write.sum";
  EXPECT_NEAR(*k.get("dram__bytes_write.sum"), ideal, 0.1 * ideal);
  EXPECT_EQ(k.units.at("gpu__time_duration.sum"), "ns");
  EXPECT_EQ(k.units.at("dram__bytes_read.sum"), "byte");
}

}  // namespace
}  // namespace kp::profile
