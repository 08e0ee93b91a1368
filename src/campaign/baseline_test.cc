#include "campaign/baseline.h"

#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sys/temp_dir.h"
#include "util/strings.h"

namespace kp::campaign {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kProblem =
    "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return []\n"
    "def get_init_inputs():\n    return []\n";

eval::BaselineModeResult ok_mode(double mean_ms) {
  eval::BaselineModeResult m;
  m.ok = true;
  m.mean_ms = mean_ms;
  m.std_ms = mean_ms / 100;
  m.min_ms = mean_ms * 0.9;
  m.max_ms = mean_ms * 1.1;
  m.median_ms = mean_ms;
  m.num_trials = 100;
  return m;
}

eval::BaselineModeResult failed_mode(const std::string& error) {
  eval::BaselineModeResult m;
  m.error = error;
  return m;
}

eval::BaselineReply reply(std::optional<double> eager_ms, std::optional<double> compile_ms) {
  eval::BaselineReply r;
  r.hardware = "NVIDIA H200";
  r.device = "cuda:0";
  r.torch_version = "2.11.0";
  r.results["eager"] = eager_ms ? ok_mode(*eager_ms) : failed_mode("eager broke");
  r.results["compile"] = compile_ms ? ok_mode(*compile_ms) : failed_mode("Unsupported: x");
  return r;
}

SuiteProblem problem(int level, int id, const std::string& name) { return {level, id, name, "/s/" + name}; }

const std::vector<std::string> kBoth = {"eager", "compile"};
const BaselineRecordInfo kInfo{5, 100, "2025-01-01T00:00:00Z", 3.0};

TEST(Baseline, RoundsToSignificantDigits) {
  EXPECT_EQ(round_significant(1.23456, 3), 1.23);
  EXPECT_EQ(round_significant(0.000123456, 3), 0.000123);
  EXPECT_EQ(round_significant(12345.0, 3), 12300.0);
  EXPECT_EQ(round_significant(0.9996, 3), 1.0);
  EXPECT_EQ(round_significant(2.00049, 3), 2.0);
  EXPECT_EQ(round_significant(-4.5678, 3), -4.57);
  EXPECT_EQ(round_significant(0.0, 3), 0.0);
  // Prints as the short decimal.
  EXPECT_EQ(json(round_significant(0.0123456, 3)).dump(), "0.0123");
}

TEST(Baseline, GpuSlug) {
  EXPECT_EQ(gpu_slug("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(gpu_slug("  NVIDIA GeForce RTX 4090 (laptop) "), "nvidia-geforce-rtx-4090-laptop");
  EXPECT_EQ(gpu_slug(""), "unknown-gpu");
}

TEST(Baseline, ModesToRunResumesPerModeAndRetriesFailuresOnlyWhenAsked) {
  json doc = empty_baseline_doc();
  SuiteProblem a = problem(1, 1, "1_A.py"), b = problem(1, 2, "2_B.py"), c = problem(2, 1, "1_C.py");
  EXPECT_EQ(modes_to_run(doc, a, kBoth, RetryFailed::kNo), kBoth);
  record_baseline(doc, a, kBoth, reply(2.0, 1.0), kInfo);
  record_baseline(doc, b, kBoth, reply(2.0, std::nullopt), kInfo);
  record_baseline(doc, c, {"eager"}, reply(2.0, 1.0), kInfo);
  EXPECT_TRUE(modes_to_run(doc, a, kBoth, RetryFailed::kNo).empty());
  EXPECT_TRUE(modes_to_run(doc, a, kBoth, RetryFailed::kYes).empty());
  EXPECT_TRUE(modes_to_run(doc, b, kBoth, RetryFailed::kNo).empty()) << "a failure is recorded data";
  EXPECT_EQ(modes_to_run(doc, b, kBoth, RetryFailed::kYes), std::vector<std::string>{"compile"});
  EXPECT_EQ(modes_to_run(doc, c, kBoth, RetryFailed::kNo), std::vector<std::string>{"compile"})
      << "only eager was asked";
  EXPECT_TRUE(modes_to_run(doc, c, {"eager"}, RetryFailed::kNo).empty());
}

TEST(Baseline, RecordReplacesTheMeasuredModesAndKeepsTheOthers) {
  json doc = empty_baseline_doc();
  SuiteProblem b = problem(1, 2, "2_B.py");
  record_baseline(doc, b, kBoth, reply(2.0, std::nullopt), kInfo);
  const json& rec = doc["problems"]["level1"]["2_B.py"];
  EXPECT_EQ(rec["results"]["compile"]["ok"], false);
  EXPECT_EQ(rec["results"]["compile"]["error"], "Unsupported: x");
  EXPECT_EQ(rec["hardware"], "NVIDIA H200");
  EXPECT_EQ(doc["torch_version"], "2.11.0");
  // A retry of compile alone: eager stays as it was.
  auto retry = reply(9.0, 1.5);
  record_baseline(doc, b, {"compile"}, retry, BaselineRecordInfo{5, 100, "2025-01-02T00:00:00Z", 1.0});
  EXPECT_EQ(rec["results"]["compile"]["ok"], true);
  EXPECT_DOUBLE_EQ(rec["results"]["compile"]["mean_ms"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(rec["results"]["eager"]["mean_ms"].get<double>(), 2.0);
  EXPECT_EQ(rec["results"]["eager"]["date"], "2025-01-01T00:00:00Z");
  EXPECT_EQ(rec["results"]["compile"]["date"], "2025-01-02T00:00:00Z");
  EXPECT_EQ(doc["updated"], "2025-01-02T00:00:00Z");
  // A crash reply has no hardware: what is recorded stays.
  eval::BaselineReply crash;
  crash.results["eager"] = failed_mode("the worker died");
  record_baseline(doc, b, {"eager"}, crash, kInfo);
  EXPECT_EQ(rec["hardware"], "NVIDIA H200");
  EXPECT_EQ(rec["results"]["eager"]["error"], "the worker died");
}

TEST(Baseline, KernelBenchFormatRoundsAndLeavesFailuresOut) {
  json doc = empty_baseline_doc();
  record_baseline(doc, problem(1, 23, "23_Softmax.py"), kBoth, reply(2.34567, std::nullopt), kInfo);
  record_baseline(doc, problem(2, 1, "1_Conv.py"), kBoth, reply(std::nullopt, 0.0123456), kInfo);
  json eager = kernelbench_timing_json(doc, "eager");
  EXPECT_EQ(eager, json::parse(R"({"level1":{"23_Softmax.py":{"mean":2.35,"std":0.0235,"min":2.11,"max":2.58,
      "num_trials":100,"hardware":"NVIDIA H200","device":"cuda:0"}}})"))
      << eager.dump();
  json compile = kernelbench_timing_json(doc, "compile");
  ASSERT_TRUE(compile.contains("level2"));
  EXPECT_FALSE(compile.contains("level1"));
  EXPECT_EQ(compile["level2"]["1_Conv.py"]["mean"].dump(), "0.0123");
}

TEST(Baseline, SummaryCountsWinsAndTakesTheGeometricMeanOfRatios) {
  json doc = empty_baseline_doc();
  record_baseline(doc, problem(1, 1, "1_A.py"), kBoth, reply(2.0, 1.0), kInfo);   // compile 2x faster
  record_baseline(doc, problem(1, 2, "2_B.py"), kBoth, reply(1.0, 2.0), kInfo);   // compile 2x slower
  record_baseline(doc, problem(1, 3, "3_C.py"), kBoth, reply(1.04, 1.0), kInfo);  // faster, not by 5%
  record_baseline(doc, problem(1, 4, "4_D.py"), kBoth, reply(1.0, std::nullopt), kInfo);
  record_baseline(doc, problem(2, 1, "1_E.py"), kBoth, reply(std::nullopt, std::nullopt), kInfo);
  auto s = summarize_baselines(doc);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].level, 1);
  EXPECT_EQ(s[0].recorded, 4);
  EXPECT_EQ(s[0].measured, 3);
  EXPECT_EQ(s[0].failed, 1);
  EXPECT_EQ(s[0].both, 3);
  EXPECT_EQ(s[0].compile_faster, 2);
  EXPECT_EQ(s[0].compile_faster_5pct, 1);
  EXPECT_NEAR(s[0].geomean_eager_over_compile, std::cbrt(2.0 * 0.5 * 1.04), 1e-12);
  EXPECT_EQ(s[1].failed, 1);
  EXPECT_EQ(s[1].both, 0);
  std::string line = format_level_summary(s[0]);
  EXPECT_NE(line.find("level1: 3 measured, 1 failed"), std::string::npos) << line;
  EXPECT_NE(line.find("beats eager on 2 of 3 (1 by >5%)"), std::string::npos) << line;
  EXPECT_NE(format_level_summary(s[1]).find("no problem with both"), std::string::npos);
}

TEST(Baseline, GeometricMeanDoesNotOverflowOverManyProblems) {
  json doc = empty_baseline_doc();
  for (int i = 1; i <= 400; ++i)
    record_baseline(doc, problem(1, i, fmt::format("{}_P.py", i)), kBoth, reply(1e4, 1e-2), kInfo);
  auto s = summarize_baselines(doc);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0].geomean_eager_over_compile, 1e6, 1e-3);
}

class BaselineFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-bl-").value()); }
  void write(const std::string& rel, const std::string& text) {
    fs::path p = dir_->path() / rel;
    fs::create_directories(p.parent_path());
    ASSERT_TRUE(write_file(p.string(), text).ok());
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(BaselineFiles, ListsLevelsSortedByProblemIdAndSkipsNonProblems) {
  write("suite/level1/10_Ten.py", kProblem);
  write("suite/level1/2_Two.py", kProblem);
  write("suite/level1/helper.py", "x = 1\n");
  write("suite/level1/notes.txt", "");
  write("suite/level2/1_One.py", kProblem);
  write("suite/level3/1_Other.py", kProblem);
  auto l = list_suite(dir_->path() / "suite", {1, 2}, {});
  ASSERT_TRUE(l.ok()) << l.error().message;
  ASSERT_EQ(l->problems.size(), 3u);
  EXPECT_EQ(l->problems[0].name, "2_Two.py");
  EXPECT_EQ(l->problems[0].problem_id, 2);
  EXPECT_EQ(l->problems[1].name, "10_Ten.py");
  EXPECT_EQ(l->problems[2].level, 2);
  EXPECT_TRUE(l->problems[2].path.is_absolute());
  ASSERT_EQ(l->skipped.size(), 1u);
  EXPECT_NE(l->skipped[0].find("helper.py"), std::string::npos);

  auto only = list_suite(dir_->path() / "suite", {1, 2, 3}, {"10_Ten", "1_Other.py"});
  ASSERT_TRUE(only.ok());
  ASSERT_EQ(only->problems.size(), 2u);
  EXPECT_EQ(only->problems[1].level, 3);

  auto unknown = list_suite(dir_->path() / "suite", {1}, {"99_Nope"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(unknown.error().message.find("99_Nope"), std::string::npos);

  auto missing = list_suite(dir_->path() / "nope", {1}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);

  auto empty = list_suite(dir_->path() / "suite", {4}, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("level4"), std::string::npos);
}

TEST_F(BaselineFiles, WritesTheThreeFilesAndReadsTheDocumentBack) {
  json doc = empty_baseline_doc();
  record_baseline(doc, problem(1, 1, "1_A.py"), kBoth, reply(2.0, 1.0), kInfo);
  ASSERT_TRUE(write_baseline_files(dir_->path() / "out", doc).ok());
  for (const char* f : {kBaselineFile, kEagerTimingFile, kCompileTimingFile})
    EXPECT_TRUE(fs::exists(dir_->path() / "out" / f)) << f;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_->path() / "out"), fs::directory_iterator()), 3)
      << "no temp file is left";
  auto back = load_baseline_doc(dir_->path() / "out" / kBaselineFile);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, doc);
  auto none = load_baseline_doc(dir_->path() / "absent.json");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)["problems"].empty());
  write("bad.json", "{\"level1\":{}}");
  auto bad = load_baseline_doc(dir_->path() / "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(bad.error().message.find("bad.json"), std::string::npos);
}

}  // namespace
}  // namespace kp::campaign
