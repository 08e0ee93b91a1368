// The offline tuner's loop with a fake evaluator (a GPU's verdicts cannot be produced here):
// the time of a candidate is a function of the KP_TUNE defaults its file declares. The store,
// the files and the search are real.
#include "driver/optimize_session.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "store/run_store.h"
#include "sys/temp_dir.h"
#include "task/native_task_loader.h"
#include "task/tune_params.h"
#include "tests/support/fake_workbench.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::driver {
namespace {

namespace fs = std::filesystem;

struct FakeGpu {
  std::map<std::string, int> evaluations;  // "BLOCK_X=32 BLOCK_Y=8" -> times evaluated
  bool gpu = true;
  int busy_after = -1;  // >= 0: every evaluation after this many answers gpu_unavailable
  int answered = 0;
  Result<eval::EvalResult> operator()(const fs::path& cu) {
    auto src = read_file(cu.string());
    if (!src) return src.error();
    auto params = task::parse_tune_params(*src).value();
    const long long x = params[0].values.front(), y = params[1].values.front();
    ++evaluations[fmt::format("BLOCK_X={} BLOCK_Y={}", x, y)];
    eval::EvalResult r;
    if (!gpu) return r;  // not_run
    if (busy_after >= 0 && answered >= busy_after) {
      r.outcome = eval::Outcome::kGpuUnavailable;
      r.reason = "out of device memory while 70.0 GiB of the GPU are held outside this worker";
      return r;
    }
    ++answered;
    r.build_seconds = 0.5;
    r.worker_seconds = 1.0;
    if (x == 64 && y == 16) {  // too many threads per block: a launch failure
      r.outcome = eval::Outcome::kRuntimeError;
      r.reason = "too many resources requested for launch";
      return r;
    }
    r.outcome = eval::Outcome::kOk;
    // Fastest at BLOCK_X=32, BLOCK_Y=16 (1.0 ms); the seed (32 x 8) takes 1.6 ms.
    r.time.median = 1e-3 * (1.0 + 0.6 * (y == 8) + 1.0 * (y == 4) + 0.8 * (x != 32));
    r.time.count = 100;
    r.reference_seconds = 3e-3;
    r.speedup_vs_reference = r.reference_seconds / r.time.median;
    return r;
  }
};

class OptimizeSession : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = task::load_native_task((kp::testing::examples_dir() / "transpose").string());
    ASSERT_TRUE(t.ok());
    task_ = *t;
    dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-opt-").value());
    o_.run_dir = dir_->path() / "run";
  }
  Result<OptimizeReport> run(FakeGpu& gpu) {
    testing::FakeWorkbench bench;
    bench.on_evaluate = [&](const CandidatePaths& c) { return gpu(c.cu); };
    if (prebuilt_)
      bench.on_build_ahead = [&](const fs::path& cu) { prebuilt_->push_back(read_file(cu.string()).value()); };
    LoopControls controls;
    controls.progress = [&](const std::string& line) { progress_.push_back(line); };
    return run_optimize(task_, bench, controls, o_);
  }
  std::vector<std::string> progress_;
  std::optional<std::vector<std::string>> prebuilt_;  // sources handed to build_ahead
  task::Task task_;
  std::unique_ptr<sys::TempDir> dir_;
  OptimizeOptions o_;
};

TEST_F(OptimizeSession, TunesTheSeedToTheBestPointAndWritesIt) {
  FakeGpu gpu;
  o_.max_evaluations = 20;
  auto r = run(gpu);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stopped, "exhausted") << "nine points, all tried";
  EXPECT_EQ(r->evaluated, 9);
  EXPECT_EQ(r->best_point, "BLOCK_X=32 BLOCK_Y=16");
  EXPECT_DOUBLE_EQ(r->seed_seconds, 1.6e-3);
  EXPECT_DOUBLE_EQ(r->best_seconds, 1.0e-3);
  for (const auto& [point, n] : gpu.evaluations) EXPECT_EQ(n, 1) << point << " evaluated twice";
  auto best = read_file((o_.run_dir / "best.cu").string());
  ASSERT_TRUE(best.ok());
  EXPECT_NE(best->find("KP_TUNE(BLOCK_Y, 16, 4, 8)"), std::string::npos) << *best;
  auto j = nlohmann::json::parse(read_file((o_.run_dir / "best.json").string()).value());
  EXPECT_DOUBLE_EQ(j["speedup_vs_seed"].get<double>(), 1.6);
  EXPECT_DOUBLE_EQ(j["speedup_vs_reference"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["time_s"]["build"].get<double>(), 4.5);
  // Each step says what is in flight, then its verdict, with the best so far and the budget.
  bool in_flight = false, verdict = false;
  for (const auto& l : progress_) {
    in_flight = in_flight || (l.rfind("evaluating BLOCK_X=", 0) == 0 && l.find("/20 evaluated") != std::string::npos);
    verdict = verdict || l.rfind("BLOCK_X=32 BLOCK_Y=16: ok 1 ms, 1.60x the seed | best 1.60x the seed | ", 0) == 0;
  }
  EXPECT_TRUE(in_flight);
  EXPECT_TRUE(verdict) << ::testing::PrintToString(progress_);
}

TEST_F(OptimizeSession, AStoppedRunResumesWithoutEvaluatingAnythingTwice) {
  FakeGpu gpu;
  o_.max_evaluations = 4;
  o_.memory = dir_->path() / "memory.db";
  auto first = run(gpu);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->stopped, "budget");
  EXPECT_EQ(first->evaluated, 4);
  EXPECT_EQ(first->lessons_shared, 3) << "one lesson per change (the seed is none)";
  auto again = run(gpu);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("add --resume"), std::string::npos);
  o_.resume = true;
  o_.max_evaluations = 20;
  auto second = run(gpu);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->evaluated, 5) << "the other five points";
  EXPECT_EQ(second->nodes, 9);
  EXPECT_EQ(second->best_point, "BLOCK_X=32 BLOCK_Y=16");
  for (const auto& [point, n] : gpu.evaluations) EXPECT_EQ(n, 1) << point << " evaluated twice";
  auto store = store::RunStore::open(o_.run_dir / "store.db", store::RunStore::Access::kReader).value();
  EXPECT_EQ(store.evaluations().value().size(), 9u);
  const auto nodes = store.nodes().value();
  for (const auto& n : nodes) EXPECT_GT(n.candidate, 0) << "node " << n.id << " names its candidate";
  EXPECT_EQ(second->lessons_shared, 5) << "only the resumed run's new lessons";
  auto memory = store::RunStore::open(o_.memory, store::RunStore::Access::kReader).value();
  auto lessons = memory.lessons("", "data-movement", 20).value();
  ASSERT_EQ(lessons.size(), 8u);
  bool found = false;
  for (const auto& l : lessons)
    found = found ||
            (l.direction == "BLOCK_Y 8 -> 16" && l.evidence == "1.6 ms -> 1 ms" && std::abs(l.time_ratio - 1.6) < 1e-9);
  EXPECT_TRUE(found) << "the seed's step to the best point";
}

TEST_F(OptimizeSession, AnInterruptStopsAfterTheEvaluationInFlight) {
  FakeGpu gpu;
  testing::FakeWorkbench bench;
  int calls = 0;
  bench.on_evaluate = [&](const CandidatePaths& c) {
    ++calls;
    return gpu(c.cu);
  };
  LoopControls controls;
  controls.interrupted = [&] { return calls >= 3; };  // Ctrl-C during the third evaluation
  auto r = run_optimize(task_, bench, controls, o_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stopped, "interrupted");
  EXPECT_EQ(r->evaluated, 3) << "the third finished and was kept";
  auto store = store::RunStore::open(o_.run_dir / "store.db", store::RunStore::Access::kReader).value();
  EXPECT_EQ(store.evaluations().value().size(), 3u);
  EXPECT_TRUE(fs::exists(o_.run_dir / "best.cu"));
}

TEST_F(OptimizeSession, AGpuHeldElsewhereStopsTheRunWithNothingRecordedAndItResumes) {
  FakeGpu gpu;
  gpu.busy_after = 3;  // the seed and two points, then another process takes the GPU
  o_.max_evaluations = 20;
  o_.memory = dir_->path() / "memory.db";
  auto first = run(gpu);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->stopped, "gpu_unavailable");
  {
    auto store = store::RunStore::open(o_.run_dir / "store.db", store::RunStore::Access::kReader).value();
    const auto verdicts = store.evaluations().value();
    EXPECT_EQ(verdicts.size(), 3u);
    for (const auto& v : verdicts) EXPECT_NE(v.outcome, "gpu_unavailable") << "the machine's failure was stored";
    auto memory = store::RunStore::open(o_.memory, store::RunStore::Access::kReader).value();
    const auto lessons = memory.lessons("", "data-movement", 20).value();
    EXPECT_EQ(lessons.size(), 2u) << "one per measured change";
    for (const auto& l : lessons)
      EXPECT_NE(l.outcome, "gpu_unavailable") << "a lesson was learned from the machine's failure";
  }
  gpu.busy_after = -1;  // the GPU is free again
  o_.resume = true;
  auto second = run(gpu);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->stopped, "exhausted");
  EXPECT_EQ(second->nodes, 9) << "every point measured, the one in flight at the stop too";
  EXPECT_EQ(second->best_point, "BLOCK_X=32 BLOCK_Y=16");
}

TEST_F(OptimizeSession, AGpuHeldElsewhereAtTheSeedStopsBeforeAnythingIsStored) {
  FakeGpu gpu;
  gpu.busy_after = 0;
  auto r = run(gpu);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stopped, "gpu_unavailable");
  EXPECT_EQ(r->nodes, 0);
}

TEST_F(OptimizeSession, SaysWhatIsMissing) {
  FakeGpu none;
  none.gpu = false;
  auto r = run(none);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->stopped, "no_gpu");
  task_.seed_path.reset();
  FakeGpu gpu;
  auto no_seed = run(gpu);
  ASSERT_FALSE(no_seed.ok());
  EXPECT_NE(no_seed.error().message.find("configure a model (--provider)"), std::string::npos);
}

// Compiling ahead: the points handed to build_ahead are ones the search then evaluates,
// each handed over once, and never the one being evaluated at that moment.
TEST_F(OptimizeSession, CompilesThePointsAheadThatItThenEvaluates) {
  FakeGpu gpu;
  prebuilt_.emplace();
  o_.max_evaluations = 20;
  auto report = run(gpu);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_FALSE(prebuilt_->empty());
  EXPECT_EQ(report->built_ahead, static_cast<int>(prebuilt_->size()));
  std::set<std::string> seen;
  int evaluated_later = 0;
  for (const auto& src : *prebuilt_) {
    EXPECT_TRUE(seen.insert(src).second) << "a point compiled ahead twice";
    auto params = task::parse_tune_params(src).value();
    const std::string point = fmt::format("BLOCK_X={} BLOCK_Y={}", params[0].values.front(), params[1].values.front());
    evaluated_later += gpu.evaluations.count(point) ? 1 : 0;
  }
  EXPECT_GE(evaluated_later * 2, static_cast<int>(prebuilt_->size())) << "most points compiled ahead are evaluated";
  o_.build_ahead = 0;
  prebuilt_.emplace();
  o_.run_dir = dir_->path() / "run-without";
  FakeGpu again;
  auto without = run(again);
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE(prebuilt_->empty());
  EXPECT_EQ(without->best_point, report->best_point) << "compiling ahead changes no verdict";
}

}  // namespace
}  // namespace kp::driver
