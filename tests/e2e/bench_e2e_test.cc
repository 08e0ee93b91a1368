// e2e tier: `kernelpro bench run|status|report` as a user runs them, on two native examples with
// the offline tuner. The GPU is tests/data/fake_workers/fake_worker.sh (every point 2 ms, the
// reference 4 ms), so the lanes, the ledger, the resume, the Slurm job script and the report run
// for real on a CPU machine; the real worker's campaign runs on the GPU machine
// (scripts/gpu_throughput_session.sh, step campaign).
#include <filesystem>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sys/temp_dir.h"
#include "tests/support/cli_run.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CliRun;

class BenchE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
    dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-bench-e2e-").value());
  }
  fs::path campaign() const { return dir_->path() / "campaign"; }
  std::string fake(const char* name) const { return (testing::test_data_dir() / name).string(); }
  CliRun kernelpro(const std::vector<std::string>& args, std::vector<std::pair<std::string, std::string>> env = {}) {
    env.push_back({"XDG_CACHE_HOME", (dir_->path() / "cache").string()});
    env.push_back({"XDG_DATA_HOME", (dir_->path() / "data").string()});
    env.push_back({"FAKE_MODE", "ok"});
    return testing::run_kernelpro(args, env);
  }
  std::vector<std::string> first_run(const std::vector<std::string>& more) {
    std::vector<std::string> a = {"bench", "run", campaign().string(), "--suite", testing::examples_dir().string(),
                                  "--only", "gelu,transpose", "--budget", "2",
                                  "--worker", fake("fake_workers/fake_worker.sh")};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  json status() {
    CliRun s = kernelpro({"bench", "status", campaign().string(), "--json"});
    EXPECT_EQ(s.exit_code, 0) << s.err;
    return json::parse(s.out, nullptr, false);
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(BenchE2e, ACampaignOnTwoLanesFinishesResumesAsNothingLeftAndReports) {
  CliRun r = kernelpro(first_run({"--gpus", "0,1", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["done"], 2);
  EXPECT_EQ(j["ran"], 2);
  EXPECT_NE(r.err.find("gpu0: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gpu1: "), std::string::npos) << "one lane ran both: " << r.err;
  EXPECT_TRUE(fs::exists(campaign() / "runs" / "gelu" / "best.cu"));

  CliRun again = kernelpro({"bench", "run", campaign().string(), "--gpus", "0", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["ran"], 0) << "a finished problem ran again";
  CliRun other = kernelpro(first_run({"--search", "greedy"}));
  EXPECT_EQ(other.exit_code, 2) << "a campaign folder took other settings";
  EXPECT_NE(other.err.find("other problems or settings"), std::string::npos) << other.err;

  EXPECT_EQ(status()["counts"]["done"], 2);
  const fs::path html = dir_->path() / "report.html", csv = dir_->path() / "report.csv";
  CliRun rep = kernelpro({"bench", "report", campaign().string(), "--json", "--html", html.string(), "--csv", csv.string()});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  json rj = json::parse(rep.out);
  ASSERT_EQ(rj["groups"].size(), 1u);
  EXPECT_EQ(rj["groups"][0]["group"], "native");
  EXPECT_EQ(rj["groups"][0]["correct"], 2);
  EXPECT_DOUBLE_EQ(rj["groups"][0]["fast_p"]["1.5"].get<double>(), 1.0) << "the fake's points are 2x its reference";
  EXPECT_DOUBLE_EQ(rj["groups"][0]["fast_p"]["2"].get<double>(), 0.0);
  const std::string page = read_file(html.string()).value();
  EXPECT_NE(page.find("class=\"plot tree\""), std::string::npos);
  EXPECT_NE(page.find("KP_TUNE"), std::string::npos) << "the best kernel is on the page";
  EXPECT_EQ(split_lines(read_file(csv.string()).value()).size(), 3u);

  CliRun one = kernelpro({"report", (campaign() / "runs" / "gelu").string(), "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(json::parse(one.out)["problems"][0]["candidates"], 2);
}

TEST_F(BenchE2e, WithoutAGpuEachSeedIsBuiltAndNothingIsTimed) {
  CliRun r = kernelpro({"bench", "run", campaign().string(), "--suite", testing::examples_dir().string(), "--only",
                        "gelu", "--gpus", "none"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("nothing is timed"), std::string::npos) << r.err;
  EXPECT_EQ(status()["counts"]["not_timed"], 1);
}

TEST_F(BenchE2e, ASlurmArrayRunsOneProblemPerTaskAndAResubmissionOnlyWhatIsLeft) {
  const fs::path log = dir_->path() / "sbatch.log";
  std::vector<std::pair<std::string, std::string>> env = {{"FAKE_SBATCH_LOG", log.string()}, {"FAKE_SBATCH_CANCEL", "1"}};
  CliRun r = kernelpro(first_run({"--slurm=--partition=debug", "--gpus-per-task", "0", "--sbatch",
                                  fake("fake_tools/fake_sbatch.sh")}),
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Submitted job array"), std::string::npos) << r.out;
  json s = status();
  EXPECT_EQ(s["counts"]["done"], 1);
  EXPECT_EQ(s["counts"]["pending"], 1) << "the cancelled task's problem";
  env.pop_back();  // nothing cancelled this time
  CliRun again = kernelpro({"bench", "run", campaign().string(), "--slurm", "--gpus-per-task", "0",
                            "--sbatch", fake("fake_tools/fake_sbatch.sh")},
                           env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(status()["counts"]["done"], 2);
  const auto calls = split_lines(read_file(log.string()).value());
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_NE(calls[0].find("--array=0-1"), std::string::npos) << calls[0];
  EXPECT_NE(calls[0].find("--partition=debug"), std::string::npos) << calls[0];
  EXPECT_NE(calls[1].find("--array=0-0"), std::string::npos) << "the resubmission ran only what was left: " << calls[1];
  EXPECT_EQ(read_file((campaign() / "slurm" / "submit-1.list").string()).value(), "transpose\n");
}

// A KernelBench campaign measures PyTorch's baselines on its GPU first, into the campaign, under
// the card's name (nvidia-smi and the Python worker are stand-ins here); the model's
// configuration it names does not exist, so each problem fails, and says why.
TEST_F(BenchE2e, AKernelBenchCampaignMeasuresItsBaselinesOnItsCardFirst) {
  const fs::path level = dir_->path() / "KernelBench" / "level1";
  fs::create_directories(level);
  fs::copy_file(testing::test_data_dir() / "kernelbench" / "problems" / "relu.py", level / "19_ReLU.py");
  const char* path = std::getenv("PATH");
  CliRun r = kernelpro({"bench", "run", campaign().string(), "--suite", (dir_->path() / "KernelBench").string(),
                        "--levels", "1", "--gpus", "0", "--config", (dir_->path() / "missing.toml").string(), "--python",
                        fake("fake_workers/fake_torch_worker.sh")},
                       {{"PATH", fake("fake_tools/bin") + ":" + (path ? path : "/usr/bin:/bin")}});
  EXPECT_NE(r.err.find("PyTorch baselines (eager, torch.compile) of 1 problem(s) on Fake H200"), std::string::npos)
      << r.err;
  const fs::path doc = campaign() / "baselines" / "fake-h200" / "kernelpro_baseline.json";
  ASSERT_TRUE(fs::exists(doc)) << r.err;
  const json j = json::parse(read_file(doc.string()).value());
  EXPECT_EQ(j["hardware"], "Fake H200");
  EXPECT_TRUE(j["problems"]["level1"].contains("19_ReLU.py")) << j.dump();
  json s = status();
  EXPECT_EQ(s["counts"]["failed"], 1);
  EXPECT_FALSE(s["problems"][0]["error"].get<std::string>().empty());

  CliRun no_model = kernelpro({"bench", "run", (dir_->path() / "other").string(), "--suite",
                               (dir_->path() / "KernelBench").string(), "--levels", "1"});
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.err.find("name a model"), std::string::npos) << no_model.err;
}

// A campaign a model answers in bulk: `bench run --provider manual --in-flight 2` leaves each problem
// with its two children's prompts waiting at once; `bench prompts --json` lists them all with where
// each answer goes; the next `bench run` takes every answer at once and goes on to the next prompts.
TEST_F(BenchE2e, AManualCampaignWaitsAtEveryPromptAtOnceAndTakesTheAnswersInBulk) {
  const std::vector<std::string> run = {"bench", "run", campaign().string(), "--suite", testing::examples_dir().string(),
                                        "--only", "gelu,transpose", "--budget", "4", "--in-flight", "2", "--provider",
                                        "manual", "--feedback", "none", "--gpus", "0", "--worker", fake("fake_workers/fake_worker.sh")};
  auto prompts = [&]() {
    CliRun p = kernelpro({"bench", "prompts", campaign().string(), "--json"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return json::parse(p.out, nullptr, false);
  };
  // Answers each waiting prompt with what `reply(purpose, problem, n)` says (n counts per problem).
  auto answer_all = [&](const json& waiting, const std::function<std::string(const json&, int)>& reply) {
    std::map<std::string, int> n;
    for (const auto& w : waiting["waiting"])
      ASSERT_TRUE(write_file(w["answer"].get<std::string>(), reply(w, n[w["problem"].get<std::string>()]++)).ok());
  };
  CliRun first = kernelpro(run);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json w = prompts();
  ASSERT_EQ(w["waiting"].size(), 4u) << w.dump(1);  // two per problem
  for (const auto& x : w["waiting"]) {
    EXPECT_EQ(x["purpose"], "planner") << x.dump();
    EXPECT_NE(read_file(x["prompt"].get<std::string>()).value().find("kernelpro bench run " + campaign().string()),
              std::string::npos)
        << "the prompt says what to run next";
  }
  EXPECT_NE(w["then"].get<std::string>().find("bench run"), std::string::npos);
  answer_all(w, [](const json&, int n) { return fmt::format(R"({{"direction": "idea {}", "why": "w"}})", n); });

  CliRun second = kernelpro(run);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  w = prompts();
  ASSERT_EQ(w["waiting"].size(), 4u) << "every child's coder prompt: " << w.dump(1);
  for (const auto& x : w["waiting"]) EXPECT_EQ(x["purpose"], "coder") << x.dump();
  answer_all(w, [](const json& x, int n) {
    const std::string task = x["problem"].get<std::string>();
    const std::string seed = read_file((testing::examples_dir() / task / "seed.cu").string()).value();
    return fmt::format("```cuda\n{}\nstatic const int kVariant{} = {};\n```\n", seed, n, n);
  });

  CliRun third = kernelpro(run);
  ASSERT_EQ(third.exit_code, 0) << third.err;
  json s = status();
  EXPECT_EQ(s["counts"]["pending"], 2) << s.dump(1);
  w = prompts();
  ASSERT_EQ(w["waiting"].size(), 2u) << "the last candidate of each budget of 4: " << w.dump(1);
  for (const auto& problem : {"gelu", "transpose"}) {
    const json rs = json::parse(read_file((campaign() / "runs" / problem / "optimize.json").string()).value(), nullptr,
                                false);
    EXPECT_EQ(rs.value("evaluated", -1), 2) << problem << ": both children, one GPU round: " << rs.dump();
  }
}

}  // namespace
}  // namespace kp
