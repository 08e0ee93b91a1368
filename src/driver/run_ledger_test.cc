// The run ledger's accounting: enums by their stored names, the budget, the ratios and lines of
// a measured change, the tree replayed from store rows, the verdicts known by files and code, and
// a ledger on a real store through the seed, a resume and best.json.
#include "driver/run_ledger.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "sys/temp_dir.h"
#include "util/strings.h"

namespace kp::driver {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(RunLedger, StopReasonsAndModesRoundTripThroughTheirStoredNames) {
  for (StopReason r : {StopReason::kExhausted, StopReason::kBudget, StopReason::kInterrupted, StopReason::kNoGpu,
                       StopReason::kPending})
    EXPECT_EQ(stop_reason_from_string(to_string(r)), r) << to_string(r);
  // The names best.json, --json and the CLI's messages have always used.
  EXPECT_STREQ(to_string(StopReason::kNoGpu), "no_gpu");
  EXPECT_STREQ(to_string(StopReason::kBudget), "budget");
  EXPECT_STREQ(to_string(StopReason::kExhausted), "exhausted");
  EXPECT_EQ(stop_reason_from_string("no-gpu"), std::nullopt);
  EXPECT_EQ(stop_reason_from_string(""), std::nullopt);

  EXPECT_STREQ(to_string(RunMode::kTuner), "tuner");
  EXPECT_STREQ(to_string(RunMode::kModel), "model");
  EXPECT_EQ(run_mode_from_string("model"), RunMode::kModel);
  EXPECT_EQ(run_mode_from_string("tuner"), RunMode::kTuner);
  EXPECT_EQ(run_mode_from_string("Model"), std::nullopt);
}

TEST(RunLedger, OfTwoReasonsToStopTheOneToActOnFirstIsKept) {
  using R = StopReason;
  EXPECT_EQ(first_to_act_on(R::kBudget, R::kNoGpu), R::kNoGpu);
  EXPECT_EQ(first_to_act_on(R::kNoGpu, R::kPending), R::kNoGpu);
  EXPECT_EQ(first_to_act_on(R::kBudget, R::kPending), R::kPending);
  EXPECT_EQ(first_to_act_on(R::kPending, R::kBudget), R::kPending);
  EXPECT_EQ(first_to_act_on(R::kInterrupted, R::kBudget), R::kBudget);
  EXPECT_EQ(first_to_act_on(R::kInterrupted, R::kExhausted), R::kInterrupted) << "a tie keeps the first";
}

TEST(RunLedger, TheBudgetIsEvaluationsWallGpuAndLlmBeforeAnInterrupt) {
  OptimizeOptions o;
  o.max_evaluations = 10;
  int asked = 0;
  auto ctrl_c = [&] {
    ++asked;
    return true;
  };
  EXPECT_EQ(over_budget({9, 100, 100, false}, o, nullptr), std::nullopt) << "no wall or GPU limit: 0";
  EXPECT_EQ(over_budget({10, 0, 0, false}, o, ctrl_c), StopReason::kBudget);
  EXPECT_EQ(asked, 0) << "the interrupt is asked only when the budget is not spent";
  EXPECT_EQ(over_budget({0, 0, 0, true}, o, nullptr), StopReason::kBudget) << "the LLM's budget";
  EXPECT_EQ(over_budget({0, 0, 0, false}, o, ctrl_c), StopReason::kInterrupted);
  EXPECT_EQ(asked, 1);
  o.max_wall_s = 60;
  o.max_gpu_s = 30;
  EXPECT_EQ(over_budget({0, 59.9, 29.9, false}, o, nullptr), std::nullopt);
  EXPECT_EQ(over_budget({0, 60, 0, false}, o, nullptr), StopReason::kBudget);
  EXPECT_EQ(over_budget({0, 0, 30, false}, o, nullptr), StopReason::kBudget);
}

TEST(RunLedger, AChangeHasRatiosOnlyWhereBothSidesWereMeasured) {
  store::Lesson l;
  set_change_ratios(l, {true, 2e-3, 4.0}, {true, 1e-3, 1.0});
  EXPECT_DOUBLE_EQ(l.time_ratio, 2.0);
  EXPECT_DOUBLE_EQ(l.energy_ratio, 4.0);
  set_change_ratios(l, {true, 2e-3, 0}, {true, 1e-3, 1.0});
  EXPECT_DOUBLE_EQ(l.time_ratio, 2.0);
  EXPECT_EQ(l.energy_ratio, 0) << "no energy before";
  set_change_ratios(l, {false, 0, 0}, {true, 1e-3, 1.0});
  EXPECT_EQ(l.time_ratio, 0) << "a fix of a failure has nothing to compare with";
  set_change_ratios(l, {true, 2e-3, 4.0}, {false, 0, 0});
  EXPECT_EQ(l.time_ratio, 0);
  EXPECT_EQ(l.energy_ratio, 0);

  EXPECT_EQ(measured_line("BLOCK=64", "ok", {true, 0.5e-3, 0}, 1e-3, "", "STATUS"),
            "BLOCK=64: ok 0.5 ms, 2.00x the seed | STATUS");
  EXPECT_EQ(measured_line("fuse", "incorrect", {false, 0, 0}, 1e-3, std::string(300, 'x'), "S"),
            "fuse: incorrect (" + std::string(120, 'x') + ") | S");
}

store::NodeRow row(int64_t id, int64_t parent, std::string kind, std::string direction, bool measured, double s) {
  store::NodeRow r;
  r.id = id;
  r.parent = parent;
  r.kind = std::move(kind);
  r.direction = std::move(direction);
  r.candidate = id;
  r.measured = measured;
  r.ok = s > 0;
  r.seconds = s;
  return r;
}

TEST(RunLedger, AReplayedTreeDropsWhatWasInFlightWithEverythingUnderIt) {
  std::vector<store::NodeRow> rows = {row(1, -1, "root", "the seed", true, 2e-3),
                                      row(2, 1, "idea", "fuse", true, 1e-3),
                                      row(3, 1, "idea", "tile", false, 0),  // in flight at the stop
                                      row(4, 3, "idea", "under tile", true, 1e-3),
                                      row(5, 2, "repair", "fix", true, 0)};
  rows[1].closed = true;
  rows[0].exhausted = true;
  std::vector<std::pair<int64_t, int>> seen;
  auto tree = replay_tree(
      rows, {true, 4e-3, 0}, {}, [](const std::string& k) { return *search::edge_kind_from_string(k); },
      [&](const store::NodeRow& r, int id) {
        seen.emplace_back(r.id, id);
        return ok_status();
      });
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  ASSERT_EQ(tree->size(), 3u);
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, int>>{{1, 0}, {2, 1}, {5, 2}}));
  EXPECT_EQ(tree->node(1).via.text, "fuse");
  EXPECT_EQ(tree->node(2).via.kind, search::EdgeKind::kRepair);
  EXPECT_EQ(tree->node(2).parent, 1);
  EXPECT_TRUE(tree->node(2).failed());
  EXPECT_TRUE(tree->node(1).closed);
  EXPECT_TRUE(tree->node(0).exhausted);
  EXPECT_DOUBLE_EQ(tree->reference().seconds, 4e-3);
  EXPECT_EQ(tree->best(), 1);

  auto failing = replay_tree(
      rows, {true, 4e-3, 0}, {}, [](const std::string&) { return search::EdgeKind::kIdea; },
      [&](const store::NodeRow& r, int) { return r.id == 2 ? Status(make_error(ErrorCode::kIo, "disk")) : ok_status(); });
  ASSERT_FALSE(failing.ok());
  EXPECT_EQ(failing.error().message, "disk");
}

class Ledger : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-ledger-").value());
    task_.name = "transpose";
    task_.category = "memory";
    o_.run_dir = dir_->path() / "run";
    o_.max_evaluations = 5;
  }
  eval::EvalResult seed_result() const {
    eval::EvalResult r;
    r.outcome = eval::Outcome::kOk;
    r.time.median = 2e-3;
    r.reference_seconds = 6e-3;
    r.speedup_vs_reference = 3;
    r.build_seconds = 0.5;
    r.worker_seconds = 1.25;
    return r;
  }
  std::unique_ptr<sys::TempDir> dir_;
  task::Task task_;
  OptimizeOptions o_;
};

TEST_F(Ledger, TheSeedIsTheRootAndTheSummaryIsBestJson) {
  auto ledger = RunLedger::open(task_, o_, RunMode::kModel, RunLedger::Clock::now());
  ASSERT_TRUE(ledger.ok()) << ledger.error().message;
  EXPECT_TRUE(fs::is_directory(o_.run_dir / "candidates"));

  auto cand = ledger->store().add_candidate("__global__ void k() {}", "");
  ASSERT_TRUE(cand.ok());
  auto paths = ledger->write_candidate(*cand, {"__global__ void k() {}", ""});
  ASSERT_TRUE(paths.ok());
  EXPECT_EQ(paths->cu, o_.run_dir / "candidates" / fmt::format("{}.cu", *cand));
  EXPECT_TRUE(paths->py.empty()) << "no python, no file";
  EXPECT_EQ(read_file(paths->cu.string()).value(), "__global__ void k() {}");

  const eval::EvalResult r = seed_result();
  ledger->count_evaluation();
  ledger->add_times(r);
  ledger->add_times(r);  // a step that needs a GPU costs time but is no evaluation
  EXPECT_EQ(ledger->evaluated(), 1);
  EXPECT_DOUBLE_EQ(ledger->report().build_s, 1.0);
  EXPECT_DOUBLE_EQ(ledger->report().worker_s, 2.5);
  ASSERT_TRUE(ledger->record_root(task_, RunMode::kModel, *cand, "the seed", r, "{}", {{"gpu", "NVIDIA H200"}}).ok());
  EXPECT_EQ(ledger->store().meta("mode"), "model");
  EXPECT_EQ(ledger->store().meta("task"), "transpose");
  EXPECT_EQ(ledger->store().meta("gpu"), "NVIDIA H200");
  EXPECT_DOUBLE_EQ(ledger->reference().seconds, 6e-3);

  auto rows = ledger->store().nodes().value();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kind, "root");
  EXPECT_TRUE(rows[0].measured);
  auto tree = replay_tree(
      rows, ledger->reference(), {}, [](const std::string&) { return search::EdgeKind::kIdea; },
      [](const store::NodeRow&, int) { return ok_status(); });
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ(ledger->status(*tree, nullptr, ", more").rfind("best 1.00x the seed | 1/5 evaluated, ", 0), 0u)
      << ledger->status(*tree);
  const search::Measurement faster{true, 1e-3, 0};
  EXPECT_EQ(ledger->status(*tree, &faster).rfind("best 2.00x the seed", 0), 0u) << "a measurement not in the tree yet";
  EXPECT_NE(ledger->status(*tree, nullptr, ", more").find("GPU 2 s, more"), std::string::npos);
  EXPECT_EQ(ledger->over_budget(false, nullptr), std::nullopt);

  const int best = ledger->settle(*tree, StopReason::kExhausted);
  EXPECT_EQ(best, 0);
  auto report = ledger->write_summary(task_, {{"feedback", "tools"}});
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->stopped, "exhausted");
  EXPECT_EQ(report->nodes, 1);
  EXPECT_EQ(report->evaluated, 1);
  EXPECT_DOUBLE_EQ(report->seed_seconds, 2e-3);
  EXPECT_DOUBLE_EQ(report->reference_seconds, 6e-3);
  const json j = json::parse(read_file((o_.run_dir / "best.json").string()).value());
  EXPECT_EQ(j["stopped"], "exhausted");
  EXPECT_EQ(j["task"], "transpose");
  EXPECT_EQ(j["strategy"], "mcts");
  EXPECT_EQ(j["objective"], "time");
  EXPECT_EQ(j["feedback"], "tools");
  EXPECT_DOUBLE_EQ(j["speedup_vs_reference"].get<double>(), 3.0);
  EXPECT_FALSE(j.contains("lessons_shared")) << "no memory";
}

TEST_F(Ledger, ARunDirectoryBelongsToOneKindOfSearchAndIsResumedOnlyWhenAsked) {
  {
    auto ledger = RunLedger::open(task_, o_, RunMode::kModel, RunLedger::Clock::now());
    ASSERT_TRUE(ledger.ok());
    auto cand = ledger->store().add_candidate("seed", "");
    ASSERT_TRUE(ledger->record_root(task_, RunMode::kModel, *cand, "the seed", seed_result(), "{}").ok());
  }
  auto again = RunLedger::open(task_, o_, RunMode::kModel, RunLedger::Clock::now());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("add --resume"), std::string::npos) << again.error().message;
  o_.resume = true;
  auto tuner = RunLedger::open(task_, o_, RunMode::kTuner, RunLedger::Clock::now());
  ASSERT_FALSE(tuner.ok());
  EXPECT_NE(tuner.error().message.find("holds a run of the model-driven search, not of the offline tuner"),
            std::string::npos)
      << tuner.error().message;
  task::Task other = task_;
  other.name = "softmax";
  auto wrong_task = RunLedger::open(other, o_, RunMode::kModel, RunLedger::Clock::now());
  ASSERT_FALSE(wrong_task.ok());
  EXPECT_NE(wrong_task.error().message.find("holds a run of task transpose, not softmax"), std::string::npos);
  auto resumed = RunLedger::open(task_, o_, RunMode::kModel, RunLedger::Clock::now());
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->evaluated(), 0) << "a resumed run counts its own evaluations";
}

TEST_F(Ledger, AStoppedSeedReportsWhyAndWhatItEvaluated) {
  auto ledger = RunLedger::open(task_, o_, RunMode::kTuner, RunLedger::Clock::now());
  ASSERT_TRUE(ledger.ok());
  eval::EvalResult r;  // not_run
  r.build_seconds = 2;
  ledger->count_evaluation();
  ledger->add_times(r);
  const OptimizeReport report = ledger->stop_at_seed(StopReason::kNoGpu);
  EXPECT_EQ(report.stopped, "no_gpu");
  EXPECT_EQ(report.evaluated, 1);
  EXPECT_DOUBLE_EQ(report.build_s, 2);
  EXPECT_TRUE(ledger->store().nodes().value().empty()) << "nothing recorded: the GPU machine evaluates it";
}

TEST_F(Ledger, AVerdictIsFoundByFilesOrByCodeAndKeptAcrossAResume) {
  auto ledger = RunLedger::open(task_, o_, RunMode::kModel, RunLedger::Clock::now());
  ASSERT_TRUE(ledger.ok());
  store::RunStore& store = ledger->store();
  const agent::CandidateFiles a{"__global__ void k() {}  // first\n", ""};
  const agent::CandidateFiles a_spaced{"__global__   void k()   {}\n\n/* the same code */\n", ""};
  const agent::CandidateFiles b{"__global__ void k(int n) {}\n", ""};
  const int64_t ca = store.add_candidate(a.cuda, "").value();
  const int64_t ca2 = store.add_candidate(a_spaced.cuda, "").value();
  const int64_t cb = store.add_candidate(b.cuda, "").value();

  KnownVerdicts known;
  EXPECT_EQ(known.find(ca, a), nullptr);
  known.add(ca, {ca, "ok", "", 1e-3, 0, 2, "{}"}, &a);
  ASSERT_NE(known.find(ca, a), nullptr);
  const store::EvaluationRow* same_code = known.find(ca2, a_spaced);
  ASSERT_NE(same_code, nullptr) << "comments and spacing aside, the same code";
  EXPECT_EQ(same_code->candidate, ca);
  EXPECT_EQ(known.find(cb, b), nullptr);
  known.add(ca2, {ca2, "ok", "", 1e-3, 0, 2, "{}"});  // a duplicate's verdict: by its id only
  EXPECT_NE(known.of(ca2), nullptr);

  // A store's verdicts: the node and evaluation of a as the model loop records them.
  auto root = store.add_node({0, -1, "root", "the seed", ca, false}).value();
  ASSERT_TRUE(store.record_evaluation(root, {ca, "ok", "", 1e-3, 0, 2, "{}"}, true, 1e-3, 0).ok());
  auto loaded = KnownVerdicts::load(store);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_NE(loaded->find(ca2, a_spaced), nullptr) << "found by code after a resume";
  EXPECT_EQ(loaded->find(ca2, a_spaced)->candidate, ca);
  EXPECT_EQ(loaded->find(cb, b), nullptr);
}

TEST(RunLedger, CandidateFilesAreWrittenOnlyForTheFormsTheyHave) {
  auto dir = sys::TempDir::create("kp-ledger-files-").value();
  auto both = write_candidate_files({"cuda text", "python text"}, dir.path(), "candidate");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->cu, dir.path() / "candidate.cu");
  EXPECT_EQ(both->py, dir.path() / "candidate.py");
  EXPECT_EQ(read_file(both->py.string()).value(), "python text");
  auto py_only = write_candidate_files({"", "only python"}, dir.path(), "7");
  ASSERT_TRUE(py_only.ok());
  EXPECT_TRUE(py_only->cu.empty());
  EXPECT_FALSE(fs::exists(dir.path() / "7.cu"));
  EXPECT_EQ(read_file((dir.path() / "7.py").string()).value(), "only python");
  auto nowhere = write_candidate_files({"x", ""}, dir.path() / "missing", "1");
  EXPECT_FALSE(nowhere.ok()) << "the directory must exist";
}

}  // namespace
}  // namespace kp::driver
