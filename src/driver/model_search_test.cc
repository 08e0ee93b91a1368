// The model-driven optimize loop with the model behind a real loopback server (OpenAI wire
// format) or the manual provider's files, and the evaluator's verdicts given by a fake workbench (a
// GPU's outcomes cannot be produced on a CPU; the loop around them is what is under test).
#include "driver/model_search.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "llm/provider.h"
#include "store/run_store.h"
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

std::string user_text(const std::string& body) { return json::parse(body)["messages"][1]["content"]; }

// A candidate named by its marker, in a comment (which the analysis and the prompts show) and in
// its code (so that two markers are two programs, not one with other comments).
std::string kernel(const std::string& marker) {
  return "```cuda\n// " + marker + "\nstatic const char* kVersion = \"" + marker +
         "\";\nKP_EXPORT int kp_run(kp_args* args) { return 0; }\n```";
}

// Verdicts by the marker in the candidate: the seed 1 ms, BROKEN wrong, FIXED 0.9 ms, FAST 0.5 ms,
// FASTER 0.4 ms; the reference 2 ms.
struct FakeGpu {
  int evaluations = 0;
  std::vector<std::string> analyzed;
  bool present = true;
  bool held_elsewhere = false;  // another process holds the GPU: gpu_unavailable
  std::string profiler_error;   // set: every analysis fails with it (a profiler that is busy)
  Result<eval::EvalResult> evaluate(const fs::path& cu) {
    eval::EvalResult r;
    if (!present) return r;  // not_run: built, no GPU to run it
    if (held_elsewhere) {
      r.outcome = eval::Outcome::kGpuUnavailable;
      r.reason = "out of device memory while 70.0 GiB of the GPU are held outside this worker";
      return r;
    }
    ++evaluations;
    const std::string text = read_file(cu.string()).value();
    r.outcome = eval::Outcome::kOk;
    r.reference_seconds = 2e-3;
    r.worker_seconds = 1;
    r.time.median = 1e-3;
    if (text.find("BROKEN") != std::string::npos) {
      r.outcome = eval::Outcome::kIncorrect;
      r.reason = "output y: 512 of 67108864 elements off";
    } else if (text.find("FASTER") != std::string::npos) {
      r.time.median = 0.4e-3;
    } else if (text.find("FAST") != std::string::npos) {
      r.time.median = 0.5e-3;
    } else if (text.find("FIXED") != std::string::npos) {
      r.time.median = 0.9e-3;
    }
    r.speedup_vs_reference = r.reference_seconds / r.time.median;
    return r;
  }
  Result<Analysis> analyze(const fs::path& cu) {
    if (!profiler_error.empty()) return make_error(ErrorCode::kTool, profiler_error);
    const std::string text = read_file(cu.string()).value();
    std::smatch m;
    const std::string marker = std::regex_search(text, m, std::regex("// ([A-Z]+)\n")) ? m[1].str() : "SEED";
    analyzed.push_back(marker);
    return Analysis{"MAIN BOTTLENECK: memory-bound, DRAM at 71% (" + marker + ")",
                    {"roofline_headroom"},
                    "memory-bound",
                    "RAW dram__throughput = 71 % (" + marker + ")",
                    {{"counters", 0.25}, {"sass", 0.125}}};
  }
  testing::FakeWorkbench bench() {
    testing::FakeWorkbench b;
    b.on_evaluate = [this](const CandidatePaths& c) { return evaluate(c.cu); };
    b.on_analyze = [this](const CandidatePaths& c, const std::vector<std::string>&) { return analyze(c.cu); };
    return b;
  }
};

struct Harness {
  sys::TempDir dir = sys::TempDir::create("kp-msearch-").value();
  agent::PromptLibrary prompts = agent::PromptLibrary::load((kp::testing::source_dir() / "prompts").string()).value();
  task::Task task = task::load_native_task((kp::testing::examples_dir() / "gelu").string()).value();
  OptimizeOptions options() {
    OptimizeOptions o;
    o.run_dir = dir.path() / "run";
    o.gpu = "NVIDIA H200";
    o.memory = dir.path() / "memory.db";
    return o;
  }
};

// A model behind the loopback server, answering by what it is asked, and the roles over it.
struct ServedModel {
  testing::FakeLlmServer server;
  std::unique_ptr<llm::HttpTransport> transport = llm::make_curl_transport();
  std::unique_ptr<llm::Provider> provider;
  std::unique_ptr<llm::LlmClient> client;
  std::unique_ptr<agent::Agents> agents;
  ServedModel(const agent::PromptLibrary& prompts,
              std::function<testing::CannedResponse(const testing::ReceivedRequest&)> respond,
              llm::ClientOptions options = {}) {
    server.respond_with(std::move(respond));
    llm::HttpProviderOptions po;
    po.base_url = server.base_url();
    provider = llm::make_openai_provider(po, *transport);
    client = std::make_unique<llm::LlmClient>(*provider, options,
                                              llm::ClientHooks{[](double) {}, [] { return 0.5; }, nullptr});
    agents = std::make_unique<agent::Agents>(*client, prompts, "m", agent::AgentOptions{.tools = false});
  }
};

// One run of the loop with the manual provider's files as the model, as each command of a resumed
// run makes it (a client and roles of its own).
Result<OptimizeReport> run_manually(llm::Provider& provider, Harness& h, FakeGpu& gpu, const OptimizeOptions& o) {
  llm::LlmClient client(provider, {});
  agent::Agents agents(client, h.prompts, "m", {.tools = false});
  auto bench = gpu.bench();
  return run_model_optimize(h.task, agents, bench, {}, o);
}

// A planner that always answers direction "d", a coder that always writes FAST.
testing::CannedResponse plan_d_write_fast(const testing::ReceivedRequest& req) {
  if (user_text(req.body).find("Choose the next") != std::string::npos)
    return {.body = openai_completion(R"({"direction": "d", "why": "w"})")};
  return {.body = openai_completion(kernel("FAST"))};
}

// FAST's code with other comments and spacing: another file, the same program.
std::string fast_respaced() {
  return "```cuda\n// FAST\n/* the same kernel, written again */\nstatic const char*   kVersion = \"FAST\";\n"
         "KP_EXPORT int kp_run(kp_args*   args)\n{\n  return 0;\n}\n```";
}

TEST(ModelSearch, PlansWritesRepairsLearnsAndMeasuresADuplicateOnce) {
  Harness h;
  int plans = 0;
  ServedModel model(h.prompts, [&](const testing::ReceivedRequest& req) -> testing::CannedResponse {
    const std::string text = user_text(req.body);
    if (text.find("Choose the next optimisation") != std::string::npos)
      return {.body = openai_completion(fmt::format(
                  R"({{"direction": "direction {}", "actions": ["vectorize_loads"], "why": "DRAM"}})", ++plans))};
    if (text.find("failed: incorrect") != std::string::npos) return {.body = openai_completion(kernel("FIXED"))};
    if (text.find("direction 1\n") != std::string::npos) return {.body = openai_completion(kernel("BROKEN"))};
    if (text.find("direction 4\n") != std::string::npos) return {.body = openai_completion(kernel("FASTER"))};
    if (text.find("direction 3\n") != std::string::npos) return {.body = openai_completion(fast_respaced())};
    return {.body = openai_completion(kernel("FAST"))};  // direction 2
  });
  testing::FakeLlmServer& server = model.server;
  agent::Agents& agents = *model.agents;
  FakeGpu gpu;
  auto bench = gpu.bench();
  OptimizeOptions o = h.options();
  o.strategy = "greedy";  // greedy repairs a failure at once: a fixed order of prompts ...
  o.in_flight = 1;        // ... when each child is measured before the next is asked for
  o.max_evaluations = 5;  // the seed, BROKEN, FIXED, FAST, FASTER; FAST written again costs none
  auto report = run_model_optimize(h.task, agents, bench, {}, o);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->stopped, "budget");
  EXPECT_EQ(report->evaluated, 5);
  EXPECT_EQ(gpu.evaluations, 5);
  EXPECT_EQ(report->duplicates, 1);
  EXPECT_EQ(report->nodes, 6);
  EXPECT_DOUBLE_EQ(report->best_seconds, 0.4e-3);
  EXPECT_DOUBLE_EQ(report->seed_seconds, 1e-3);
  EXPECT_DOUBLE_EQ(report->reference_seconds, 2e-3);
  EXPECT_EQ(report->best_direction, "direction 4");
  EXPECT_NE(read_file((o.run_dir / "best.cu").string()).value().find("FASTER"), std::string::npos);
  const json best = json::parse(read_file((o.run_dir / "best.json").string()).value());
  EXPECT_EQ(best["best_direction"], "direction 4");
  EXPECT_EQ(best["llm"]["calls"], 9);  // 4 plans, 4 coders, 1 debugger
  // Every passing candidate was analyzed once for the next prompt; failures are not profiled.
  EXPECT_EQ(gpu.analyzed, (std::vector<std::string>{"SEED", "FIXED", "FAST", "FASTER"}));
  // The report says where the four analyses' time went, part by part.
  EXPECT_DOUBLE_EQ(report->analyze_parts_s.at("counters"), 4 * 0.25);
  EXPECT_DOUBLE_EQ(report->analyze_parts_s.at("sass"), 4 * 0.125);
  EXPECT_DOUBLE_EQ(best["time_s"]["analyze_parts"]["counters"].get<double>(), 1.0);

  std::vector<std::string> planner, coder, debugger;
  for (const auto& r : server.requests()) {
    const std::string t = user_text(r.body);
    (t.find("Choose the next") != std::string::npos     ? planner
     : t.find("failed: incorrect") != std::string::npos ? debugger
                                                        : coder)
        .push_back(t);
  }
  ASSERT_EQ(planner.size(), 4u);
  ASSERT_EQ(debugger.size(), 1u);
  // The debugger gets the failed files and the failure.
  EXPECT_NE(debugger[0].find("// BROKEN"), std::string::npos);
  EXPECT_NE(debugger[0].find("512 of 67108864 elements off"), std::string::npos) << debugger[0];
  // The planner of the second idea expands FIXED (the best then): its files, its feedback, how it
  // was made, and the lessons so far.
  EXPECT_NE(planner[1].find("// FIXED"), std::string::npos);
  EXPECT_NE(planner[1].find("DRAM at 71% (FIXED)"), std::string::npos) << planner[1];
  EXPECT_NE(planner[1].find("(how this candidate was made) repair the incorrect of: direction 1: ok, 0.9 ms"),
            std::string::npos)
      << planner[1];
  EXPECT_NE(planner[1].find("direction 1: incorrect (memory-bound); output y: 512"), std::string::npos) << planner[1];
  // The coder writes from the node it expands, with the planner's direction.
  EXPECT_NE(coder[1].find("## What to change this time\ndirection 2"), std::string::npos) << coder[1];
  EXPECT_NE(coder[1].find("// FIXED"), std::string::npos);

  auto store = store::RunStore::open(o.run_dir / "store.db", store::RunStore::Access::kReader).value();
  auto nodes = store.nodes().value();
  std::vector<std::string> kinds;
  for (const auto& n : nodes) kinds.push_back(n.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"root", "idea", "repair", "idea", "idea", "idea"}));
  EXPECT_NE(nodes[3].candidate, nodes[4].candidate) << "the duplicate's files are not FAST's";
  auto evaluations = store.evaluations().value();
  ASSERT_EQ(evaluations.size(), 6u);
  EXPECT_EQ(evaluations[4].candidate, nodes[4].candidate);
  EXPECT_DOUBLE_EQ(evaluations[4].seconds, 0.5e-3) << "FAST's code, FAST's verdict, measured once";
  EXPECT_EQ(store.lessons_in_order().value().size(), 5u);
  EXPECT_EQ(report->lessons_shared, 5);
  auto memory = store::RunStore::open(o.memory, store::RunStore::Access::kReader).value();
  EXPECT_EQ(memory.lessons("memory-bound", "", 10).value().size(), 5u);

  // A second run of the same task reads those lessons of the first in its planner's prompt.
  Harness h2;
  OptimizeOptions o2 = h2.options();
  o2.memory = o.memory;
  o2.strategy = "greedy";
  o2.max_evaluations = 2;
  plans = 0;
  auto second = run_model_optimize(h2.task, agents, bench, {}, o2);
  ASSERT_TRUE(second.ok()) << second.error().message;
  const std::string last_planner = user_text(server.requests()[server.requests().size() - 2].body);
  EXPECT_NE(last_planner.find("From earlier runs:\n- [gelu] direction 2: ok, 0.56x the time of its parent "
                              "(memory-bound); 0.9 ms -> 0.5 ms\n"),
            std::string::npos)
      << last_planner;
}

// The pipeline: with two children in flight the model writes the next candidate while the GPU
// measures the one before, the build stage compiles each before its evaluation, and the planner
// is told what is being tried; with one, the model waits for each measurement.
TEST(ModelSearch, TheModelWritesTheNextCandidateWhileTheGpuMeasuresOne) {
  for (int in_flight : {2, 1}) {
    SCOPED_TRACE(fmt::format("in flight {}", in_flight));
    Harness h;
    std::atomic<int> coders{0};  // coder requests received so far: one per child written
    std::atomic<int> plans{0};
    ServedModel model(h.prompts, [&](const testing::ReceivedRequest& req) -> testing::CannedResponse {
      const std::string text = user_text(req.body);
      if (text.find("Choose the next") != std::string::npos)
        return {.body = openai_completion(fmt::format(R"({{"direction": "direction {}", "why": "w"}})", ++plans))};
      ++coders;
      std::smatch m;
      std::regex_search(text, m, std::regex("## What to change this time\ndirection ([0-9]+)"));
      return {.body = openai_completion(kernel("FAST" + m[1].str()))};
    });
    FakeGpu gpu;
    auto bench = gpu.bench();
    // While the GPU measures child k (k = 1, 2) the model must be writing child k + 1: the
    // evaluation waits for that coder request (up to 30 s with two in flight, however loaded the
    // machine; 0.2 s with one, where it can only come after this evaluation). The count, not the
    // timing, is what is asserted, so a slow machine cannot fail it.
    int children = 0, overlapped = 0;
    bench.on_evaluate = [&](const CandidatePaths& c) {
      if (!c.root && ++children < 3) {
        const int next = children + 1;
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(in_flight > 1 ? 30000 : 200);
        while (coders.load() < next && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (coders.load() >= next) ++overlapped;
      }
      return gpu.evaluate(c.cu);
    };
    std::vector<std::string> prebuilt;
    bench.on_build_ahead = [&](const fs::path& cu) { prebuilt.push_back(read_file(cu.string()).value()); };
    OptimizeOptions o = h.options();
    o.in_flight = in_flight;
    o.max_evaluations = 4;  // the seed and three children
    auto report = run_model_optimize(h.task, *model.agents, bench, {}, o);
    ASSERT_TRUE(report.ok()) << report.error().message;
    EXPECT_EQ(report->stopped, "budget");
    EXPECT_EQ(report->evaluated, 4);
    EXPECT_EQ(gpu.evaluations, 4);
    EXPECT_EQ(overlapped, in_flight > 1 ? 2 : 0);
    // Each child was compiled ahead of its evaluation, on the build stage.
    EXPECT_EQ(report->built_ahead, 3);
    ASSERT_EQ(prebuilt.size(), 3u);
    for (int i = 1; i <= 3; ++i)
      EXPECT_NE(prebuilt[static_cast<size_t>(i - 1)].find(fmt::format("// FAST{}", i)), std::string::npos);
    // The second planner (from the root, widened) knows the first direction is in flight.
    std::vector<std::string> planner;
    for (const auto& r : model.server.requests())
      if (user_text(r.body).find("Choose the next") != std::string::npos) planner.push_back(user_text(r.body));
    ASSERT_EQ(planner.size(), 3u);
    EXPECT_EQ(planner[1].find("(being tried now from this candidate) direction 1\n") != std::string::npos,
              in_flight > 1)
        << planner[1];
    auto store = store::RunStore::open(o.run_dir / "store.db", store::RunStore::Access::kReader).value();
    EXPECT_EQ(store.nodes().value().size(), 4u);
  }
}

TEST(ModelSearch, TheFeedbackSwitchChangesWhatThePlannerSees) {
  for (const std::string mode : {"raw-metrics", "none"}) {
    Harness h;
    ServedModel model(h.prompts, plan_d_write_fast);
    testing::FakeLlmServer& server = model.server;
    agent::Agents& agents = *model.agents;
    FakeGpu gpu;
    OptimizeOptions o = h.options();
    o.feedback = mode;
    o.max_evaluations = 2;
    auto bench = gpu.bench();
    auto report = run_model_optimize(h.task, agents, bench, {}, o);
    ASSERT_TRUE(report.ok()) << report.error().message;
    const std::string planner = user_text(server.requests()[0].body);
    EXPECT_EQ(planner.find("MAIN BOTTLENECK"), std::string::npos) << mode;
    EXPECT_EQ(planner.find("RAW dram__throughput = 71 % (SEED)") != std::string::npos, mode == "raw-metrics")
        << mode << "\n"
        << planner;
    EXPECT_EQ(gpu.analyzed.empty(), mode == "none") << "no feedback: nothing is profiled for it";
  }
  Harness h;
  auto provider = llm::make_manual_provider({(h.dir.path() / "manual").string(), ""});
  llm::LlmClient client(*provider, {});
  agent::Agents agents(client, h.prompts, "m", {.tools = false});
  FakeGpu gpu;
  OptimizeOptions o = h.options();
  o.feedback = "all";
  auto bench = gpu.bench();
  auto bad = run_model_optimize(h.task, agents, bench, {}, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--feedback all: expected tools, raw-metrics or none");
}

// A passing candidate the profiler could not profile is said to have none, and why, in its
// prompts (never an empty section), the run's log and its report; the planner still reads its
// measured time (issue 42: on the H100 the planner's first prompt had neither).
TEST(ModelSearch, ACandidateWithoutAProfileIsSaidSoAndItsTimeIsStillThere) {
  Harness h;
  ServedModel model(h.prompts, plan_d_write_fast);
  FakeGpu gpu;
  gpu.profiler_error = "counters: CUPTI_ERROR_HARDWARE_BUSY (another process holds the profiler)";
  std::vector<std::string> log;
  auto bench = gpu.bench();
  LoopControls controls;
  controls.progress = [&](const std::string& s) { log.push_back(s); };
  OptimizeOptions o = h.options();
  o.max_evaluations = 2;
  auto report = run_model_optimize(h.task, *model.agents, bench, controls, o);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->unprofiled, 2) << "the seed and its child";
  EXPECT_NE(report->unprofiled_why.find("CUPTI_ERROR_HARDWARE_BUSY"), std::string::npos);
  const std::string planner = user_text(model.server.requests()[0].body);
  EXPECT_NE(planner.find("No profile of this candidate: counters: CUPTI_ERROR_HARDWARE_BUSY"), std::string::npos)
      << planner;
  EXPECT_NE(planner.find("## Its measured time\n1 ms per call"), std::string::npos) << planner;
  // gelu is elementwise work: its playbook, not a GEMM's.
  EXPECT_NE(planner.find("## What usually wins for this kind of work\n- An elementwise map is memory-bound"),
            std::string::npos)
      << planner;
  EXPECT_NE(planner.find("the reference takes 2 ms: this candidate is 2.00x as fast"), std::string::npos) << planner;
  const std::string coder = user_text(model.server.requests()[1].body);
  EXPECT_NE(coder.find("No profile of this candidate"), std::string::npos) << coder;
  bool said = false;
  for (const auto& l : log) said = said || l.find("NOT PROFILED") != std::string::npos;
  EXPECT_TRUE(said);
  const json best = json::parse(read_file((o.run_dir / "best.json").string()).value());
  EXPECT_EQ(best["unprofiled"]["candidates"], 2) << best.dump(1);
}

// The LLM budget stops the run cleanly, resumable, even between the planner and the coder.
TEST(ModelSearch, TheLlmBudgetStopsTheRunWhereItIs) {
  Harness h;
  llm::ClientOptions copts;
  copts.budget.max_calls = 3;  // a planner and a coder, then one more planner
  ServedModel model(h.prompts, plan_d_write_fast, copts);
  testing::FakeLlmServer& server = model.server;
  agent::Agents& agents = *model.agents;
  FakeGpu gpu;
  auto bench = gpu.bench();
  OptimizeOptions o = h.options();
  o.max_evaluations = 10;
  auto report = run_model_optimize(h.task, agents, bench, {}, o);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->stopped, "budget");
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(gpu.evaluations, 2) << "the seed and the one candidate the model finished";
  EXPECT_TRUE(fs::exists(o.run_dir / "best.cu"));
}

// Another process takes the GPU after the seed: the candidate in flight gets no verdict, no node
// measurement and no lesson; the run stops, and resumes once the GPU is free.
TEST(ModelSearch, AGpuHeldElsewhereStopsTheRunWithoutAVerdictAndItResumes) {
  Harness h;
  ServedModel model(h.prompts, plan_d_write_fast);
  FakeGpu gpu;
  auto bench = gpu.bench();
  OptimizeOptions o = h.options();
  o.max_evaluations = 2;
  // The seed is measured, then the GPU is taken.
  auto evaluate = bench.on_evaluate;
  bench.on_evaluate = [&](const CandidatePaths& c) {
    auto r = evaluate(c);
    gpu.held_elsewhere = true;
    return r;
  };
  auto first = run_model_optimize(h.task, *model.agents, bench, {}, o);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->stopped, "gpu_unavailable");
  EXPECT_EQ(gpu.evaluations, 1) << "the seed only";
  {
    auto store = store::RunStore::open(o.run_dir / "store.db", store::RunStore::Access::kReader).value();
    const auto verdicts = store.evaluations().value();
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_EQ(verdicts[0].outcome, "ok");
  }
  gpu.held_elsewhere = false;
  bench.on_evaluate = evaluate;
  o.resume = true;
  o.max_evaluations = 1;
  auto second = run_model_optimize(h.task, *model.agents, bench, {}, o);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->stopped, "budget");
  EXPECT_EQ(gpu.evaluations, 2) << "the candidate the stop left without a verdict, measured now";
  auto store = store::RunStore::open(o.run_dir / "store.db", store::RunStore::Access::kReader).value();
  const auto verdicts = store.evaluations().value();
  EXPECT_EQ(verdicts.size(), 2u);
  for (const auto& v : verdicts) EXPECT_NE(v.outcome, "gpu_unavailable");
}

// The person as the model: each prompt stops the run (pending) until its answer file is written;
// a step that needs a GPU on a machine without one stops too (no_gpu); each resume replays the
// store and goes on, evaluating nothing twice.
TEST(ModelSearch, AManualModelStopsAtEachPromptAndTheRunResumesAcrossMachines) {
  Harness h;
  const fs::path manual = h.dir.path() / "manual";
  auto provider = llm::make_manual_provider({manual.string(), "kernelpro optimize ... --resume"});
  FakeGpu gpu;
  OptimizeOptions o = h.options();
  o.max_evaluations = 3;
  auto answer_the_prompt = [&](const std::string& reply) {
    for (const auto& e : fs::directory_iterator(manual)) {
      const std::string name = e.path().filename().string();
      if (!name.ends_with(".prompt.md")) continue;
      const fs::path answer = manual / (name.substr(0, name.size() - 10) + ".answer.md");
      if (fs::exists(answer)) continue;
      ASSERT_TRUE(write_file(answer.string(), reply).ok());
      return;
    }
    FAIL() << "no prompt waits for an answer";
  };
  auto run = [&]() { return run_manually(*provider, h, gpu, o); };
  auto first = run();
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->stopped, "pending");
  EXPECT_NE(first->pending.find("waiting for a manual answer: the prompt is in " + manual.string()), std::string::npos)
      << first->pending;
  EXPECT_EQ(gpu.evaluations, 1);  // the seed
  answer_the_prompt(R"({"direction": "float4 loads", "why": "DRAM"})");
  o.resume = true;
  auto second = run();
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->stopped, "pending") << "now the coder's prompt";
  answer_the_prompt(kernel("FAST"));
  gpu.present = false;  // answered on a laptop: the candidate is written, its evaluation waits
  auto third = run();
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(third->stopped, "no_gpu");
  EXPECT_EQ(gpu.evaluations, 1);
  gpu.present = true;  // and resumed on the GPU machine
  auto fourth = run();
  ASSERT_TRUE(fourth.ok()) << fourth.error().message;
  EXPECT_EQ(fourth->stopped, "pending") << "the next planner prompt";
  EXPECT_EQ(gpu.evaluations, 2) << "the seed once, the candidate once";
  EXPECT_EQ(fourth->nodes, 2);
  EXPECT_DOUBLE_EQ(fourth->best_seconds, 0.5e-3);
  EXPECT_NE(read_file((o.run_dir / "best.cu").string()).value().find("FAST"), std::string::npos);
  // Without --resume, a run directory in use is refused.
  o.resume = false;
  auto refused = run();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("add --resume"), std::string::npos);
  // Nor does the offline tuner take over a model's run.
  o.resume = true;
  testing::FakeWorkbench tuner;
  tuner.on_evaluate = [&](const CandidatePaths& c) { return gpu.evaluate(c.cu); };
  auto other = run_optimize(h.task, tuner, {}, o);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("holds a run of the model-driven search, not of the offline tuner"),
            std::string::npos)
      << other.error().message;
}

// Answered in bulk (waves, as `kernelpro bench prompts` serves a campaign): the run asks its
// in-flight children's prompts at once, each distinct, stops once all wait, and a resumed run asks
// exactly those prompts again (none left orphaned), so one round of answers moves every child.
TEST(ModelSearch, InWavesEveryChildsPromptWaitsAtOnceAndAResumeAsksTheSameOnes) {
  Harness h;
  const fs::path manual = h.dir.path() / "manual";
  auto provider = llm::make_manual_provider({manual.string(), "kernelpro bench run C"});
  FakeGpu gpu;
  OptimizeOptions o = h.options();
  o.max_evaluations = 10;
  o.in_flight = 3;
  o.waves = true;
  auto waiting = [&]() {  // as `bench prompts` lists them
    std::vector<fs::path> w;
    for (const auto& p : llm::waiting_prompts(manual.string())) w.push_back(p.prompt);
    return w;
  };
  auto prompts_written = [&]() {
    int n = 0;
    for (const auto& e : fs::directory_iterator(manual)) n += e.path().filename().string().ends_with(".prompt.md");
    return n;
  };
  // Answers the waiting prompts that `pick` matches (a planner's "proposal K of 3", a coder's
  // "idea K") with `reply(K)`; returns how many.
  auto answer = [&](const std::string& pattern, const std::function<bool(int)>& pick,
                    const std::function<std::string(int)>& reply) {
    int n = 0;
    for (const auto& p : waiting()) {
      const std::string text = read_file(p.string()).value();
      std::smatch m;
      if (!std::regex_search(text, m, std::regex(pattern))) continue;
      const int k = std::stoi(m[1].str());
      if (!pick(k)) continue;
      EXPECT_TRUE(write_file(manual.string() + "/" + p.filename().string().substr(0, 16) + ".answer.md", reply(k)).ok());
      ++n;
    }
    return n;
  };
  auto plan = [](int k) { return fmt::format(R"({{"direction": "idea {}", "why": "w"}})", k); };
  const char* markers[] = {"FAST", "FASTER", "FIXED"};
  auto code = [&](int k) { return kernel(markers[k - 1]); };
  const std::string planner = "proposal ([0-9]) of 3", coder = "idea ([0-9])";
  auto run = [&]() { return run_manually(*provider, h, gpu, o); };

  auto first = run();
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->stopped, "pending");
  ASSERT_EQ(waiting().size(), 3u) << "the three children's planner prompts wait at once, each distinct";
  EXPECT_EQ(split_lines(first->pending).size(), 3u) << first->pending;
  // Two answered: those two go on to their coders; the third keeps waiting.
  EXPECT_EQ(answer(planner, [](int k) { return k < 3; }, plan), 2);
  o.resume = true;
  auto second = run();
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->stopped, "pending");
  EXPECT_EQ(waiting().size(), 3u) << "one planner and two coders";
  EXPECT_EQ(answer(coder, [](int) { return true; }, code), 2);
  auto third = run();
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(gpu.evaluations, 1) << "the wave is measured only once all of it is answered";
  EXPECT_EQ(prompts_written(), 5) << "the third planner's prompt is the same one";
  EXPECT_EQ(answer(planner, [](int k) { return k == 3; }, plan), 1);
  auto fourth = run();
  ASSERT_TRUE(fourth.ok()) << fourth.error().message;
  EXPECT_EQ(answer(coder, [](int k) { return k == 3; }, code), 1);
  auto fifth = run();
  ASSERT_TRUE(fifth.ok()) << fifth.error().message;
  EXPECT_EQ(fifth->stopped, "pending") << "the next wave's planners";
  EXPECT_EQ(gpu.evaluations, 4) << "the seed and the wave's three children, one GPU round";
  EXPECT_DOUBLE_EQ(fifth->best_seconds, 0.4e-3);
  EXPECT_EQ(waiting().size(), 3u);
  EXPECT_EQ(prompts_written(), 9) << "no prompt of an earlier round was left unanswered";
}

}  // namespace
}  // namespace kp::driver
