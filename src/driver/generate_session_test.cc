// The generate flow with the model behind a real loopback server (OpenAI wire format) and the
// evaluator's verdicts given by a fake workbench: a GPU's outcomes (ok, incorrect) cannot be produced
// on a CPU, and the flow around them is what is under test here. The real evaluator is used
// by tests/e2e/generate_e2e_test.cc.
#include "driver/generate_session.h"

#include <gtest/gtest.h>

#include "llm/client.h"
#include "sys/temp_dir.h"
#include "task/native_task_loader.h"
#include "tests/support/fake_llm_server.h"
#include "tests/support/fake_workbench.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::driver {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::openai_completion;

const char* kCandidate = "```cuda\nKP_EXPORT int kp_run(kp_args* args) { return 0; }\n```";

TEST(GenerateSession, AnalystAndPlannerReadTheSeedsAnalysisThenTheDebuggerFixesAWrongAnswer) {
  testing::FakeLlmServer server;
  server.push({.body = openai_completion(R"({"tools": ["warp_stalls"]})")});
  server.push(
      {.body = openai_completion(R"({"direction": "float4 loads and a grid-stride loop", "why": "DRAM at 71%"})")});
  server.push({.body = openai_completion(kCandidate)});
  server.push({.body = openai_completion(kCandidate)});
  auto transport = llm::make_curl_transport();
  llm::HttpProviderOptions po;
  po.base_url = server.base_url();
  auto provider = llm::make_openai_provider(po, *transport);
  sys::TempDir dir = sys::TempDir::create("kp-gen-").value();
  llm::ClientOptions copts;
  copts.cache = llm::CacheMode::kReadWrite;
  copts.cache_dir = (dir.path() / "llm-cache").string();
  llm::LlmClient client(*provider, copts, {[](double) {}, [] { return 0.5; }, nullptr});
  auto prompts = agent::PromptLibrary::load((kp::testing::source_dir() / "prompts").string());
  ASSERT_TRUE(prompts.ok());
  agent::Agents agents(client, *prompts, "m", {.tools = false});
  auto task = task::load_native_task((kp::testing::examples_dir() / "gelu").string());
  ASSERT_TRUE(task.ok()) << task.error().message;

  int evaluations = 0;
  std::vector<fs::path> analyzed;
  testing::FakeWorkbench bench;
  bench.on_evaluate = [&](const CandidatePaths& c) -> Result<eval::EvalResult> {
    const fs::path& cu = c.cu;
    eval::EvalResult r;
    EXPECT_TRUE(fs::exists(cu));
    if (++evaluations == 1) {
      r.outcome = eval::Outcome::kIncorrect;
      r.reason = "output y: 512 of 67108864 elements off";
      eval::WorkerReport w;
      eval::OutputCheck c;
      c.elements = 67108864;
      c.mismatches = 512;
      c.max_abs_error = 0.25;
      c.reason = "first bad element [67108352]: got 0, expected 1.2";
      w.checks = {c};
      w.output_names = {"y"};
      r.report = w;
    } else {
      r.outcome = eval::Outcome::kOk;
      r.speedup_vs_reference = 1.4;
    }
    return r;
  };
  std::vector<std::vector<std::string>> extras;
  bench.on_analyze = [&](const CandidatePaths& c, const std::vector<std::string>& extra) -> Result<Analysis> {
    const fs::path& cu = c.cu;
    analyzed.push_back(cu);
    extras.push_back(extra);
    if (!extra.empty())
      return Analysis{"MAIN BOTTLENECK: memory-bound, DRAM at 71% of its roof; stalls: long scoreboard", {}, "", "", {}};
    return Analysis{"MAIN BOTTLENECK: memory-bound, DRAM at 71% of its roof", {"roofline_headroom"}, "", "", {}};
  };
  bench.offers = {{"roofline_headroom", "the roof"}, {"warp_stalls", "why warps wait"}};
  GenerateOptions o;
  o.run_dir = dir.path() / "run";
  o.gpu = "NVIDIA H200";
  auto report = run_generate(*task, agents, bench, {}, o);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->direction, "float4 loads and a grid-stride loop (why: DRAM at 71%)");
  ASSERT_EQ(report->attempts.size(), 2u);
  EXPECT_EQ(report->attempts[0].outcome, eval::Outcome::kIncorrect);
  EXPECT_EQ(report->attempts[1].role, "debugger");
  EXPECT_EQ(report->outcome, eval::Outcome::kOk);
  EXPECT_EQ(report->feedback, "MAIN BOTTLENECK: memory-bound, DRAM at 71% of its roof");
  ASSERT_EQ(analyzed.size(), 3u);  // the seed, the seed with the analyst's tool, the final candidate
  EXPECT_EQ(analyzed[0], *task->seed_path);
  EXPECT_EQ(analyzed[1], *task->seed_path);
  EXPECT_EQ(extras[1], std::vector<std::string>{"warp_stalls"});
  EXPECT_TRUE(extras[2].empty());

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  const std::string analyst = json::parse(requests[0].body)["messages"][1]["content"];
  EXPECT_NE(analyst.find("- warp_stalls: why warps wait"), std::string::npos) << analyst;
  EXPECT_NE(analyst.find("Tools that produced this analysis: roofline_headroom."), std::string::npos) << analyst;
  const std::string planner = json::parse(requests[1].body)["messages"][1]["content"];
  EXPECT_NE(planner.find("stalls: long scoreboard"), std::string::npos)
      << "the planner reads the analysis with the tool";
  const std::string coder = json::parse(requests[2].body)["messages"][1]["content"];
  EXPECT_NE(coder.find("on NVIDIA H200"), std::string::npos);
  EXPECT_NE(
      coder.find("## What profiling says about it\nMAIN BOTTLENECK: memory-bound, DRAM at 71% of its roof; stalls"),
      std::string::npos);
  EXPECT_NE(coder.find("## What to change this time\nfloat4 loads"), std::string::npos);
  const std::string debugger = json::parse(requests[3].body)["messages"][1]["content"];
  EXPECT_NE(debugger.find("failed: incorrect"), std::string::npos);
  EXPECT_NE(debugger.find("output y: 512 of 67108864 elements off, 0 unwritten, 0 NaN/Inf; max abs error 0.25"),
            std::string::npos)
      << debugger;
  auto saved = read_file((o.run_dir / "generate.json").string());
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(json::parse(*saved)["attempts"].size(), 2u);

  // Resumed (here on a machine that names its GPU differently): the same questions from the
  // kept facts, so the cache answers them all; no evaluation or profiling is done again.
  llm::LlmClient again(*provider, copts, {[](double) {}, [] { return 0.5; }, nullptr});
  agent::Agents agents2(again, *prompts, "m", {.tools = false});
  o.gpu = "no GPU here";
  auto resumed = run_generate(*task, agents2, bench, {}, o);
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(server.requests().size(), 4u) << "every call answered from the cache";
  EXPECT_EQ(evaluations, 2);
  EXPECT_EQ(analyzed.size(), 3u);
  EXPECT_EQ(resumed->to_json(), report->to_json());

  // A changed candidate is evaluated again: its verdict is not the kept one's.
  ASSERT_TRUE(
      write_file((o.run_dir / "attempt-2" / "verdict.json").string(), R"({"files_sha": "another", "outcome": "ok"})")
          .ok());
  auto third = run_generate(*task, agents2, bench, {}, o);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(evaluations, 3);
}

TEST(GenerateSession, AnAnalystsToolsWaitForAGpu) {
  testing::FakeLlmServer server;
  server.push({.body = openai_completion(R"({"tools": ["warp_stalls"]})")});
  auto transport = llm::make_curl_transport();
  llm::HttpProviderOptions po;
  po.base_url = server.base_url();
  auto provider = llm::make_openai_provider(po, *transport);
  llm::LlmClient client(*provider, {}, {[](double) {}, [] { return 0.5; }, nullptr});
  auto prompts = agent::PromptLibrary::load((kp::testing::source_dir() / "prompts").string());
  ASSERT_TRUE(prompts.ok());
  agent::Agents agents(client, *prompts, "m", {.tools = false});
  auto task = task::load_native_task((kp::testing::examples_dir() / "gelu").string());
  ASSERT_TRUE(task.ok());
  // The seed was profiled on the GPU machine; the analyst's question is answered on a laptop.
  sys::TempDir dir = sys::TempDir::create("kp-gen-").value();
  GenerateOptions o;
  o.run_dir = dir.path() / "run";
  fs::create_directories(o.run_dir);
  ASSERT_TRUE(write_file((o.run_dir / "session.json").string(),
                         R"({"gpu": "NVIDIA H200", "seed_analyzed": true, "seed_feedback": "latency-bound",
                             "seed_tools": ["roofline_headroom"], "tools_chosen": false})")
                  .ok());
  o.gpu = "no GPU here";
  o.analyze_seed = false;
  int calls = 0;
  testing::FakeWorkbench bench;
  bench.on_evaluate = [&](const CandidatePaths&) -> Result<eval::EvalResult> {
    ++calls;
    return eval::EvalResult{};
  };
  bench.on_analyze = [&](const CandidatePaths&, const std::vector<std::string>&) -> Result<Analysis> {
    ++calls;
    return Analysis{};
  };
  bench.offers = {{"roofline_headroom", "the roof"}, {"warp_stalls", "why warps wait"}};
  auto report = run_generate(*task, agents, bench, {}, o);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->outcome, eval::Outcome::kNotRun);
  EXPECT_EQ(report->note, "the analyst's tools (warp_stalls) profile the seed, which needs a GPU");
  EXPECT_EQ(calls, 0);
  const std::string analyst = json::parse(server.requests()[0].body)["messages"][1]["content"];
  EXPECT_NE(analyst.find("on NVIDIA H200"), std::string::npos) << "the prompt keeps the first run's GPU";
  const json kept = json::parse(read_file((o.run_dir / "session.json").string()).value());
  EXPECT_FALSE(kept["tools_chosen"].get<bool>()) << "asked again (from the cache) where a GPU can run the tools";
}

}  // namespace
}  // namespace kp::driver
