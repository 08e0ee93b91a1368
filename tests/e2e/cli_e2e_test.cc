// e2e tier: drives the real kernelpro binary as a user does, checking exit codes, messages and
// JSON. GPU cases skip without a GPU; the others run everywhere nvcc is.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

class CliE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::create("kp-e2e-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<sys::TempDir>(std::move(*d));
  }
  CliRun kernelpro(std::vector<std::string> args) {
    sys::Command c;
    c.argv = {testing::kernelpro_binary().string()};
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.env_set = {{"XDG_CACHE_HOME", (dir_->path() / "cache").string()}};
    c.timeout = std::chrono::milliseconds(600000);
    auto r = sys::run(c);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (!r.ok()) return {};
    EXPECT_FALSE(r->timed_out);
    return {r->exit_code, r->stdout_text, r->stderr_text};
  }
  fs::path write_task(const std::string& toml) {
    fs::path t = dir_->path() / "task";
    fs::create_directories(t);
    EXPECT_TRUE(write_file((t / "task.toml").string(), toml).ok());
    fs::copy_file(testing::examples_dir() / "gelu" / "reference.cu", t / "reference.cu", fs::copy_options::overwrite_existing);
    return t;
  }
  fs::path bad(const std::string& name) { return testing::test_data_dir() / "candidates" / "gelu" / (name + ".cu"); }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(CliE2e, MissingTaskIsBadInputThatNamesThePath) {
  CliRun r = kernelpro({"eval", "/nonexistent/task"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/task"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("task.toml"), std::string::npos) << r.err;
}

TEST_F(CliE2e, MalformedTomlNamesTheLine) {
  fs::path t = write_task("name = \"x\"\n[[outputs]\nname = \"y\"\n");
  CliRun r = kernelpro({"eval", t.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("task.toml"), std::string::npos) << r.err;
}

TEST_F(CliE2e, UnknownDtypeSaysWhichAreKnown) {
  fs::path t = write_task("name = \"x\"\n[[outputs]]\nname = \"y\"\ndtype = \"fp8\"\nshape = [4]\n");
  CliRun r = kernelpro({"eval", t.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown dtype \"fp8\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bf16"), std::string::npos) << r.err;
}

TEST_F(CliE2e, MissingCandidateFile) {
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), "/nonexistent/cand.cu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/cand.cu"), std::string::npos) << r.err;
}

TEST_F(CliE2e, CompileErrorIsAnOutcomeWithTheSourceLine) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), bad("compile_error").string(), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["outcome"], "compile_error");
  EXPECT_NE(j["reason"].get<std::string>().find("compile_error.cu:"), std::string::npos) << j["reason"];
  EXPECT_FALSE(j["build"]["diagnostics"].empty());
}

TEST_F(CliE2e, MissingEntryPointIsALoadErrorEvenWithoutAGpu) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), bad("no_entry_point").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("load_error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KP_EXPORT int kp_run"), std::string::npos) << r.out;
}

TEST_F(CliE2e, WithoutAGpuEvalBuildsAndSaysSoPlainly) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  if (!testing::gpu_missing()) GTEST_SKIP() << "a GPU is present; the GPU case below covers eval";
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "softmax").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("not_run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No GPU here"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("regs"), std::string::npos) << "the resource report is shown:\n" << r.out;
}

TEST_F(CliE2e, BuildShowsTheResourceReport) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"build", (testing::examples_dir() / "layernorm").string(), "--json", "--arch", "sm_90a"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_FALSE(j["build"]["kernels"].empty());
  EXPECT_GT(j["build"]["kernels"][0]["registers"].get<int>(), 0);
}

TEST_F(CliE2e, DoctorReportsEachItem) {
  CliRun r = kernelpro({"doctor"});
  for (const char* item : {"nvcc", "gpu", "ncu", "counters", "cutlass"})
    EXPECT_NE(r.out.find(item), std::string::npos) << item << " missing from:\n" << r.out;
  if (testing::gpu_missing()) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.out.find("fix:"), std::string::npos);
  }
}

TEST_F(CliE2e, OnAGpuEvalGivesAVerdictWithTimeAndEnergy) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["outcome"], "ok");
  EXPECT_GT(j["time"]["median_s"].get<double>(), 0);
  EXPECT_GT(j["speedup_vs_reference"].get<double>(), 0);
  auto e = j["worker"]["energy"];
  if (e["measured"].get<bool>()) {
    EXPECT_GT(e["joules_per_call"].get<double>(), 0);
    EXPECT_GT(e["average_watts"].get<double>(), e["idle_watts"].get<double>() * 0.5);
    EXPECT_LT(e["average_watts"].get<double>(), 1500);
  } else {
    ADD_FAILURE() << "energy not measured: " << e["unavailable_reason"];
  }
}

TEST_F(CliE2e, OnAGpuShapesTheReferenceRejectsAreBadInput) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  // y is declared with another shape than x: gelu's reference refuses it.
  fs::path t = write_task(R"(name = "gelu_bad_shapes"
[[inputs]]
name = "x"
dtype = "fp32"
shape = [1024]
[[outputs]]
name = "y"
dtype = "fp32"
shape = [512]
)");
  CliRun r = kernelpro({"eval", t.string(), (testing::examples_dir() / "gelu" / "seed.cu").string(), "--no-energy"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("the task is at fault"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("KP_ERR_UNSUPPORTED_SHAPE"), std::string::npos) << r.err;
}

TEST_F(CliE2e, OnAGpuAWrongCandidateExitsOneWithTheReason) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  CliRun r = kernelpro({"eval", (testing::examples_dir() / "gelu").string(), bad("wrong_values").string(), "--no-energy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("incorrect"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kp
