// e2e tier: `kernelpro profile` and `kernelpro classify` as a user runs them. Without a GPU,
// profile still gives the instruction level (SASS joined with ptxas) and exits 3; classify needs
// no GPU at all. The GPU case skips without one.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/cli_run.h"
#include "tests/support/paths.h"

namespace kp {
namespace {

namespace fs = std::filesystem;

using ProfileRun = testing::CliRun;

class ProfileE2e : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-e2e-profile-").value()); }
  ProfileRun kernelpro(std::vector<std::string> args) {
    return testing::run_kernelpro(args, {{"XDG_CACHE_HOME", (dir_->path() / "cache").string()},
                                         {"XDG_DATA_HOME", (dir_->path() / "data").string()}});
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(ProfileE2e, WithoutAGpuTheSassAndPtxasLevelIsStillShown) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  if (!testing::gpu_missing()) GTEST_SKIP() << "a GPU is present: the GPU case covers this machine";
  ProfileRun r = kernelpro({"profile", (testing::examples_dir() / "gelu").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("No GPU here"), std::string::npos) << r.out;
  if (auto why = testing::cuobjdump_missing()) {
    EXPECT_NE(r.out.find("cuobjdump"), std::string::npos) << r.out;  // the note says how to get it
    GTEST_SKIP() << "the SASS level needs cuobjdump: " << *why;
  }
  // The seed's one kernel, its registers from ptxas, its 32-bit loads and its erff's EX2.
  EXPECT_NE(r.out.find("gelu_seed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("registers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("32-bit global loads"), std::string::npos) << r.out;

  ProfileRun j = kernelpro({"profile", (testing::examples_dir() / "gelu").string(), "--json"});
  EXPECT_EQ(j.exit_code, 3);
  auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << j.out;
  ASSERT_EQ(doc["sass"].size(), 1u);
  EXPECT_GT(doc["sass"][0]["sass"]["instructions"].get<int>(), 10);
  EXPECT_EQ(doc["eval"]["outcome"], "not_run");
}

TEST_F(ProfileE2e, BadFlagsAreUsageErrors) {
  ProfileRun r = kernelpro({"profile", (testing::examples_dir() / "gelu").string(), "--collector", "nsys"});
  EXPECT_EQ(r.exit_code, 2);
  r = kernelpro({"profile", (testing::test_data_dir() / "kernelbench" / "problems" / "relu.py").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("CANDIDATE.py"), std::string::npos) << r.err;
}

// The fixture kernels of the H200 capture: both are memory-bound, as ncu's own rule says.
TEST_F(ProfileE2e, ClassifyReadsAnNcuTableWithoutAGpu) {
  ProfileRun r = kernelpro({"classify", (testing::test_data_dir() / "ncu" / "ncu_full_raw.csv").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_array()) << r.out;
  ASSERT_EQ(doc.size(), 2u);
  for (const auto& k : doc) {
    EXPECT_EQ(k["class"], "memory-bound") << k.dump();
    EXPECT_EQ(k["limiter"], "DRAM") << k.dump();
    EXPECT_TRUE(k["agrees_with_ncu"].get<bool>()) << k.dump();
  }
  ProfileRun text = kernelpro({"classify", (testing::test_data_dir() / "ncu" / "ncu_full_raw.csv").string()});
  EXPECT_NE(text.out.find("never calibrated"), std::string::npos) << text.out;  // the datasheet warning

  ProfileRun bad = kernelpro({"classify", (testing::test_data_dir() / "ncu" / "main.cu").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("main.cu"), std::string::npos) << bad.err;
}

TEST_F(ProfileE2e, OnAGpuThePageHasTheClassAndEveryLevel) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  ProfileRun r = kernelpro({"profile", (testing::examples_dir() / "softmax").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_TRUE(doc.contains("class"));
  EXPECT_EQ(doc["counters"]["collector"], "cupti");
  EXPECT_FALSE(doc["counters"]["kernels"].empty());
  EXPECT_FALSE(doc["sass"].empty());
  EXPECT_TRUE(doc.contains("trace")) << doc["notes"].dump();
}

TEST_F(ProfileE2e, OnAGpuAKernelBenchCandidateIsProfiledFromThePrewarmedSession) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  const fs::path kb = testing::test_data_dir() / "kernelbench";
  ProfileRun r = kernelpro({"profile", (kb / "problems" / "relu.py").string(), (kb / "honest" / "relu_fast.py").string(),
                            "--no-trace", "--no-sass", "--json"});
  if (r.exit_code == 3) GTEST_SKIP() << "the KernelBench worker cannot run here (torch): " << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  ASSERT_EQ(doc["counters"]["collector"], "cupti") << doc["notes"].dump();
  // The KernelBench worker set the stage-1 session up after its hello and kept it through the
  // evaluation, as kp-worker does: the collection made no new session.
  const auto& timing = doc["counters"]["timing_s"];
  EXPECT_TRUE(timing.contains("worker.prewarm")) << timing.dump();
  EXPECT_FALSE(timing.contains("step.host_initialize")) << timing.dump();
  std::printf("KERNELBENCH_STAGE1 wall_s=%s collect_s=%s seconds=%s timing_s=%s\n",
              doc["counters"]["wall_s"].dump().c_str(), doc["counters"]["collect_s"].dump().c_str(),
              doc["seconds"].dump().c_str(), timing.dump().c_str());
}

// Kernel replay in the KernelBench worker (--replay kernel): CUPTI replays each kernel of one
// forward; the worker's own session starts at 16 launches (worker_plan.py).
TEST_F(ProfileE2e, OnAGpuAKernelBenchCandidateIsProfiledWithKernelReplay) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  const fs::path kb = testing::test_data_dir() / "kernelbench";
  ProfileRun r = kernelpro({"profile", (kb / "problems" / "relu.py").string(), (kb / "honest" / "relu_fast.py").string(),
                            "--no-trace", "--no-sass", "--replay", "kernel", "--json"});
  if (r.exit_code == 3) GTEST_SKIP() << "the KernelBench worker cannot run here (torch): " << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  ASSERT_EQ(doc["counters"]["collector"], "cupti") << doc["notes"].dump();
  EXPECT_EQ(doc["counters"]["replay"], "kernel");
  EXPECT_EQ(doc["counters"]["capacity"], 16);
  ASSERT_FALSE(doc["counters"]["kernels"].empty());
  EXPECT_GT(doc["counters"]["kernels"][0]["metrics"].value("gpu__time_duration.sum", 0.0), 0);
}

}  // namespace
}  // namespace kp
