// e2e tier: `kernelpro generate` as a user runs it, with the model reached through the manual
// provider (a real stop and resume, answers in tests/data/llm/gelu_manual) and the command
// provider (a real child process). The build is real nvcc; without a GPU the session ends at
// "built, not run" (exit 3), with one it goes on to the verdict.
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/cli_run.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using GenRun = testing::CliRun;

class GenerateE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
    auto d = sys::TempDir::create("kp-gen-e2e-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<sys::TempDir>(std::move(*d));
    run_dir_ = dir_->path() / "run";
  }
  GenRun kernelpro(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
    args.insert(args.begin(), "generate");
    env.insert(env.begin(), {"XDG_CACHE_HOME", (dir_->path() / "cache").string()});
    return testing::run_kernelpro(args, env);
  }
  // The one prompt file without an answer beside it.
  fs::path pending_prompt() {
    fs::path found;
    for (const auto& e : fs::directory_iterator(run_dir_ / "manual")) {
      const std::string name = e.path().filename().string();
      if (name.size() > 10 && name.substr(name.size() - 10) == ".prompt.md") {
        fs::path answer = e.path().parent_path() / (name.substr(0, name.size() - 10) + ".answer.md");
        if (!fs::exists(answer)) {
          EXPECT_TRUE(found.empty()) << "two prompts wait for answers";
          found = e.path();
        }
      }
    }
    return found;
  }
  void answer(const fs::path& prompt, const std::string& data_file, const std::string& folder = "gelu_manual") {
    const std::string p = prompt.string();
    auto text = read_file((testing::test_data_dir() / "llm" / folder / data_file).string());
    ASSERT_TRUE(text.ok());
    ASSERT_TRUE(write_file(p.substr(0, p.size() - 10) + ".answer.md", *text).ok());
  }
  std::vector<std::string> args(bool resume) {
    std::vector<std::string> a = {(testing::examples_dir() / "gelu").string(), "--provider", "manual", "--run-dir",
                                  run_dir_.string()};
    if (resume) a.push_back("--resume");
    return a;
  }
  std::unique_ptr<sys::TempDir> dir_;
  fs::path run_dir_;
};

TEST_F(GenerateE2e, ManualProviderStopsAndResumesThroughTheDebugger) {
  GenRun first = kernelpro(args(false));
  ASSERT_EQ(first.exit_code, 5) << first.err;
  EXPECT_NE(first.err.find("waiting for a manual answer"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("--resume"), std::string::npos) << first.err;
  const bool gpu = !testing::gpu_missing();
  if (gpu) {  // the seed was profiled: the analyst asks for tools, the planner picks the direction
    fs::path analyst = pending_prompt();
    ASSERT_FALSE(analyst.empty());
    auto asked = read_file(analyst.string());
    ASSERT_TRUE(asked.ok());
    EXPECT_NE(asked->find("## Tools you can ask for\n- "), std::string::npos) << *asked;
    answer(analyst, "analyst_answer.md");
    GenRun tooled = kernelpro(args(true));
    ASSERT_EQ(tooled.exit_code, 5) << tooled.err;
    EXPECT_EQ(tooled.err.find("the seed again"), std::string::npos) << "no tools asked for: " << tooled.err;
    fs::path planner = pending_prompt();
    ASSERT_FALSE(planner.empty());
    auto text = read_file(planner.string());
    ASSERT_TRUE(text.ok());
    EXPECT_NE(text->find("## What profiling says about it"), std::string::npos) << *text;
    answer(planner, "planner_answer.md");
    GenRun planned = kernelpro(args(true));
    ASSERT_EQ(planned.exit_code, 5) << planned.err;
    EXPECT_NE(planned.err.find("planner: Process four elements"), std::string::npos) << planned.err;
    EXPECT_EQ(planned.err.find("profiling the seed"), std::string::npos) << "the seed's analysis is kept";
  }
  fs::path coder = pending_prompt();
  ASSERT_FALSE(coder.empty());
  auto prompt = read_file(coder.string());
  ASSERT_TRUE(prompt.ok());
  EXPECT_NE(prompt->find("Write a faster CUDA candidate for the native task \"gelu\""), std::string::npos);
  EXPECT_NE(prompt->find("## The best candidate so far"), std::string::npos) << "the seed is shown";
  EXPECT_NE(prompt->find("KP_EXPORT int kp_run(kp_args* args);"), std::string::npos) << "the ABI is explained";

  GenRun again = kernelpro(args(false));  // the folder holds no finished step yet: same stop
  EXPECT_EQ(again.exit_code, 5) << again.err;
  answer(coder, "coder_answer.md");
  GenRun second = kernelpro(args(true));
  ASSERT_EQ(second.exit_code, 5) << second.err;  // compile error -> the debugger's prompt waits
  fs::path debugger = pending_prompt();
  ASSERT_FALSE(debugger.empty());
  auto dprompt = read_file(debugger.string());
  ASSERT_TRUE(dprompt.ok());
  EXPECT_NE(dprompt->find("failed: compile_error"), std::string::npos);
  EXPECT_NE(dprompt->find("error: expected a \";\""), std::string::npos) << *dprompt;

  GenRun blocked = kernelpro(args(false));
  EXPECT_EQ(blocked.exit_code, 2);
  EXPECT_NE(blocked.err.find("add --resume to continue it"), std::string::npos) << blocked.err;

  answer(debugger, "debugger_answer.md");
  GenRun third = kernelpro(args(true));
  if (!gpu) {
    EXPECT_EQ(third.exit_code, 3) << third.err;
  }
  auto report = read_file((run_dir_ / "generate.json").string());
  ASSERT_TRUE(report.ok());
  json j = json::parse(*report);
  ASSERT_EQ(j["attempts"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["attempts"][0]["outcome"], "compile_error");
  EXPECT_EQ(j["attempts"][1]["role"], "debugger");
  EXPECT_EQ(j["attempts"][1]["outcome"], gpu ? "ok" : "not_run") << j.dump(2);
  EXPECT_TRUE(fs::exists(run_dir_ / "attempt-2" / "candidate.cu"));
  auto calls = read_file((run_dir_ / "llm_calls.jsonl").string());
  ASSERT_TRUE(calls.ok());
  // The planner (on a GPU) and the coder from the cache, and the debugger; the analyst's choice
  // is kept in session.json and not asked again.
  EXPECT_EQ(split_lines(*calls).size(), gpu ? 3u : 2u) << *calls;
  if (gpu) {
    EXPECT_EQ(third.exit_code, 0) << third.err;
    EXPECT_GT(j["attempts"][1]["speedup"].get<double>(), 0) << j.dump(2);
    EXPECT_FALSE(j["feedback"].get<std::string>().empty()) << "the passing candidate was analyzed";
  }
}

TEST_F(GenerateE2e, KernelBenchProblemInTheFastForm) {
  const std::vector<std::string> a = {(testing::test_data_dir() / "kernelbench" / "problems" / "relu.py").string(),
                                      "--provider",
                                      "manual",
                                      "--run-dir",
                                      run_dir_.string(),
                                      "--direction",
                                      "float4 loads and stores"};  // no analyst or planner on a GPU
  GenRun first = kernelpro(a);
  ASSERT_EQ(first.exit_code, 5) << first.err;
  fs::path prompt = pending_prompt();
  ASSERT_FALSE(prompt.empty());
  auto text = read_file(prompt.string());
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("kernelpro_torch.load()"), std::string::npos);
  EXPECT_NE(text->find("def get_inputs():"), std::string::npos) << "the problem is shown";
  answer(prompt, "coder_answer.md", "relu_manual");
  std::vector<std::string> resume = a;
  resume.push_back("--resume");
  GenRun second = kernelpro(resume);
  EXPECT_NE(second.exit_code, 5) << second.err;
  EXPECT_TRUE(fs::exists(run_dir_ / "attempt-1" / "candidate.py"));
  EXPECT_TRUE(fs::exists(run_dir_ / "attempt-1" / "candidate.cu"));
  json j = json::parse(read_file((run_dir_ / "generate.json").string()).value());
  ASSERT_EQ(j["attempts"].size(), 1u);
  EXPECT_NE(j["attempts"][0]["outcome"], "compile_error") << j.dump(2);
}

TEST_F(GenerateE2e, CommandProviderAndConfigErrors) {
  const fs::path answer = testing::test_data_dir() / "llm" / "gelu_manual" / "debugger_answer.md";
  const fs::path config = dir_->path() / "kernelpro.toml";
  ASSERT_TRUE(write_file(config.string(),
                         "[llm]\nprovider = \"command\"\ncommand = [\"/bin/sh\", \"-c\", \"cat > /dev/null; cat '" +
                             answer.string() + "'\"]\n")
                  .ok());
  GenRun r = kernelpro({(testing::examples_dir() / "gelu").string(), "--config", config.string(), "--run-dir",
                        run_dir_.string(), "--direction",
                        "float4 loads"});  // no planner: the command answers every prompt with this code
  if (testing::gpu_missing()) {
    EXPECT_EQ(r.exit_code, 3) << r.err;
  }
  json j = json::parse(read_file((run_dir_ / "generate.json").string()).value());
  ASSERT_EQ(j["attempts"].size(), 1u);
  EXPECT_NE(j["attempts"][0]["outcome"], "compile_error") << j.dump(2);

  GenRun no_key = kernelpro({(testing::examples_dir() / "gelu").string(), "--provider", "openai", "--model", "gpt-x",
                             "--run-dir", (dir_->path() / "r2").string()},
                            {{"OPENAI_API_KEY", ""}});
  EXPECT_EQ(no_key.exit_code, 2);
  EXPECT_NE(no_key.err.find("$OPENAI_API_KEY is not set"), std::string::npos) << no_key.err;
  ASSERT_TRUE(write_file(config.string(), "[llm]\nprovider = \"openai\"\napi_key = \"sk-oops\"\n").ok());
  GenRun leak = kernelpro({(testing::examples_dir() / "gelu").string(), "--config", config.string()});
  EXPECT_EQ(leak.exit_code, 2);
  EXPECT_NE(leak.err.find("only from the environment"), std::string::npos) << leak.err;
}

// The model's own command-line client as the command provider (`--command "claude -p"` and the
// like; tests/data/fake_tools/llm_cli.sh has their shape): a reply that is empty, cut off or not
// code gets the repair prompt; one still unusable after the repairs is a clear error, and every
// call stays in the run's call log.
TEST_F(GenerateE2e, AModelsCommandLineClientIsRepairedThenRefusedAndNothingIsLost) {
  const std::string cli = (testing::test_data_dir() / "fake_tools" / "llm_cli.sh").string();
  int k = 0;
  for (const std::string script : {"empty code", "cutoff code", "prose"}) {
    SCOPED_TRACE(script);
    const fs::path calls = dir_->path() / fmt::format("calls-{}", k), run = dir_->path() / fmt::format("run-{}", k);
    ++k;
    fs::create_directories(calls);
    GenRun r = kernelpro({(testing::examples_dir() / "gelu").string(), "--command", "/bin/sh " + cli, "--run-dir",
                          run.string(), "--direction", "float4 loads"},
                         {{"FAKE_LLM_DIR", calls.string()}, {"FAKE_LLM_SCRIPT", script}});
    const auto log = read_file((run / "llm_calls.jsonl").string());
    ASSERT_TRUE(log.ok()) << "the call log is kept whatever the model did: " << r.err;
    if (script == "prose") {
      EXPECT_NE(r.exit_code, 0);
      EXPECT_NE(r.exit_code, 3);
      EXPECT_NE(r.err.find("still unusable after 2 repair prompts"), std::string::npos) << r.err;
      EXPECT_EQ(split_lines(*log).size(), 3u) << "the reply and both repairs, each logged";
      EXPECT_NE(read_file((calls / "call-3.txt").string()).value().find("Your last reply could not be used"),
                std::string::npos);
      continue;
    }
    if (testing::gpu_missing()) EXPECT_EQ(r.exit_code, 3) << r.err;  // built, not run
    EXPECT_EQ(split_lines(*log).size(), 2u) << *log;
    const std::string second = read_file((calls / "call-2.txt").string()).value();
    EXPECT_NE(second.find("Your last reply could not be used"), std::string::npos) << second;
    const json j = json::parse(read_file((run / "generate.json").string()).value());
    ASSERT_EQ(j["attempts"].size(), 1u);
    EXPECT_NE(j["attempts"][0]["outcome"], "compile_error") << j.dump(2);
  }
  GenRun none = kernelpro({(testing::examples_dir() / "gelu").string(), "--provider", "command", "--run-dir",
                           (dir_->path() / "r-none").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--command \"claude -p\""), std::string::npos) << none.err;
}

// The sessions recorded on the H200 with the manual provider (tests/data/llm/h200/README.md):
// resumed from a copy, here or on any machine, each replays to its recorded verdicts without a
// model, a GPU or a cache: the prompts kernelpro writes today are the prompts that were
// answered. When a prompt template changes, this fails with the prompt that is now new.
TEST_F(GenerateE2e, TheH200TranscriptsReplayToTheirVerdicts) {
  const fs::path h200 = testing::test_data_dir() / "llm" / "h200";
  const std::vector<std::pair<std::string, fs::path>> runs = {
      {"softmax", testing::examples_dir() / "softmax"},
      {"transpose", testing::examples_dir() / "transpose"},
      {"rmsnorm", h200 / "problems" / "36_RMSNorm_.py"},
      {"gemm_sum", h200 / "problems" / "14_Gemm_Divide_Sum_Scaling.py"}};
  for (const auto& [name, task] : runs) {
    SCOPED_TRACE(name);
    const fs::path copy = dir_->path() / name;
    fs::copy(h200 / name, copy, fs::copy_options::recursive);
    auto before = read_file((h200 / name / "generate.json").string());
    ASSERT_TRUE(before.ok());
    const json recorded = json::parse(*before);
    GenRun r = kernelpro({task.string(), "--provider", "manual", "--run-dir", copy.string(), "--resume", "--max-debug",
                          std::to_string(recorded["attempts"].size() - 1)});
    EXPECT_NE(r.exit_code, 5) << "a prompt is not the recorded one (re-record the transcripts on a GPU):\n" << r.err;
    EXPECT_EQ(r.exit_code, recorded["outcome"] == "ok" ? 0 : 1) << r.err;
    const json replayed = json::parse(read_file((copy / "generate.json").string()).value());
    EXPECT_EQ(replayed["outcome"], recorded["outcome"]);
    ASSERT_EQ(replayed["attempts"].size(), recorded["attempts"].size());
    for (size_t i = 0; i < recorded["attempts"].size(); ++i) {
      EXPECT_EQ(replayed["attempts"][i]["outcome"], recorded["attempts"][i]["outcome"]);
      EXPECT_EQ(replayed["attempts"][i]["speedup"], recorded["attempts"][i]["speedup"]);
    }
    EXPECT_EQ(replayed["feedback"], recorded["feedback"]);
  }
}

}  // namespace
}  // namespace kp
