// The campaign report's numbers (fast_p, geomeans, baselines only from the same card) and its
// printers, from run stores written through the store's own API.
#include "report/campaign_report.h"

#include <cmath>

#include <gtest/gtest.h>

#include "campaign/baseline.h"
#include "campaign/campaign.h"
#include "store/run_store.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

ProblemResult problem(const std::string& group, bool correct, double speedup) {
  ProblemResult p;
  p.id = group + "/" + std::to_string(speedup);
  p.group = group;
  p.correct = correct;
  p.speedup = correct ? speedup : 0;
  return p;
}

TEST(CampaignReport, FastPCountsEveryListedProblemAndGeomeansOnlyTheCorrectOnes) {
  CampaignReport r;
  r.problems = {problem("level1", true, 0.5), problem("level1", true, 1.2), problem("level1", true, 2.0),
                problem("level1", true, 3.0), problem("level1", false, 0), problem("native", true, 4.0)};
  summarize(r);
  ASSERT_EQ(r.groups.size(), 3u);  // level1, native, all
  const GroupSummary& g = r.groups[0];
  EXPECT_EQ(g.group, "level1");
  EXPECT_EQ(g.problems, 5);
  EXPECT_EQ(g.correct, 4);
  EXPECT_DOUBLE_EQ(g.fast_p[0], 4.0 / 5) << "fast_0 is the correctness rate";
  EXPECT_DOUBLE_EQ(g.fast_p[1], 3.0 / 5);
  EXPECT_DOUBLE_EQ(g.fast_p[2], 2.0 / 5);
  EXPECT_DOUBLE_EQ(g.fast_p[3], 1.0 / 5) << "2.0x is not more than 2 times faster";
  EXPECT_NEAR(g.geomean_speedup, std::pow(0.5 * 1.2 * 2.0 * 3.0, 0.25), 1e-12);
  EXPECT_EQ(r.groups[2].group, "all");
  EXPECT_EQ(r.groups[2].problems, 6);
}

class CampaignReportDir : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-creport-").value()); }
  fs::path campaign() const { return dir_->path() / "campaign"; }

  // A campaign of one KernelBench problem whose run store holds a seed (ok, 2 ms) and a faster
  // child (ok, 1 ms) timed on `card`, and an incorrect one.
  void make(const std::string& card) {
    const fs::path py = dir_->path() / "KernelBench" / "level1" / "19_ReLU.py";
    fs::create_directories(py.parent_path());
    campaign::CampaignSpec spec;
    spec.suite = (dir_->path() / "KernelBench").string();
    spec.problems.push_back({"level1/19_ReLU", "kernelbench", py, 1});
    ASSERT_TRUE(campaign::save_campaign(campaign(), spec).ok());
    campaign::ProblemStatus st;
    st.state = campaign::ProblemState::kDone;
    ASSERT_TRUE(campaign::write_problem_status(campaign(), spec.problems[0], st).ok());
    auto s = store::RunStore::open(campaign() / "runs" / "level1-19_ReLU" / "store.db").value();
    const int64_t c0 = s.add_candidate("seed", "").value(), c1 = s.add_candidate("fast", "").value(),
                  c2 = s.add_candidate("wrong", "").value();
    const int64_t root = s.add_node({0, -1, "root", "seed", c0}).value();
    const int64_t fast = s.add_node({0, root, "idea", "float4 loads", c1}).value();
    const int64_t wrong = s.add_node({0, root, "idea", "skip the tail", c2}).value();
    auto report = [&]() {
      return json{{"reference_median_s", 0.004}, {"physics_floor_s", 0.0005}, {"device", {{"name", card}}},
                  {"achieved_bytes_per_s", 2e12}, {"achieved_flops_per_s", 5e11}}
          .dump();
    };
    ASSERT_TRUE(s.record_evaluation(root, {c0, "ok", "", 0.002, 0.5, 2.0, report()}, true, 0.002, 0.5).ok());
    ASSERT_TRUE(s.record_evaluation(fast, {c1, "ok", "", 0.001, 0.25, 4.0, report()}, true, 0.001, 0.25).ok());
    ASSERT_TRUE(s.record_evaluation(wrong, {c2, "incorrect", "max abs error 3", 0, 0, 0, "{}"}, false, 0, 0).ok());
    const int64_t prof = s.add_profile(c1, "{}").value();
    ASSERT_TRUE(s.add_finding(prof, "dram_bound", "info", "DRAM at 80% of peak").ok());
    ASSERT_TRUE(s.add_llm_call({"coder", "openai", "m", "{}", "{}", "", 100, 50, 0.02, 1.0, false}).ok());
    // A baseline measured on the H200.
    json doc = campaign::empty_baseline_doc();
    doc["hardware"] = "NVIDIA H200";
    doc["problems"]["level1"]["19_ReLU.py"]["results"] = {
        {"eager", {{"ok", true}, {"median_ms", 3.0}}}, {"compile", {{"ok", true}, {"median_ms", 2.0}}}};
    ASSERT_TRUE(campaign::write_baseline_files(campaign() / "baselines" / "nvidia-h200", doc).ok());
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(CampaignReportDir, TheBestCandidateIsComparedWithTheBaselinesOfItsOwnCard) {
  make("NVIDIA H200");
  auto r = campaign_report(campaign());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->problems.size(), 1u);
  const ProblemResult& p = r->problems[0];
  EXPECT_TRUE(p.correct);
  EXPECT_DOUBLE_EQ(p.best_s, 0.001);
  EXPECT_DOUBLE_EQ(p.speedup, 4.0);
  EXPECT_NEAR(p.vs_eager, 3.0, 1e-9);
  EXPECT_NEAR(p.vs_compile, 2.0, 1e-9);
  EXPECT_NEAR(p.torch_s, 0.002, 1e-12) << "the faster of eager (3 ms) and torch.compile (2 ms)";
  EXPECT_NEAR(p.vs_torch, 2.0, 1e-9);
  EXPECT_NEAR(p.speed_of_light, 0.5, 1e-9);
  // Where the candidates went: the reference is none of them; the correct one against PyTorch.
  EXPECT_EQ(p.classes, (std::map<std::string, int>{{"correct, faster than PyTorch", 1}, {"incorrect", 1}}));
  EXPECT_EQ(p.candidates, 3);
  EXPECT_EQ(p.llm_calls, 1);
  EXPECT_EQ(p.tokens, 150);
  ASSERT_EQ(p.diagnosis.size(), 1u);
  EXPECT_NE(p.diagnosis[0].find("DRAM at 80%"), std::string::npos);
  int on_path = 0;
  for (const auto& t : p.tree) on_path += t.on_best_path;
  EXPECT_EQ(on_path, 2) << "the path to the best is the root and its fast child";
  EXPECT_TRUE(r->notes.empty());
}

TEST_F(CampaignReportDir, ABaselineOfAnotherCardIsNeverUsed) {
  make("NVIDIA H100 80GB HBM3");
  auto r = campaign_report(campaign());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->problems[0].vs_eager, 0);
  EXPECT_EQ(r->problems[0].vs_compile, 0);
  EXPECT_EQ(r->problems[0].vs_torch, 0);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("NVIDIA H100"), std::string::npos);
}

TEST_F(CampaignReportDir, ThePrintersCarryTheSameNumbers) {
  make("NVIDIA H200");
  auto r = campaign_report(campaign()).value();
  const json j = to_json(r);
  EXPECT_EQ(j["groups"][0]["group"], "level1");
  EXPECT_DOUBLE_EQ(j["groups"][0]["fast_p"]["1.5"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["problems"][0]["speedup"].get<double>(), 4.0);
  const auto csv = split_lines(to_csv(r));
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(split(csv[0], ',')[6], "speedup");
  EXPECT_EQ(split(csv[1], ',')[6], "4");
  const std::string html = to_html(r);
  for (const char* part : {"<table id=\"summary\"", "<table id=\"problems\"", "class=\"plot hist\"", "class=\"plot bars\"",
                           "class=\"plot roofline\"", "class=\"plot tree\"", "DRAM at 80%"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  EXPECT_EQ(html.find("<script"), std::string::npos) << "the page needs no script";
  EXPECT_EQ(html.find("http"), std::string::npos) << "the page loads nothing from the network";
  EXPECT_NE(to_text(r).find("4.00x"), std::string::npos);
  EXPECT_DOUBLE_EQ(j["problems"][0]["vs_torch"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["groups"][0]["fast_p_vs_torch"]["1.5"].get<double>(), 1.0);
  EXPECT_EQ(split(csv[0], ',').back(), "vs_torch");
  EXPECT_EQ(split(csv[1], ',').back(), "2");
  EXPECT_NE(to_text(r).find("KernelBench v3"), std::string::npos);
  EXPECT_NE(html.find("vs faster torch"), std::string::npos);
}

// KernelBench v3's column: against the faster of eager and torch.compile; fast_p over every
// problem of the group, one without that baseline counted as not faster.
TEST(CampaignReport, TheFasterTorchColumnCountsEveryProblem) {
  CampaignReport r;
  r.problems = {problem("level2", true, 3.0), problem("level2", true, 3.0), problem("level2", true, 3.0),
                problem("level2", false, 0)};
  r.problems[0].vs_torch = 1.6;
  r.problems[1].vs_torch = 0.9;  // problem 2 has no baseline on its card
  summarize(r);
  const GroupSummary& g = r.groups[0];
  EXPECT_DOUBLE_EQ(g.fast_p_vs_torch[0], 2.0 / 4);
  EXPECT_DOUBLE_EQ(g.fast_p_vs_torch[1], 1.0 / 4);
  EXPECT_DOUBLE_EQ(g.fast_p_vs_torch[2], 1.0 / 4);
  EXPECT_DOUBLE_EQ(g.fast_p_vs_torch[3], 0.0);
  EXPECT_NEAR(g.geomean_vs_torch, std::sqrt(1.6 * 0.9), 1e-12);
  EXPECT_EQ(g.with_torch, 2);
}

// Under energy-at-matched-time the search may choose a candidate a little slower than the fastest
// and more frugal: the report shows both, and the chosen one's energy against the fastest one's.
TEST_F(CampaignReportDir, AnEnergySearchShowsItsChoiceAgainstTheFastest) {
  make("NVIDIA H200");
  const fs::path run = campaign() / "runs" / "level1-19_ReLU";
  ASSERT_TRUE(write_file((run / "best.json").string(),
                         json{{"objective", "energy-at-matched-time"}, {"best_seconds", 0.00102}, {"best_joules", 0.2}}
                             .dump())
                  .ok());
  auto r = campaign_report(campaign()).value();
  const ProblemResult& p = r.problems[0];
  EXPECT_EQ(p.objective, "energy-at-matched-time");
  EXPECT_DOUBLE_EQ(p.best_s, 0.001) << "the speed columns stay the fastest candidate's";
  EXPECT_DOUBLE_EQ(p.chosen_s, 0.00102);
  ASSERT_TRUE(energy_change(p).has_value());
  EXPECT_NEAR(*energy_change(p), 0.2 / 0.25 - 1, 1e-12);
  EXPECT_NEAR(to_json(r)["problems"][0]["energy_change_vs_fastest"].get<double>(), -0.2, 1e-12);
  EXPECT_NE(to_text(r).find("-20.0%"), std::string::npos) << to_text(r);
  EXPECT_NE(to_html(r).find("<table id=\"energy\""), std::string::npos);

  // A time search has no energy table.
  ASSERT_TRUE(write_file((run / "best.json").string(), json{{"objective", "time"}, {"best_seconds", 0.001}}.dump()).ok());
  auto t = campaign_report(campaign()).value();
  EXPECT_EQ(t.problems[0].chosen_s, 0);
  EXPECT_EQ(to_html(t).find("<table id=\"energy\""), std::string::npos);
}

// A KernelBench run stopped after its seed (the problem's own Model, timed as the root, 1.0x):
// the reference is no solution, so the problem is not correct and fast_0 stays 0 (the H100
// campaign of 2026-12-07 counted eight such problems as correct before this).
TEST_F(CampaignReportDir, AKernelBenchSeedIsTheReferenceAndNoSolution) {
  const fs::path py = dir_->path() / "KernelBench" / "level1" / "21_Sigmoid.py";
  fs::create_directories(py.parent_path());
  campaign::CampaignSpec spec;
  spec.suite = (dir_->path() / "KernelBench").string();
  spec.problems.push_back({"level1/21_Sigmoid", "kernelbench", py, 1});
  ASSERT_TRUE(campaign::save_campaign(campaign(), spec).ok());
  auto s = store::RunStore::open(campaign() / "runs" / "level1-21_Sigmoid" / "store.db").value();
  const int64_t c0 = s.add_candidate("", "class Model: ...").value();
  const int64_t root = s.add_node({0, -1, "root", "seed", c0}).value();
  ASSERT_TRUE(s.record_evaluation(root, {c0, "ok", "", 0.0043, 2.9, 0.99, "{}"}, true, 0.0043, 2.9).ok());
  auto r = campaign_report(campaign()).value();
  EXPECT_FALSE(r.problems[0].correct);
  EXPECT_EQ(r.problems[0].candidates, 1) << "its evaluation still counts as work done";
  EXPECT_DOUBLE_EQ(r.groups[0].fast_p[0], 0.0);
  EXPECT_EQ(r.groups[0].geomean_speedup, 0.0);

  // The model's candidate, recorded as the model loop records it (the verdict under "eval"):
  // its card, reference time and floor are read from there.
  const int64_t c1 = s.add_candidate("__global__ void k() {}", "class ModelNew: ...").value();
  const int64_t child = s.add_node({0, root, "idea", "one fused pass", c1}).value();
  const json verdict = {{"eval",
                         {{"reference_median_s", 0.0043}, {"physics_floor_s", 0.0021},
                          {"device", {{"name", "NVIDIA H200"}}}}},
                        {"feedback", "tools"}};
  ASSERT_TRUE(s.record_evaluation(child, {c1, "ok", "", 0.0021 / 0.9, 1.0, 0.0043 / (0.0021 / 0.9), verdict.dump()},
                                  true, 0.0021 / 0.9, 1.0)
                  .ok());
  auto m = campaign_report(campaign()).value();
  ASSERT_TRUE(m.problems[0].correct);
  EXPECT_EQ(m.problems[0].device, "NVIDIA H200");
  EXPECT_NEAR(m.problems[0].speed_of_light, 0.9, 1e-9);
  EXPECT_DOUBLE_EQ(m.groups[0].fast_p[0], 1.0);
}

// The campaigns run on an H100 on 2026-12-07 (tests/data/campaigns/h100-*, evidence in
// bench/results/h100-2026-12-07-campaign): their figures as the report gives them.
TEST(CampaignReportRecorded, TheH100CampaignsGiveTheirFigures) {
  const fs::path data = testing::test_data_dir() / "campaigns";
  auto ex = campaign_report(data / "h100-examples");
  ASSERT_TRUE(ex.ok()) << ex.error().message;
  ASSERT_EQ(ex->problems.size(), 8u);
  ASSERT_EQ(ex->groups.size(), 1u);
  EXPECT_EQ(ex->groups[0].correct, 7) << "all but the CuTe GEMM, which had no CUTLASS there";
  EXPECT_EQ(ex->groups[0].candidates, 26);
  for (const auto& p : ex->problems) {
    if (p.id == "gemm_bf16_cute") {
      EXPECT_EQ(p.state, campaign::ProblemState::kFailed);
    }
    if (p.id == "softmax") {
      EXPECT_NEAR(p.speedup, 2.31, 0.01);
    }
    if (p.correct) {
      EXPECT_EQ(p.device, "NVIDIA H100 80GB HBM3") << p.id;
    }
  }
  auto kb = campaign_report(data / "h100-kb-manual");
  ASSERT_TRUE(kb.ok()) << kb.error().message;
  ASSERT_EQ(kb->problems.size(), 10u);
  EXPECT_EQ(kb->groups[0].correct, 2) << "the eight unanswered problems have only their reference";
  EXPECT_DOUBLE_EQ(kb->groups[0].fast_p[0], 0.2);
  for (const auto& p : kb->problems) {
    if (p.id != "level1/30_Softsign") continue;
    EXPECT_NEAR(p.speedup, 2.95, 0.01);
    EXPECT_NEAR(p.vs_eager, 2.95, 0.02) << "the baseline measured on the same card";
    EXPECT_NEAR(p.vs_compile, 0.86, 0.01);
    EXPECT_GT(p.speed_of_light, 0.5);
  }
  EXPECT_TRUE(kb->notes.empty()) << kb->notes[0];
}

}  // namespace
}  // namespace kp::report
