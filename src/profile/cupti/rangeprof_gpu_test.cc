// GPU tier: kp_rangeprof_probe (tests/data/cupti/rangeprof_probe.cu, a CMake target) runs
// libkp_rangeprof.so from the build directory with the stage-1 list, once for the whole suite;
// its results go through parse_range_profile. Skipped without a GPU.
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profile/cupti/range_profile.h"
#include "profile/metric_lists.h"
#include "sys/subprocess.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;

constexpr double kN = 1 << 26;     // as in rangeprof_probe.cu
constexpr double kFmaIters = 512;  // as in rangeprof_probe.cu

struct ProbeRun {
  std::string error;   // why the probe could not be run, else empty
  std::string output;  // its stdout and stderr
  int exit_code = -1;
  std::map<std::string, std::string> json;  // session label -> KP_RP_JSON text
};

ProbeRun run_probe(const std::vector<std::string>& extra) {
  ProbeRun r;
  fs::path probe = testing::binary_dir() / "kp_rangeprof_probe";
  fs::path lib = testing::binary_dir() / "libkp_rangeprof.so";
  if (!fs::exists(probe) || !fs::exists(lib)) {
    r.error = probe.string() + " or " + lib.string() + " is missing: build kp_rangeprof_probe and kp_rangeprof";
    return r;
  }
  sys::Command c;
  c.argv = {probe.string(), "--lib", lib.string(), "--metrics",
            (testing::test_data_dir() / "cupti" / "stage1_metrics.txt").string()};
  c.argv.insert(c.argv.end(), extra.begin(), extra.end());
  c.timeout = std::chrono::seconds(300);
  auto done = sys::run(c);
  if (!done.ok()) {
    r.error = done.error().message;
    return r;
  }
  r.exit_code = done->exit_code;
  r.output = done->stdout_text + done->stderr_text;
  for (const std::string& line : split_lines(r.output)) {
    if (line.rfind("KP_RP_JSON ", 0) != 0) continue;
    size_t sp = line.find(' ', 11);
    if (sp != std::string::npos) r.json[line.substr(11, sp - 11)] = line.substr(sp + 1);
  }
  return r;
}

const ProbeRun& probe_run() {
  static ProbeRun run = run_probe({});
  return run;
}

// The probe's --warm-study: sessions kept across collections, held through timed launches.
const ProbeRun& warm_run() {
  static ProbeRun run = run_probe(
      {"--warm-study", "1", "--metrics2", (testing::test_data_dir() / "cupti" / "stage2_metrics.txt").string()});
  return run;
}

class RangeProfGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
    ASSERT_TRUE(probe_run().error.empty()) << probe_run().error;
  }
  static KernelProfile session(const std::string& label) {
    auto it = probe_run().json.find(label);
    EXPECT_NE(it, probe_run().json.end()) << "no result for session " << label << " in:\n" << probe_run().output;
    if (it == probe_run().json.end()) return {};
    auto p = parse_range_profile(it->second);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return p.ok() ? *p : KernelProfile{};
  }
};

TEST_F(RangeProfGpu, ProbeRunsEverySession) {
  EXPECT_EQ(probe_run().exit_code, 0) << probe_run().output;
  EXPECT_NE(probe_run().output.find("KP_RP_DONE ok"), std::string::npos) << probe_run().output;
}

TEST_F(RangeProfGpu, WholeStage1ListIsAccepted) {
  EXPECT_EQ(probe_run().output.find("KP_RP_NOTE the whole list failed"), std::string::npos) << probe_run().output;
  KernelProfile p = session("pair");
  EXPECT_EQ(p.metrics, stage1_metrics());
  EXPECT_GE(p.passes, 1);
}

TEST_F(RangeProfGpu, OneRangePerKernelWithItsName) {
  KernelProfile p = session("pair");
  ASSERT_EQ(p.kernels.size(), 2u) << probe_run().output;
  EXPECT_EQ(p.kernels[0].name, "saxpy");
  EXPECT_NE(p.kernels[1].name.find("strided_read"), std::string::npos) << p.kernels[1].name;
  for (const auto& k : p.kernels) EXPECT_GT(k.get_or("gpu__time_duration.sum", 0), 0) << k.name;
}

TEST_F(RangeProfGpu, SaxpyReadsBothVectorsFromDram) {
  KernelProfile p = session("pair");
  ASSERT_FALSE(p.kernels.empty());
  const double expected = 2 * 4 * kN;
  double got = p.kernels[0].get_or("dram__bytes_read.sum", -1);
  EXPECT_NEAR(got, expected, 0.05 * expected);
  double written = p.kernels[0].get_or("dram__bytes_write.sum", -1);
  EXPECT_NEAR(written, 4 * kN, 0.05 * 4 * kN);
}

TEST_F(RangeProfGpu, SecondBeginEndOnTheSameSessionWorks) {
  KernelProfile p = session("pair_again");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_NEAR(p.kernels[0].get_or("dram__bytes_read.sum", -1), 2 * 4 * kN, 0.05 * 2 * 4 * kN);
}

TEST_F(RangeProfGpu, LaterSessionsInTheSameProcessWork) {
  KernelProfile cache = session("cache");
  ASSERT_EQ(cache.kernels.size(), 2u);
  EXPECT_EQ(cache.kernels[0].name, "fill_small");
  EXPECT_EQ(cache.kernels[1].name, "read_small");
  KernelProfile one_ms = session("one_ms");
  ASSERT_EQ(one_ms.kernels.size(), 1u);
  EXPECT_EQ(one_ms.kernels[0].name, "fma_chain");
}

TEST_F(RangeProfGpu, CudaCoreFlopCountsAreExact) {
  KernelProfile p = session("one_ms");
  ASSERT_EQ(p.kernels.size(), 1u);
  auto ffma = p.kernels[0].get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
  ASSERT_TRUE(ffma.has_value()) << "the range profiler did not return the SASS FFMA count";
  EXPECT_NEAR(*ffma, kN * kFmaIters, 0.001 * kN * kFmaIters);
}

TEST_F(RangeProfGpu, MoreKernelsThanMaxKernelsIsReported) {
  EXPECT_NE(probe_run().output.find("KP_RP_OVERFLOW reported"), std::string::npos) << probe_run().output;
}

TEST_F(RangeProfGpu, UserReplayReadsWhatKernelReplayReads) {
  KernelProfile kernel = session("pair");
  KernelProfile user = session("user_pair");
  ASSERT_EQ(user.kernels.size(), 2u) << probe_run().output;
  ASSERT_EQ(kernel.kernels.size(), 2u);
  EXPECT_EQ(user.kernels[0].name, "saxpy");
  EXPECT_NEAR(user.kernels[0].get_or("dram__bytes_read.sum", -1), 2 * 4 * kN, 0.05 * 2 * 4 * kN);
  EXPECT_NEAR(user.kernels[0].get_or("dram__bytes_write.sum", -1), 4 * kN, 0.05 * 4 * kN);
  for (size_t k = 0; k < 2; ++k) {
    double a = kernel.kernels[k].get_or("gpu__time_duration.sum", 0),
           b = user.kernels[k].get_or("gpu__time_duration.sum", 0);
    EXPECT_NEAR(b, a, 0.15 * a) << kernel.kernels[k].name;
  }
}

TEST_F(RangeProfGpu, UserReplayCountsExactFlopOnTheOneMsKernel) {
  KernelProfile p = session("user_one_ms");
  ASSERT_EQ(p.kernels.size(), 1u) << probe_run().output;
  EXPECT_EQ(p.kernels[0].name, "fma_chain");
  EXPECT_NEAR(p.kernels[0].get_or("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", -1), kN * kFmaIters,
              0.001 * kN * kFmaIters);
}

TEST_F(RangeProfGpu, UserReplayRefusesPassesThatDiffer) {
  EXPECT_NE(probe_run().output.find("KP_RP_MISMATCH reported"), std::string::npos) << probe_run().output;
  EXPECT_NE(probe_run().output.find("KP_RP_PASSFAIL reported"), std::string::npos) << probe_run().output;
  EXPECT_EQ(session("kernel_after_mismatch").kernels.size(), 2u);  // the session survives a mismatch
  EXPECT_EQ(session("after_broken").kernels.size(), 2u);           // and the process a broken one
}

// A kept session's later collections copy the counter-data image initialised for the first
// one instead of initialising it again: the counts must be what a fresh image gives.
TEST_F(RangeProfGpu, AWarmSessionsCopiedCounterImageCountsExactly) {
  const ProbeRun& warm = warm_run();
  ASSERT_TRUE(warm.error.empty()) << warm.error;
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  for (const char* label : {"warm_new_0", "warm_again_0", "warm_list1_back", "warm_kernel_replay_again"}) {
    auto it = warm.json.find(label);
    ASSERT_NE(it, warm.json.end()) << label << " missing in:\n" << warm.output;
    auto p = parse_range_profile(it->second);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_EQ(p->kernels.size(), 1u) << label;
    EXPECT_EQ(p->kernels[0].name, "fma_chain") << label;
    EXPECT_NEAR(p->kernels[0].get_or("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", -1), kN * kFmaIters,
                0.001 * kN * kFmaIters)
        << label;
  }
  EXPECT_NE(warm.json.at("warm_again_0").find("\"counter_data_copy\""), std::string::npos)
      << "the second collection initialised its image again";
  EXPECT_NE(warm.json.at("warm_new_0").find("\"counter_data_initialize\""), std::string::npos);
}

}  // namespace
}  // namespace kp::profile
