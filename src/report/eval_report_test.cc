#include "report/eval_report.h"

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
  auto j = eval_to_json(sample_task(), sample_result());
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
}

}  // namespace
}  // namespace kp::report
