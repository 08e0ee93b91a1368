// run_ncu against tests/data/fake_tools/fake_ncu.sh, a shell script standing in for ncu (which
// needs a GPU): it takes the same argv, runs the program, and writes a captured real log, or one
// of ncu's errors, to the --log-file as $FAKE_NCU_MODE says. The real ncu is exercised by
// ncu_runner_gpu_test.cc on the GPU machine.
#include <algorithm>
#include "profile/ncu/ncu_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <optional>

#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;

class NcuRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::create("kp-ncu-test-");
    ASSERT_TRUE(d.ok()) << d.error().message;
    tmp_.emplace(std::move(d).value());
    dir_ = tmp_->path();
    options_.ncu = testing::test_data_dir() / "fake_tools" / "fake_ncu.sh";
    options_.log_file = dir_ / "ncu.log";
  }

  // A program that prints to both streams, as the worker may.
  sys::Command program(const std::string& mode, const std::string& script = "echo out; echo err >&2") const {
    sys::Command c;
    c.argv = {"/bin/sh", "-c", script};
    c.env_set = {{"FAKE_NCU_MODE", mode},
                 {"FAKE_NCU_FIXTURE", (testing::test_data_dir() / "ncu" / "ncu_nvtx_small_raw.csv").string()},
                 {"FAKE_NCU_ARGV", (dir_ / "argv.txt").string()}};
    return c;
  }

  Error run_error(const std::string& mode, const std::string& script = "true") {
    auto r = run_ncu(options_, program(mode, script));
    EXPECT_FALSE(r.ok()) << "mode " << mode << " should fail";
    return r.ok() ? Error{} : r.error();
  }

  std::optional<sys::TempDir> tmp_;
  fs::path dir_;
  NcuOptions options_;
};

TEST(NcuArgv, DefaultRunIsScopedToTheNvtxRangeWithColdCachesAndUnlockedClocks) {
  NcuOptions o;
  o.metrics = {"gpu__time_duration.sum", "dram__bytes_read.sum"};
  o.log_file = "/tmp/x/ncu.log";
  auto argv = ncu_argv(o, "/opt/ncu", {"./kp-worker", "--once", "req.json", "reply.json"});
  // clang-format off
  std::vector<std::string> want = {"/opt/ncu",
                                   "--clock-control", "none",
                                   "--cache-control", "all",
                                   "--replay-mode", "kernel",
                                   "--target-processes", "all",
                                   "--nvtx", "--nvtx-include", "kp_candidate/",
                                   "--metrics", "gpu__time_duration.sum,dram__bytes_read.sum",
                                   "--csv", "--page", "raw", "--print-units", "base",
                                   "--log-file", "/tmp/x/ncu.log",
                                   "./kp-worker", "--once", "req.json", "reply.json"};
  // clang-format on
  EXPECT_EQ(argv, want);
}

TEST(NcuArgv, DefaultsAreTheStageOneListAndTheCandidateRange) {
  NcuOptions o;
  EXPECT_EQ(o.metrics, stage1_metrics());
  EXPECT_EQ(o.nvtx_range, "kp_candidate");
  EXPECT_FALSE(o.set_full);
  EXPECT_EQ(o.timeout_s, 300.0);
}

TEST(NcuArgv, FullSetReplacesTheMetricsAndNoRangeProfilesEverything) {
  NcuOptions o;
  o.set_full = true;
  o.nvtx_range = "";
  o.log_file = "l";
  auto argv = ncu_argv(o, "ncu", {"app"});
  auto has = [&](const std::string& a) { return std::find(argv.begin(), argv.end(), a) != argv.end(); };
  EXPECT_FALSE(has("--metrics"));
  EXPECT_FALSE(has("--nvtx"));
  EXPECT_FALSE(has("--nvtx-include"));
  auto set = std::find(argv.begin(), argv.end(), "--set");
  ASSERT_NE(set, argv.end());
  EXPECT_EQ(*(set + 1), "full");
  EXPECT_EQ(argv.back(), "app");
  EXPECT_TRUE(has("--clock-control"));
}

TEST_F(NcuRunnerTest, SuccessReadsTheLogAndKeepsTheProgramsEnvironmentAndDirectory) {
  sys::Command p = program("ok", "pwd > where.txt; echo \"$MY_VAR\" >> where.txt");
  p.cwd = dir_.string();
  p.env_set.emplace_back("MY_VAR", "set-by-test");
  // Metrics that the captured table (ncu_nvtx_small_raw.csv) has columns for.
  options_.metrics = {"gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
                      "sm__throughput.avg.pct_of_peak_sustained_elapsed"};
  auto r = run_ncu(options_, p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->collector, Collector::kNcu);
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].name, "rowsoftmax(const float *, float *, int)");
  EXPECT_EQ(r->kernels[0].grid, (std::array<int64_t, 3>{4096, 1, 1}));
  EXPECT_EQ(r->kernels[0].get("dram__bytes_read.sum"), 1610642688.0);
  EXPECT_EQ(r->passes, 11);
  EXPECT_EQ(r->metrics, options_.metrics);
  EXPECT_EQ(r->log_path, options_.log_file.string());
  EXPECT_GT(r->wall_s, 0.0);

  auto where = read_file((dir_ / "where.txt").string());
  ASSERT_TRUE(where.ok());
  EXPECT_EQ(*where, dir_.string() + "\nset-by-test\n");
  // The fake received exactly ncu_argv.
  auto argv = read_file((dir_ / "argv.txt").string());
  ASSERT_TRUE(argv.ok());
  std::vector<std::string> want = ncu_argv(options_, options_.ncu, p.argv);
  want.erase(want.begin());  // the fake sees its arguments, not its own path
  EXPECT_EQ(split_lines(*argv), want);
}

// ncu 2025.3 drops a metric it does not know and exits 0 (seen on the H200 with
// sm__no_such_counter.sum): the missing column is how kernelpro tells.
TEST_F(NcuRunnerTest, AMetricWithNoColumnIsNamedAsRejected) {
  options_.metrics = {"gpu__time_duration.sum", "sm__no_such_counter.sum"};
  auto r = run_ncu(options_, program("ok", "true"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("sm__no_such_counter.sum"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("gpu__time_duration.sum"), std::string::npos) << r.error().message;
}

// The two logs real ncu 2025.3 wrote on the H200 (tests/data/ncu/*_h200.log), served by the fake.
TEST_F(NcuRunnerTest, RealH200LogsOfAnUnknownMetricAndAnEmptyRangeAreExplained) {
  options_.metrics = {"gpu__time_duration.sum", "sm__no_such_counter.sum"};
  sys::Command p = program("ok", "true");
  p.env_set.emplace_back("FAKE_NCU_FIXTURE", (testing::test_data_dir() / "ncu" / "ncu_unknown_metric_h200.log").string());
  auto r = run_ncu(options_, p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("sm__no_such_counter.sum"), std::string::npos) << r.error().message;

  options_.metrics = {"gpu__time_duration.sum"};
  p = program("ok", "true");
  p.env_set.emplace_back("FAKE_NCU_FIXTURE", (testing::test_data_dir() / "ncu" / "ncu_no_kernels_h200.log").string());
  r = run_ncu(options_, p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("kp_candidate"), std::string::npos) << r.error().message;
}

TEST(NcuArgv, CacheControlNoneIsPassedForLikeForLikeComparisons) {
  NcuOptions o;
  o.log_file = "/tmp/x.csv";
  o.cache_control = NcuOptions::CacheControl::kNone;
  auto argv = ncu_argv(o, "/usr/bin/ncu", {"prog"});
  auto at = std::find(argv.begin(), argv.end(), "--cache-control");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at + 1), "none");
}

TEST_F(NcuRunnerTest, StaleLogIsNotRead) {
  ASSERT_TRUE(write_file(options_.log_file.string(), "\"ID\",\"Kernel Name\"\n\"\",\"\"\n\"0\",\"stale\"\n").ok());
  Error e = run_error("no_log");
  EXPECT_EQ(e.code, ErrorCode::kTool);
  EXPECT_NE(e.message.find("wrote no log file"), std::string::npos) << e.message;
}

TEST_F(NcuRunnerTest, CounterPermissionIsUnavailableWithTheFix) {
  Error e = run_error("perm");
  EXPECT_EQ(e.code, ErrorCode::kUnavailable);
  EXPECT_NE(e.message.find("ERR_NVGPUCTRPERM"), std::string::npos);
  EXPECT_NE(e.message.find("options nvidia NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  EXPECT_NE(e.message.find("--cap-add=SYS_ADMIN"), std::string::npos);
  EXPECT_NE(e.message.find("https://developer.nvidia.com/ERR_NVGPUCTRPERM"), std::string::npos);
}

TEST_F(NcuRunnerTest, NoKernelInTheRangeIsNotFoundNamingTheRange) {
  Error e = run_error("no_kernels");
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_NE(e.message.find("no kernel ran inside the NVTX range \"kp_candidate\""), std::string::npos) << e.message;
  EXPECT_NE(e.message.find(options_.log_file.string()), std::string::npos);
}

TEST_F(NcuRunnerTest, UnknownMetricIsInvalidInputNamingIt) {
  options_.metrics = {"gpu__time_duration.sum", "sm__no_such_counter.sum"};
  Error e = run_error("bad_metric");
  EXPECT_EQ(e.code, ErrorCode::kInvalidInput);
  EXPECT_NE(e.message.find("rejected the metric sm__no_such_counter.sum"), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find("rejected the metric gpu__time_duration.sum"), std::string::npos) << e.message;
}

TEST_F(NcuRunnerTest, NcuErrorsAreQuoted) {
  Error e = run_error("error");
  EXPECT_EQ(e.code, ErrorCode::kTool);
  EXPECT_NE(e.message.find("==ERROR== Failed to profile \"rowsoftmax\""), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("==ERROR== An error was reported by the driver"), std::string::npos) << e.message;
}

TEST_F(NcuRunnerTest, FailingProgramIsAToolErrorWithItsStderrTail) {
  Error e = run_error("ok", "echo 'cudaMalloc failed: out of memory' >&2; exit 3");
  EXPECT_EQ(e.code, ErrorCode::kTool);
  EXPECT_NE(e.message.find("exited with status 3"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("The application returned an error code (3)"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("cudaMalloc failed: out of memory"), std::string::npos) << e.message;
}

TEST_F(NcuRunnerTest, HangIsATimeout) {
  options_.timeout_s = 0.3;
  Error e = run_error("hang");
  EXPECT_EQ(e.code, ErrorCode::kTimeout);
  EXPECT_NE(e.message.find("ran past its limit"), std::string::npos) << e.message;
}

TEST_F(NcuRunnerTest, BadOptionsAreRejectedBeforeRunning) {
  NcuOptions o = options_;
  o.metrics.clear();
  auto r = run_ncu(o, program("ok"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);

  o = options_;
  o.log_file.clear();
  r = run_ncu(o, program("ok"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);

  r = run_ncu(options_, sys::Command{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_FALSE(fs::exists(dir_ / "argv.txt")) << "nothing ran";
}

TEST_F(NcuRunnerTest, FindNcuHonoursAnExplicitPathAndSaysWhatToDo) {
  auto found = find_ncu(options_);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, options_.ncu);

  NcuOptions missing;
  missing.ncu = dir_ / "no-such-ncu";
  auto r = find_ncu(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find(missing.ncu.string()), std::string::npos);
}

TEST_F(NcuRunnerTest, FindNcuSearchesPath) {
  fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  ASSERT_TRUE(write_file((bin / "ncu").string(), "#!/bin/sh\n").ok());
  ::chmod((bin / "ncu").c_str(), 0755);
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  ::setenv("PATH", (dir_.string() + "/empty:" + bin.string()).c_str(), 1);
  auto r = find_ncu(NcuOptions{});
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, bin / "ncu");
}

TEST(NcuNotFound, MessageNamesWhereItLookedAndTheFix) {
  if (fs::exists("/usr/local/cuda/bin/ncu") || fs::exists("/opt/nvidia/nsight-compute"))
    GTEST_SKIP() << "ncu is installed on this machine, so the not-found message cannot be seen";
  const char* old = std::getenv("PATH");
  std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent", 1);
  auto r = find_ncu(NcuOptions{});
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message,
            "ncu (Nsight Compute) not found in PATH, /usr/local/cuda/bin or /opt/nvidia/nsight-compute; install "
            "Nsight Compute 2023.1 or newer or pass --ncu PATH");
}

TEST(NcuVersion, ParsesTheVersionLine) {
  auto v = parse_ncu_version(
      "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n"
      "Version 2025.3.1.0 (build 36398880) (public-release)\n");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, "2025.3.1.0");
  auto bad = parse_ncu_version("bash: ncu: command not found\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kTool);
  EXPECT_NE(bad.error().message.find("command not found"), std::string::npos);
}

TEST(NcuVersion, RunsTheTool) {
  auto v = ncu_version(testing::test_data_dir() / "fake_tools" / "fake_ncu.sh");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, "2025.3.1.0");
  auto missing = ncu_version("/nonexistent/ncu");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace kp::profile
