#include "report/eval_report.h"
#include "eval/result_json.h"

#include <gtest/gtest.h>

namespace kp::report {
namespace {

eval::EvalResult sample_result() {
  eval::EvalResult r;
  r.outcome = eval::Outcome::kOk;
  r.task_name = "gelu";
  r.candidate = "seed.cu";
  build::BuildResult b;
  b.ok = true;
  b.tune = {{"BLOCK", 256}};
  build::KernelResources k;
  k.name = "(anonymous namespace)::gelu_seed(float const*, float*, long)";
  k.registers = 14;
  k.spill_store_bytes = 8;
  b.resources.kernels.push_back(k);
  r.candidate_build = b;
  eval::WorkerReport w;
  w.outcome = eval::Outcome::kOk;
  w.trials_run = 3;
  w.output_names = {"y"};
  eval::OutputCheck c;
  c.passed = true;
  c.rel_norm_error = 4.4e-8;
  w.checks = {c};
  w.timing = eval::TimingReport{"events", {2e-4, 2.2e-4, 2.1e-4}, {}, 5, 3, 1 << 28};
  eval::EnergyReport e;
  e.measured = true;
  e.joules_per_call = 0.125;
  e.average_watts = 581;
  e.idle_watts = 121;
  w.energy = e;
  r.report = w;
  r.time = eval::summarize(w.timing->samples_s);
  r.reference_seconds = 5.3e-4;
  r.speedup_vs_reference = r.reference_seconds / r.time.median;
  return r;
}

task::Task sample_task() {
  task::Task t;
  t.name = "gelu";
  t.description = "exact GELU";
  t.ideal_bytes = 512.0 * (1 << 20);
  return t;
}

TEST(EvalReport, TextShowsVerdictTimeSpeedupEnergyAndResources) {
  std::string text = format_eval_text(sample_task(), sample_result());
  EXPECT_NE(text.find("verdict    ok"), std::string::npos) << text;
  EXPECT_NE(text.find("210 us median"), std::string::npos) << text;
  EXPECT_NE(text.find("speedup 2.52x"), std::string::npos) << text;
  EXPECT_NE(text.find("0.125 J/call"), std::string::npos) << text;
  EXPECT_NE(text.find("gelu_seed "), std::string::npos) << "short kernel name:\n" << text;
  EXPECT_NE(text.find("<- spills"), std::string::npos) << text;
  EXPECT_NE(text.find("BLOCK=256"), std::string::npos) << text;
}

TEST(EvalReport, JsonCarriesTheSameFigures) {
  auto j = eval::result_to_json(sample_task(), sample_result());
  EXPECT_EQ(j["outcome"], "ok");
  EXPECT_DOUBLE_EQ(j["time"]["median_s"].get<double>(), 2.1e-4);
  EXPECT_EQ(j["time"]["samples"].get<int>(), 3);
  EXPECT_NEAR(j["speedup_vs_reference"].get<double>(), 5.3e-4 / 2.1e-4, 1e-12);
  EXPECT_EQ(j["build"]["kernels"][0]["registers"].get<int>(), 14);
  EXPECT_DOUBLE_EQ(j["worker"]["energy"]["joules_per_call"].get<double>(), 0.125);
}

TEST(EvalReport, FailureShowsTheReasonAndNoTiming) {
  eval::EvalResult r;
  r.outcome = eval::Outcome::kIncorrect;
  r.reason = "output 'y' in trial 1: 3 of 10 elements out of tolerance";
  std::string text = format_eval_text(sample_task(), r);
  EXPECT_NE(text.find("verdict    incorrect"), std::string::npos);
  EXPECT_NE(text.find(r.reason), std::string::npos);
  EXPECT_EQ(text.find("median"), std::string::npos);
  EXPECT_EQ(text.find("cheat"), std::string::npos) << "no cheat line without a cheat:\n" << text;
}

TEST(EvalReport, CheatTagIsPrintedAndInTheJson) {
  eval::EvalResult r;
  r.outcome = eval::Outcome::kRejected;
  r.cheat = "forbidden_library";
  r.reason = "the candidate calls dlopen";
  std::string text = format_eval_text(sample_task(), r);
  EXPECT_NE(text.find("verdict    rejected"), std::string::npos) << text;
  EXPECT_NE(text.find("cheat      forbidden_library"), std::string::npos) << text;
  auto j = eval::result_to_json(sample_task(), r);
  EXPECT_EQ(j["cheat"], "forbidden_library");
  EXPECT_EQ(eval::result_to_json(sample_task(), sample_result())["cheat"], "");
}

task::Task kernelbench_task() {
  task::Task t;
  t.kind = task::TaskKind::kKernelBench;
  t.name = "23_Softmax.py";
  t.description = "Simple model that performs a Softmax activation.";
  t.reference_path = "/suite/level1/23_Softmax.py";
  t.level = 1;
  t.problem_id = 23;
  return t;
}

eval::EvalResult kernelbench_result() {
  eval::EvalResult r;
  r.outcome = eval::Outcome::kOk;
  r.task_name = "23_Softmax.py";
  r.candidate = "/c/softmax.py";
  r.form = eval::CandidateForm::kPrebuilt;
  r.library_source = "/c/softmax.cu";
  build::BuildResult b;
  b.ok = true;
  r.candidate_build = b;
  eval::WorkerReport w;
  w.outcome = eval::Outcome::kOk;
  w.timing = eval::TimingReport{"events", {1e-4, 1e-4, 1e-4}, {}, 5, 1, 0};
  w.reference_seconds = 3e-4;
  w.physics_floor_s = 2e-5;
  w.physics_floor_basis = "128 MiB at 4.8 TB/s";
  w.kernels = {"softmax_rows(float const*, float*, int)", "void at::native::elementwise_kernel<128, 4>(int)"};
  r.report = w;
  r.time = eval::summarize(w.timing->samples_s);
  r.reference_seconds = w.reference_seconds;
  r.speedup_vs_reference = 3.0;
  return r;
}

TEST(EvalReport, KernelBenchTextShowsProblemFormSpeedupFloorAndKernels) {
  std::string text = format_eval_text(kernelbench_task(), kernelbench_result());
  EXPECT_NE(text.find("problem    23_Softmax.py  (KernelBench level 1, problem 23"), std::string::npos) << text;
  EXPECT_NE(text.find("prebuilt: /c/softmax.cu"), std::string::npos) << text;
  EXPECT_NE(text.find("100 us median"), std::string::npos) << text;
  EXPECT_EQ(text.find("L2 flushed"), std::string::npos) << "the worker flushed nothing:\n" << text;
  EXPECT_NE(text.find("same run)  -> speedup 3.00x"), std::string::npos) << text;
  EXPECT_NE(text.find("20.0 us per call is the physics floor (128 MiB at 4.8 TB/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels    2 launched per call"), std::string::npos) << text;
  EXPECT_NE(text.find("  softmax_rows\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("cheat"), std::string::npos) << text;
}

TEST(EvalReport, KernelBenchRejectionNamesTheCheat) {
  auto r = kernelbench_result();
  r.outcome = eval::Outcome::kRejected;
  r.reason = "the candidate launched only PyTorch's kernels";
  r.report->cheat = "no_custom_kernel";
  r.cheat = r.report->cheat;  // as the Evaluator copies it
  r.form = eval::CandidateForm::kLoadInline;
  std::string text = format_eval_text(kernelbench_task(), r);
  EXPECT_NE(text.find("cheat      no_custom_kernel"), std::string::npos) << text;
  EXPECT_NE(text.find("form       load_inline"), std::string::npos) << text;
}

TEST(EvalReport, KernelBenchJsonNamesTheProblemAndForm) {
  auto j = eval::result_to_json(kernelbench_task(), kernelbench_result());
  EXPECT_EQ(j["kind"], "kernelbench");
  EXPECT_EQ(j["problem"]["level"], 1);
  EXPECT_EQ(j["problem"]["problem_id"], 23);
  EXPECT_EQ(j["problem"]["path"], "/suite/level1/23_Softmax.py");
  EXPECT_EQ(j["candidate_form"], "prebuilt");
  EXPECT_EQ(j["library_source"], "/c/softmax.cu");
  EXPECT_DOUBLE_EQ(j["physics_floor_s"].get<double>(), 2e-5);
  EXPECT_EQ(j["kernels"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["speedup_vs_reference"].get<double>(), 3.0);
  EXPECT_EQ(eval::result_to_json(sample_task(), sample_result())["kind"], "native");
}

}  // namespace
}  // namespace kp::report
