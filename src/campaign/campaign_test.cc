// The campaign's listing, ledger and lanes, with tests/data/fake_tools/fake_kernelpro.sh standing
// for `kernelpro optimize` (the e2e tier runs the real one: tests/e2e/bench_e2e_test.cc).
#include "campaign/scheduler.h"

#include <chrono>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "build/builder.h"
#include "store/run_store.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::campaign {
namespace {

namespace fs = std::filesystem;

class CampaignTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-campaign-").value()); }
  fs::path root() const { return dir_->path(); }
  // A native task folder (only its task.toml is looked at here).
  fs::path task(const std::string& name) {
    const fs::path d = root() / "suite" / name;
    fs::create_directories(d);
    EXPECT_TRUE(write_file((d / "task.toml").string(), "name = \"" + name + "\"\n").ok());
    return d;
  }
  CampaignSpec spec(const std::vector<std::string>& names) {
    for (const auto& n : names) task(n);
    CampaignSpec s;
    s.suite = (root() / "suite").string();
    s.problems = list_campaign_problems(root() / "suite", {1}, names).value();
    s.optimize_args = {"--budget", "3"};
    return s;
  }
  CampaignOptions options(std::vector<std::string> gpus = {"0"}) {
    CampaignOptions o;
    o.dir = root() / "campaign";
    o.kernelpro = testing::test_data_dir() / "fake_tools" / "fake_kernelpro.sh";
    o.gpus = std::move(gpus);
    o.env = {{"FAKE_LOG", log().string()}};
    o.poll_s = 0.05;
    return o;
  }
  fs::path log() const { return root() / "fake.log"; }
  std::vector<std::string> calls() {
    auto t = read_file(log().string());
    return t.ok() ? split_lines(*t) : std::vector<std::string>{};
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(CampaignTest, AFolderOfTasksIsListedByNameAndOnlyKeepsWhatItNames) {
  task("b");
  task("a");
  task("c");
  fs::create_directories(root() / "suite" / "not_a_task");
  auto all = list_campaign_problems(root() / "suite", {1}, {});
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, "a");
  EXPECT_EQ((*all)[2].id, "c");
  EXPECT_EQ((*all)[0].kind, "native");
  auto some = list_campaign_problems(root() / "suite", {1}, {"c", "a"});
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 2u);
  auto bad = list_campaign_problems(root() / "suite", {1}, {"zz"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("zz"), std::string::npos);
}

TEST_F(CampaignTest, AListFileNamesTasksAndKernelBenchProblemsRelativeToItself) {
  task("gelu");
  const fs::path kb = testing::test_data_dir() / "kernelbench" / "problems";
  fs::path py;
  for (const auto& e : fs::recursive_directory_iterator(kb))
    if (e.path().extension() == ".py") {
      py = e.path();
      break;
    }
  ASSERT_FALSE(py.empty());
  const fs::path list = root() / "list.txt";
  ASSERT_TRUE(write_file(list.string(), "# a comment\nsuite/gelu   # trailing comment\n\n" + py.string() + "\n").ok());
  auto got = list_campaign_problems(list, {1}, {});
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].id, "gelu");
  EXPECT_EQ((*got)[1].kind, "kernelbench");
  ASSERT_TRUE(write_file(list.string(), "suite/gelu\nsuite/missing\n").ok());
  auto bad = list_campaign_problems(list, {1}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(":2:"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(list_campaign_problems(root() / "nowhere", {1}, {}).ok());
}

TEST_F(CampaignTest, TheSpecSurvivesItsFileAndAStrangerIsRefused) {
  CampaignSpec s = spec({"a", "b"});
  ASSERT_TRUE(save_campaign(root() / "campaign", s).ok());
  auto back = load_campaign(root() / "campaign");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->problems.size(), 2u);
  EXPECT_EQ(back->optimize_args, s.optimize_args);
  ASSERT_TRUE(write_file((root() / "campaign" / kCampaignFile).string(), "{\"format\":\"other\"}").ok());
  EXPECT_EQ(load_campaign(root() / "campaign").error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(load_campaign(root() / "empty").error().code, ErrorCode::kNotFound);
}

TEST_F(CampaignTest, AProblemIsRunningExactlyWhileItsClaimIsHeld) {
  CampaignSpec s = spec({"a"});
  const fs::path c = root() / "campaign";
  EXPECT_EQ(read_problem_status(c, s.problems[0]).state, ProblemState::kPending);
  {
    auto claim = ProblemClaim::try_take(c, s.problems[0]);
    ASSERT_TRUE(claim.ok() && claim->has_value());
    EXPECT_EQ(read_problem_status(c, s.problems[0]).state, ProblemState::kRunning);
    auto second = ProblemClaim::try_take(c, s.problems[0]);
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(second->has_value()) << "two lanes ran one problem";
  }
  EXPECT_EQ(read_problem_status(c, s.problems[0]).state, ProblemState::kPending)
      << "a released claim left the problem running";
}

TEST(ProblemStateTest, EachStateRoundTripsThroughItsNameOnDisk) {
  for (ProblemState st : {ProblemState::kPending, ProblemState::kRunning, ProblemState::kDone, ProblemState::kFailed,
                          ProblemState::kNotTimed}) {
    EXPECT_EQ(problem_state_from_string(to_string(st)), st) << to_string(st);
    ProblemStatus status;
    status.state = st;
    EXPECT_EQ(status.to_json()["state"], to_string(st)) << "status.json keeps the name";
    EXPECT_EQ(ProblemStatus::from_json(status.to_json()).state, st);
  }
  EXPECT_STREQ(to_string(ProblemState::kNotTimed), "not_timed");
  EXPECT_FALSE(problem_state_from_string("Done").has_value());
  EXPECT_EQ(ProblemStatus::from_json(nlohmann::json{{"state", "paused"}}).state, ProblemState::kPending)
      << "a name this build does not know runs again, as before";
  EXPECT_EQ(ProblemStatus::from_json(nlohmann::json::object()).state, ProblemState::kPending);
  EXPECT_TRUE(is_finished(ProblemState::kFailed));
  EXPECT_FALSE(is_finished(ProblemState::kRunning));
}

TEST_F(CampaignTest, EachOutcomeOfOptimizeLandsInTheLedgerAndARerunTakesOnlyWhatIsLeft) {
  CampaignSpec s = spec({"a_ok", "b_fails", "c_nogpu", "d_ok"});
  CampaignOptions o = options({"0", "3"});
  auto run = run_campaign(s, o);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->ran, 4);
  EXPECT_EQ(run->done, 2);
  EXPECT_EQ(run->failed, 1);
  EXPECT_EQ(run->not_timed, 1);
  const auto ledger = campaign_ledger(o.dir, s);
  EXPECT_EQ(ledger[0].state, ProblemState::kDone);
  EXPECT_DOUBLE_EQ(ledger[0].result.value("speedup_vs_reference", 0.0), 1.5);
  EXPECT_EQ(ledger[1].state, ProblemState::kFailed);
  EXPECT_NE(ledger[1].error.find("boom"), std::string::npos) << ledger[1].error;
  EXPECT_EQ(ledger[2].state, ProblemState::kNotTimed);
  std::set<std::string> gpus;
  for (const auto& line : calls()) gpus.insert(split(line, '|')[1]);
  EXPECT_EQ(gpus, (std::set<std::string>{"0", "3"})) << "each lane pins its child to its GPU";
  for (const auto& line : calls()) {
    EXPECT_NE(line.find("--budget 3"), std::string::npos) << line;
    EXPECT_EQ(line.find("--resume"), std::string::npos) << "a first run resumed: " << line;
  }

  fs::remove(log());
  auto again = run_campaign(s, o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ran, 0) << "a finished problem ran again";
  o.retry_failed = true;
  auto retry = run_campaign(s, o);
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->ran, 1);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(split(calls()[0], '|')[0], "b_fails");
  EXPECT_NE(calls()[0].find("--resume"), std::string::npos) << "a second attempt must resume its store";
  EXPECT_EQ(campaign_ledger(o.dir, s)[1].attempts, 2);
}

TEST_F(CampaignTest, AHeldGpuLeavesTheProblemPendingAfterTwoRetries) {
  CampaignSpec s = spec({"a_busy"});
  auto run = run_campaign(s, options());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->pending, 1);
  EXPECT_EQ(run->failed, 0) << "a held GPU is the machine's, not the problem's";
  EXPECT_EQ(calls().size(), 3u) << "the first try and two retries";
}

TEST_F(CampaignTest, AManualPromptWaitingForItsAnswerLeavesTheProblemPending) {
  CampaignSpec s = spec({"a_manual"});
  auto run = run_campaign(s, options());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->pending, 1);
  EXPECT_NE(campaign_ledger(root() / "campaign", s)[0].error.find("answer"), std::string::npos);
}

TEST_F(CampaignTest, WithoutAGpuTheLaneHidesEveryDevice) {
  CampaignSpec s = spec({"a_nogpu"});
  auto run = run_campaign(s, options({}));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->not_timed, 1);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(split(calls()[0], '|')[1], "");
}

TEST_F(CampaignTest, AnInterruptStopsTheChildAndLeavesItsProblemPending) {
  CampaignSpec s = spec({"a_slow", "b_ok"});
  CampaignOptions o = options();
  const auto t0 = std::chrono::steady_clock::now();
  o.interrupted = [&] { return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(500); };
  auto run = run_campaign(s, o);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->interrupted);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "the child did not stop";
  EXPECT_EQ(run->pending, 2);
  EXPECT_EQ(campaign_ledger(o.dir, s)[0].state, ProblemState::kPending);
  EXPECT_EQ(calls().size(), 1u) << "a lane took a new problem after the interrupt";
}

TEST_F(CampaignTest, AChildThatIgnoresTheInterruptIsKilledAfterTheGrace) {
  CampaignSpec s = spec({"a_stubborn_slow"});
  CampaignOptions o = options();
  o.env.push_back({"FAKE_IGNORE_INT", "1"});
  o.stop_grace_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  o.interrupted = [&] { return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(300); };
  auto run = run_campaign(s, o);
  ASSERT_TRUE(run.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "the campaign waited for its child";
  const ProblemStatus st = campaign_ledger(o.dir, s)[0];
  EXPECT_EQ(st.state, ProblemState::kPending) << "killed with the campaign: its evaluation in flight is lost, the "
                                                 "problem is not";
  EXPECT_NE(st.error.find("stopped with the campaign"), std::string::npos) << st.error;
}

// An optimize still setting up has no SIGINT handler yet, so the campaign's interrupt ends it by
// the signal: the problem stays pending for the next run (a `timeout` around `bench run` did this to
// a KernelBench problem on the H100), not failed, so a plain rerun takes it again.
TEST_F(CampaignTest, AChildTheInterruptEndsBeforeItsHandlerIsPendingNotFailed) {
  CampaignSpec s = spec({"a_starting"});
  CampaignOptions o = options();
  const auto t0 = std::chrono::steady_clock::now();
  o.interrupted = [&] { return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(300); };
  auto run = run_campaign(s, o);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->failed, 0);
  EXPECT_EQ(run->pending, 1);
  EXPECT_NE(campaign_ledger(o.dir, s)[0].error.find("SIGINT"), std::string::npos) << campaign_ledger(o.dir, s)[0].error;
  EXPECT_EQ(calls().size(), 1u);
}

TEST_F(CampaignTest, ATaskOfAJobArrayRunsOnlyItsProblemOnTheGpuItWasGiven) {
  CampaignSpec s = spec({"a", "b"});
  CampaignOptions o = options();
  o.inherit_gpu = true;
  o.only_ids = {"b"};
  auto run = run_campaign(s, o);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->ran, 1);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(split(calls()[0], '|')[0], "b");
  o.only_ids = {"zz"};
  EXPECT_EQ(run_campaign(s, o).error().code, ErrorCode::kInvalidInput);
}

TEST(BuildSlotTest, TheSlotsBoundTheCompilersAtOnce) {
  auto dir = sys::TempDir::create("kp-slots-").value();
  const std::string spec = (dir.path() / "slots").string() + ":1";
  auto first = build::BuildSlot::take(spec);
  ASSERT_TRUE(first.ok()) << first.error().message;
  std::atomic<bool> second_in{false};
  std::thread t([&] {
    auto second = build::BuildSlot::take(spec);
    second_in = second.ok();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(second_in.load()) << "two compilers in one slot";
  { auto release = std::move(*first); }
  t.join();
  EXPECT_TRUE(second_in.load());
  EXPECT_FALSE(build::BuildSlot::take("no-colon").ok());
  EXPECT_FALSE(build::BuildSlot::take("/tmp/x:0").ok());
}

// A problem stopped and resumed (here: a manual prompt answered) gets what is left of the
// campaign's budget, not the whole budget again: its store already measured two candidates (one
// of them recorded twice, as a duplicate is), so of --budget 3 one is left.
TEST_F(CampaignTest, AResumedProblemGetsWhatIsLeftOfItsBudget) {
  CampaignSpec s = spec({"a_manual"});
  const fs::path run = root() / "campaign" / "runs" / s.problems[0].folder();
  fs::create_directories(run);
  {
    auto st = store::RunStore::open(run / "store.db").value();
    const int64_t c0 = st.add_candidate("seed", "").value(), c1 = st.add_candidate("fast", "").value();
    const int64_t n0 = st.add_node({0, -1, "root", "seed", c0}).value();
    const int64_t n1 = st.add_node({0, n0, "idea", "float4", c1}).value();
    const int64_t n2 = st.add_node({0, n0, "idea", "float4, again", c1}).value();
    ASSERT_TRUE(st.record_evaluation(n0, {c0, "ok", "", 0.002, 0, 1.0, "{}"}, true, 0.002, 0).ok());
    ASSERT_TRUE(st.record_evaluation(n1, {c1, "ok", "", 0.001, 0, 2.0, "{}"}, true, 0.001, 0).ok());
    ASSERT_TRUE(st.record_evaluation(n2, {c1, "ok", "", 0.001, 0, 2.0, "{}"}, true, 0.001, 0).ok());
  }
  ASSERT_TRUE(run_campaign(s, options()).ok());
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_NE(calls()[0].find("--resume --budget 1"), std::string::npos) << calls()[0];

  EXPECT_EQ(remaining_budget_args({"--budget", "3", "--search", "mcts"}, 5),
            (std::vector<std::string>{"--budget", "1", "--search", "mcts"}))
      << "at least one, so that the run settles";
  EXPECT_EQ(remaining_budget_args({"--search", "greedy"}, 2), (std::vector<std::string>{"--search", "greedy"}));
}

}  // namespace
}  // namespace kp::campaign
