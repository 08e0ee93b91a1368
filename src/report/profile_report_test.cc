#include "report/profile_report.h"

#include <gtest/gtest.h>

namespace kp::report {
namespace {

task::Task gelu_task() {
  task::Task t;
  t.name = "gelu";
  return t;
}

analysis::ProfilePage ok_page() {
  analysis::ProfilePage p;
  p.eval.outcome = eval::Outcome::kOk;
  p.eval.task_name = "gelu";
  p.eval.candidate = "/x/seed.cu";
  p.eval.time.median = 216e-6;
  p.eval.device = eval::DeviceInfo{};
  p.eval.device->name = "NVIDIA H200";
  p.eval.device->cc_major = 9;
  profile::KernelProfile c;
  c.collector = profile::Collector::kCupti;
  c.passes = 15;
  c.replay = "user";
  c.metrics = {"gpu__time_duration.sum"};
  profile::KernelMetrics k;
  k.name = "(anonymous namespace)::gelu_seed(float const*, float*, long)";
  k.grid = {262144, 1, 1};
  k.block = {256, 1, 1};
  k.values = {{"gpu__time_duration.sum", 213000},
              {"dram__bytes_read.sum", 268e6},
              {"l1tex__t_sector_hit_rate.pct", 12.5}};
  c.kernels = {k};
  p.counters = c;
  p.stage2_families = {"memory"};
  analysis::RooflineResult r;
  r.cls = analysis::BottleneckClass::kMemoryBound;
  r.limiter = "DRAM";
  r.sol_fraction = 0.8;
  r.headroom = 1.25;
  r.roofs = {analysis::Roof{"DRAM", "B/s", 3.4e12, 4.27e12, 0.8}};
  r.evidence = {"DRAM 3.40 TB/s = 80% of the calibrated 4.27 TB/s"};
  r.ncu_rule.verdict = "memory";
  r.agrees_with_ncu = true;
  p.roofline = r;
  p.ceilings.source = profile::CeilingSource::kCalibrated;
  p.notes = {"trace: libkp_trace.so was not found"};
  return p;
}

TEST(ProfileReport, ThePageLeadsWithTheClassThenEveryLevel) {
  std::string text = format_profile_text(gelu_task(), ok_page());
  size_t cls = text.find("CLASS     memory-bound: DRAM at 80% of its ceiling; headroom 1.25x");
  ASSERT_NE(cls, std::string::npos) << text;
  EXPECT_LT(cls, text.find("ROOFLINE"));
  EXPECT_NE(text.find("ncu rule  memory"), std::string::npos) << text;
  EXPECT_NE(text.find("agrees"), std::string::npos);
  EXPECT_NE(text.find("gelu_seed"), std::string::npos) << text;  // the anonymous namespace is dropped, not the name
  EXPECT_NE(text.find("(262144,1,1)"), std::string::npos) << text;
  EXPECT_NE(text.find("15 passes, user replay"), std::string::npos) << text;
  EXPECT_NE(text.find("STAGE 2   (memory)"), std::string::npos);
  EXPECT_NE(text.find("l1tex__t_sector_hit_rate.pct"), std::string::npos);  // a stage-2 metric is listed
  EXPECT_NE(text.find("libkp_trace.so was not found"), std::string::npos);
}

TEST(ProfileReport, JsonCarriesTheClassCountersAndNotes) {
  auto j = profile_to_json(gelu_task(), ok_page());
  EXPECT_EQ(j["class"], "memory-bound");
  EXPECT_EQ(j["counters"]["collector"], "cupti");
  EXPECT_EQ(j["counters"]["passes"], 15);
  EXPECT_EQ(j["counters"]["replay"], "user");
  EXPECT_FALSE(j["counters"].contains("replay_fallback"));
  EXPECT_EQ(j["counters"]["kernels"][0]["grid"][0], 262144);
  EXPECT_EQ(j["stage2"][0], "memory");
  EXPECT_EQ(j["notes"].size(), 1u);
  EXPECT_EQ(j["ceilings"]["source"], "calibrated");
}

TEST(ProfileReport, AFailedCandidateIsNotProfiled) {
  analysis::ProfilePage p;
  p.eval.outcome = eval::Outcome::kIncorrect;
  p.eval.reason = "output 'y' in trial 1: 10 of 64 elements differ";
  std::string text = format_profile_text(gelu_task(), p);
  EXPECT_NE(text.find("Nothing was profiled"), std::string::npos) << text;
  EXPECT_EQ(text.find("CLASS"), std::string::npos);
  auto j = profile_to_json(gelu_task(), p);
  EXPECT_FALSE(j.contains("class"));
}

}  // namespace
}  // namespace kp::report
