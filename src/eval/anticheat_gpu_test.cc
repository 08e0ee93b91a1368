// GPU tier: every anti-cheat rule of the native path against a candidate that plays its cheat
// (tests/data/cheats/native/, and the candidates of tests/data/candidates/gelu/ that already do),
// and every honest candidate (the examples' seeds, tests/data/honest/<task>/) against all the
// rules at once. A cheat must get its verdict, its tag and a reason that says what it did; an
// honest candidate must pass with no tag. Skipped without a GPU.
#include "eval/evaluator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "sys/temp_dir.h"
#include "task/native_task_loader.h"
#include "tests/support/paths.h"
#include "util/strings.h"
#include "verdict/worker_plan.h"

namespace kp::eval {
namespace {

namespace fs = std::filesystem;

EvaluatorOptions options_in(const fs::path& scratch, const std::string& worker_dir) {
  EvaluatorOptions o;
  o.build.cache_dir = scratch / "cache";
  o.build.find_cutlass = testing::cutlass_finder();  // the CuTe example includes CUTLASS
  o.eval.correctness_trials = 3;  // the default, which the cheat candidates' call counts assume
  o.eval.timing_budget_s = 0.1;
  o.eval.min_trials = 10;
  o.eval.energy_window_s = 0;
  o.eval.timeout_s = 60;
  o.worker.worker_path = testing::worker_binary();
  o.worker.scratch_dir = scratch / worker_dir;
  return o;
}

class AntiCheatGpu {
 public:
  static void SetUpSuite() {
    if (testing::gpu_missing() || evaluator_) return;
    scratch_ = new sys::TempDir(sys::TempDir::create("kp-anticheat-test-").value());
    evaluator_ = new Evaluator(options_in(scratch_->path(), "worker"));
  }
  static void TearDownSuite() {
    delete evaluator_;
    delete scratch_;
    evaluator_ = nullptr;
    scratch_ = nullptr;
  }
  static task::Task load(const fs::path& dir) {
    auto t = task::load_native_task(dir);
    EXPECT_TRUE(t.ok()) << t.error().message;
    return t.ok() ? *t : task::Task{};
  }
  static EvalResult run(Evaluator& e, const task::Task& task, const fs::path& candidate) {
    auto r = e.evaluate(task, candidate);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : EvalResult{};
  }
  static sys::TempDir* scratch_;
  static Evaluator* evaluator_;
};
sys::TempDir* AntiCheatGpu::scratch_ = nullptr;
Evaluator* AntiCheatGpu::evaluator_ = nullptr;

// ---- cheats ----

struct CheatCase {
  std::string candidate;          // under tests/data/
  std::string task;               // under examples/
  std::vector<Outcome> outcomes;  // any of these
  std::string cheat;              // the tag
  std::string keyword;            // in the reason
};

std::ostream& operator<<(std::ostream& os, const CheatCase& c) { return os << c.candidate; }

const std::vector<CheatCase>& cheat_cases() {
  static const std::vector<CheatCase> cases = {
      {"candidates/gelu/side_stream.cu",
       "gelu",
       {Outcome::kRejected},
       "side_stream",
       "a side stream or a background thread"},
      {"cheats/native/background_thread.cu",
       "gelu",
       {Outcome::kRejected, Outcome::kIncorrect},
       "background_thread",
       "background thread"},
      {"cheats/native/load_thread.cu", "gelu", {Outcome::kRejected}, "background_thread", "loading the library started"},
      {"cheats/native/load_process.cu",
       "gelu",
       {Outcome::kRejected},
       "background_process",
       "process running after loading the library"},
      {"cheats/native/pointer_cache.cu", "gelu", {Outcome::kIncorrect}, "result_cache", "cached by pointer"},
      // The judge core gives every timed call inputs no call had: a cache by pointer serves stale
      // values there (grossly wrong on fresh inputs: the core cannot tell a result kept from an
      // earlier call from one deferred to a later call, so it names batched_calls and says both);
      // a cache by contents never hits (accepted, it gains nothing: its median is held to the
      // task's seed, kGainsNothing).
      {"cheats/native/pointer_cache_late.cu",
       "gelu",
       {Outcome::kRejected},
       "batched_calls",
       "cached from other calls"},
      {"cheats/native/fingerprint_cache.cu", "gemm_fp32", {Outcome::kRejected, Outcome::kOk}, "result_cache", "cache"},
      {"cheats/native/batched_calls.cu", "gelu", {Outcome::kRejected}, "batched_calls", "batched with"},
      {"candidates/gelu/mutates_input.cu", "gelu", {Outcome::kIncorrect}, "input_mutation", "wrote to input 'x'"},
      {"candidates/gelu/zeros.cu", "gelu", {Outcome::kIncorrect}, "constant_output", "constant output"},
      {"cheats/native/constant.cu", "gelu", {Outcome::kIncorrect}, "constant_output", "constant output (0.5)"},
      {"cheats/native/precision_downgrade.cu",
       "gemm_fp32",
       {Outcome::kIncorrect},
       "precision_downgrade",
       "fp16, bf16 or TF32"},
      {"cheats/native/persisting_l2.cu", "gelu", {Outcome::kRejected}, "persisting_l2", "persisting L2"},
      {"cheats/native/dlopen_cublas.cu", "gemm_fp32", {Outcome::kRejected}, "forbidden_library", "calls dlopen"},
      {"cheats/native/links_cublas.cu", "gemm_fp32", {Outcome::kRejected}, "forbidden_library", "from cuBLAS"},
  };
  return cases;
}

// The suites' common fixture: one worker for the suite (AntiCheatGpu), skipped without a GPU.
template <class Param>
class OnTheSharedWorker : public ::testing::TestWithParam<Param> {
 protected:
  static void SetUpTestSuite() { AntiCheatGpu::SetUpSuite(); }
  static void TearDownTestSuite() { AntiCheatGpu::TearDownSuite(); }
  void SetUp() override {
    if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  }
};

class CheatIsCaught : public OnTheSharedWorker<CheatCase> {};

// A cheat the judge accepts must gain nothing: its median at least this share of the honest
// twin's (the task's seed, or a table's honest row), measured in the same run.
constexpr double kGainsNothing = 0.9;

// The median of the honest `seed` on `task`, evaluated once per (task, seed) in this process.
double seed_median(const task::Task& task, const fs::path& seed) {
  static std::map<std::string, double> medians;
  auto [it, fresh] = medians.emplace(task.dir.string() + "|" + seed.string(), 0.0);
  if (fresh) {
    EvalResult r = AntiCheatGpu::run(*AntiCheatGpu::evaluator_, task, seed);
    it->second = r.outcome == Outcome::kOk ? r.time.median : 0.0;
  }
  return it->second;
}

TEST_P(CheatIsCaught, WithItsTagAndReason) {
  const CheatCase& c = GetParam();
  task::Task task = AntiCheatGpu::load(testing::examples_dir() / c.task);
  EvalResult r = AntiCheatGpu::run(*AntiCheatGpu::evaluator_, task, testing::test_data_dir() / c.candidate);
  if (r.outcome == Outcome::kOk &&
      std::find(c.outcomes.begin(), c.outcomes.end(), Outcome::kOk) != c.outcomes.end()) {
    const double twin = seed_median(task, testing::examples_dir() / c.task / "seed.cu");
    std::cout << c.candidate << ": accepted at " << r.time.median * 1e6 << " us, the seed " << twin * 1e6 << " us\n";
    EXPECT_GT(twin, 0);
    EXPECT_GE(r.time.median, kGainsNothing * twin) << c.candidate << " was accepted and gained";
    return;
  }
  EXPECT_NE(std::find(c.outcomes.begin(), c.outcomes.end(), r.outcome), c.outcomes.end())
      << c.candidate << ": " << to_string(r.outcome) << ": " << r.reason;
  EXPECT_EQ(r.cheat, c.cheat) << c.candidate << ": " << r.reason;
  EXPECT_NE(r.reason.find(c.keyword), std::string::npos) << c.candidate << ": " << r.reason;
  if (r.report) {
    EXPECT_EQ(r.report->cheat, r.cheat == "forbidden_library" ? "" : r.cheat);
    EXPECT_FALSE(r.report->timing) << c.candidate << ": a rejected candidate's time is not reported";
  }
}

INSTANTIATE_TEST_SUITE_P(Native, CheatIsCaught, ::testing::ValuesIn(cheat_cases()),
                         [](const ::testing::TestParamInfo<CheatCase>& info) {
                           return fs::path(info.param.candidate).stem().string();
                         });

// ---- honest candidates ----

struct HonestCase {
  std::string task;
  fs::path candidate;
};

std::ostream& operator<<(std::ostream& os, const HonestCase& c) {
  return os << c.task << "/" << c.candidate.filename().string();
}

std::vector<HonestCase> honest_cases() {
  std::vector<HonestCase> cases;
  std::vector<fs::path> tasks;
  for (const auto& e : fs::directory_iterator(testing::examples_dir()))
    if (fs::exists(e.path() / "seed.cu")) tasks.push_back(e.path());
  std::sort(tasks.begin(), tasks.end());
  for (const auto& t : tasks) {
    cases.push_back({t.filename().string(), t / "seed.cu"});
    fs::path dir = testing::test_data_dir() / "honest" / t.filename();
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".cu") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) cases.push_back({t.filename().string(), f});
  }
  return cases;
}

class HonestCandidatePasses : public OnTheSharedWorker<HonestCase> {};

TEST_P(HonestCandidatePasses, EveryRule) {
  const HonestCase& c = GetParam();
  EvalResult r =
      AntiCheatGpu::run(*AntiCheatGpu::evaluator_, AntiCheatGpu::load(testing::examples_dir() / c.task), c.candidate);
  EXPECT_EQ(r.outcome, Outcome::kOk) << c << ": " << r.reason;
  EXPECT_EQ(r.cheat, "") << c << ": " << r.reason;
  ASSERT_TRUE(r.report) << c;
  EXPECT_EQ(r.report->trials_run, 3) << c;
  // Every example gives ideal bytes, and the worker measured the bandwidth: a floor applies,
  // and an honest median is above it.
  EXPECT_GT(r.report->physics_floor_s, 0) << c << ": " << r.report->physics_floor_basis;
  EXPECT_GE(r.time.median, r.report->physics_floor_s) << c << ": " << r.report->physics_floor_basis;
}

INSTANTIATE_TEST_SUITE_P(Native, HonestCandidatePasses, ::testing::ValuesIn(honest_cases()),
                         [](const ::testing::TestParamInfo<HonestCase>& info) {
                           return info.param.task + "_" + info.param.candidate.stem().string();
                         });

// ---- the physics floor and the timing paths ----

class AntiCheatRules : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { AntiCheatGpu::SetUpSuite(); }
  static void TearDownTestSuite() { AntiCheatGpu::TearDownSuite(); }
  void SetUp() override {
    if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  }
};

TEST_F(AntiCheatRules, DeviceReportsItsBandwidthAndClock) {
  auto d = AntiCheatGpu::evaluator_->device();
  ASSERT_TRUE(d.ok()) << d.error().message;
  // Any datacenter GPU copies faster than 100 GB/s and slower than 20 TB/s.
  EXPECT_GT(d->dram_bytes_per_s, 1e11);
  EXPECT_LT(d->dram_bytes_per_s, 2e13);
  EXPECT_GT(d->sm_clock_khz, 100000);
}

TEST_F(AntiCheatRules, TheFloorRejectsAMedianBelowIt) {
  // An honest seed against a floor 100 times too high (the margin scales the bandwidth and the
  // peak down): the rule itself must fire, with both numbers in the reason.
  EvaluatorOptions o = options_in(AntiCheatGpu::scratch_->path(), "worker-low-margin");
  o.eval.physics_margin = 0.01;
  Evaluator strict(o);
  EvalResult r = AntiCheatGpu::run(strict, AntiCheatGpu::load(testing::examples_dir() / "gelu"),
                                   testing::examples_dir() / "gelu" / "seed.cu");
  EXPECT_EQ(r.outcome, Outcome::kRejected) << r.reason;
  EXPECT_EQ(r.cheat, "physics_floor") << r.reason;
  EXPECT_NE(r.reason.find("below the physics floor of"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("B/s x 0.01"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.report);
  EXPECT_GT(r.report->physics_floor_s, 1e-3);
}


TEST_F(AntiCheatRules, UnderGraphReplayTheBytesInL2AreHeldOnlyToTheSmsDataPathAndBatchingIsStillCaught) {
  task::Task task = AntiCheatGpu::load(testing::tiny_gelu(AntiCheatGpu::scratch_->path() / "tiny_gelu"));
  EvalResult honest = AntiCheatGpu::run(*AntiCheatGpu::evaluator_, task, testing::examples_dir() / "gelu" / "seed.cu");
  EXPECT_EQ(honest.outcome, Outcome::kOk) << honest.reason;
  ASSERT_TRUE(honest.report && honest.report->timing);
  EXPECT_EQ(honest.report->timing->method, "graph");
  // The working set fits in L2: its bytes count at the SMs' data path, a floor the honest seed
  // clears by far (issue 28, item 8: the term is kept, not dropped).
  EXPECT_NE(honest.report->physics_floor_basis.find("SM data path"), std::string::npos)
      << honest.report->physics_floor_basis;
  EXPECT_GT(honest.report->physics_floor_s, 0);
  EXPECT_GT(honest.time.median, 2 * honest.report->physics_floor_s);

  EvalResult batched = AntiCheatGpu::run(*AntiCheatGpu::evaluator_, task,
                                         testing::test_data_dir() / "cheats" / "native" / "batched_calls.cu");
  EXPECT_EQ(batched.outcome, Outcome::kRejected) << batched.reason;
  EXPECT_EQ(batched.cheat, "batched_calls") << batched.reason;
}

TEST_F(AntiCheatRules, AnOutputProbeUnderGraphReplayIsCaughtAndGainsNothing) {
  // Issue 28 (3): the probe skips its work when its output already holds the right values. Every
  // timed replay starts from poisoned outputs, and replays on right outputs give it away.
  // The probe's spin is counted in cycles: at a low clock (an H100 that had idled, 2026-12-07) its
  // calls passed the 20 us graph threshold and were timed with events, each from poisoned outputs,
  // where the probe gains nothing and no replay on right outputs runs. This evaluator replays
  // calls up to 1 ms, so the graph path this test is about is taken at any clock.
  EvaluatorOptions graph_options = options_in(AntiCheatGpu::scratch_->path(), "worker-graph");
  graph_options.eval.graph_threshold_us = 1000;
  Evaluator graph_only(graph_options);
  task::Task task = AntiCheatGpu::load(testing::tiny_gelu(AntiCheatGpu::scratch_->path() / "tiny_gelu"));
  EvalResult r =
      AntiCheatGpu::run(graph_only, task, testing::test_data_dir() / "cheats" / "native" / "output_probe.cu");
  const std::string method = r.report && r.report->timing ? r.report->timing->method : "";
  EXPECT_EQ(r.outcome, Outcome::kRejected) << r.reason << (method.empty() ? "" : " (timed by " + method + ")");
  EXPECT_EQ(r.cheat, "result_cache") << r.reason;
  EXPECT_NE(r.reason.find("output probe"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.report);
  EXPECT_FALSE(r.report->timing) << "a rejected candidate's time is not reported";
}

TEST_F(AntiCheatRules, AWorkerThatHostedABackgroundThreadIsReplacedAndTheNextEvaluationRuns) {
  task::Task gelu = AntiCheatGpu::load(testing::examples_dir() / "gelu");
  EvalResult cheat = AntiCheatGpu::run(*AntiCheatGpu::evaluator_, gelu,
                                       testing::test_data_dir() / "cheats" / "native" / "background_thread.cu");
  EXPECT_EQ(cheat.cheat, "background_thread") << cheat.reason;
  EvalResult after = AntiCheatGpu::run(*AntiCheatGpu::evaluator_, gelu, testing::examples_dir() / "gelu" / "seed.cu");
  EXPECT_EQ(after.outcome, Outcome::kOk) << after.reason;
  EXPECT_EQ(after.cheat, "");
}

// Issue 28, item 8: the energy window's calls are checked. The honest seed passes with its
// kEnergyChecks checked calls; a candidate that stops computing after its first 1000 calls
// (inside the window on gelu) is rejected.
TEST_F(AntiCheatRules, TheEnergyWindowsCallsAreChecked) {
  EvaluatorOptions o = options_in(AntiCheatGpu::scratch_->path(), "worker-energy");
  o.eval.energy_window_s = 1.0;
  Evaluator with_energy(o);
  task::Task gelu = AntiCheatGpu::load(testing::examples_dir() / "gelu");
  EvalResult honest = AntiCheatGpu::run(with_energy, gelu, testing::examples_dir() / "gelu" / "seed.cu");
  ASSERT_EQ(honest.outcome, Outcome::kOk) << honest.reason;
  ASSERT_TRUE(honest.report && honest.report->energy);
  if (honest.report->energy->measured) EXPECT_EQ(honest.report->energy->checked_calls, kEnergyChecks);
  else GTEST_SKIP() << "no energy on this machine: " << honest.report->energy->unavailable_reason;

  EvalResult cheat = AntiCheatGpu::run(with_energy, gelu,
                                       testing::test_data_dir() / "cheats" / "native" / "energy_skip.cu");
  EXPECT_EQ(cheat.outcome, Outcome::kRejected) << cheat.reason;
  // The judge core's window: its calls stopped working, so they ran far faster than timed ones
  // and left the GPU idle (or a checked call was wrong).
  EXPECT_EQ(cheat.cheat, "phase_dependent") << cheat.reason;
  std::cout << "energy_skip: " << cheat.reason << "\n";
}

// ---- the red-team rounds (tests/data/cheats/native/redteam*.tsv) ----

struct RedTeamRow {
  std::string kind, path, task, expected, cheat, description;
  std::string twin;  // an honest file of the cheat's own kernel to judge its gain against (else the seed)
};

std::ostream& operator<<(std::ostream& os, const RedTeamRow& r) { return os << r.path; }

// Every round's table (redteam41.tsv, redteam42.tsv, ...), in name order.
std::vector<RedTeamRow> redteam_rows() {
  std::vector<RedTeamRow> rows;
  std::vector<fs::path> tables;
  for (const auto& e : fs::directory_iterator(testing::test_data_dir() / "cheats" / "native"))
    if (e.path().extension() == ".tsv" && e.path().filename().string().rfind("redteam", 0) == 0)
      tables.push_back(e.path());
  std::sort(tables.begin(), tables.end());
  for (const auto& t : tables) {
    std::ifstream in(t);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      auto f = split(line, '\t');
      if (f.size() >= 6) rows.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f.size() >= 7 ? f[6] : ""});
    }
  }
  return rows;
}

class RedTeam : public OnTheSharedWorker<RedTeamRow> {};

// A cheat must not be accepted (its row names the outcomes a correct judge gives, any class);
// an honest twin must pass. Rows about the graph-timed gelu run on testing::tiny_gelu; the one
// about the energy window runs with the window on.
TEST_P(RedTeam, IsJudgedAsARowOfTheTableSays) {
  const RedTeamRow& row = GetParam();
  const bool tiny = row.description.find("tiny_gelu") != std::string::npos;
  const bool energy = row.path.find("energy") != std::string::npos;
  task::Task task = AntiCheatGpu::load(tiny ? testing::tiny_gelu(AntiCheatGpu::scratch_->path() / "tiny_gelu_rt41")
                                            : testing::examples_dir() / row.task);
  std::unique_ptr<Evaluator> own;
  Evaluator* e = AntiCheatGpu::evaluator_;
  if (energy) {
    EvaluatorOptions o = options_in(AntiCheatGpu::scratch_->path(), "worker-rt41-energy");
    o.eval.energy_window_s = 0.5;
    own = std::make_unique<Evaluator>(o);
    e = own.get();
  }
  EvalResult r = AntiCheatGpu::run(*e, task, testing::test_data_dir() / row.path);
  std::cout << "RT native " << row.kind << " " << row.path << ": " << to_string(r.outcome) << " [" << r.cheat
            << "] median " << r.time.median * 1e6 << " us: " << r.reason.substr(0, 300) << "\n";
  if (row.kind == "honest") {
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.reason;
    return;
  }
  // Accepted, a cheat must gain nothing against the task's seed (or the row's twin, its own
  // kernel run honestly) on the same task in the same run: not in time, and where the energy
  // window ran, not in joules per call.
  bool gained = false;
  if (r.outcome == Outcome::kOk) {
    const fs::path seed = row.twin.empty()
                              ? testing::examples_dir() / (tiny ? "gelu" : row.task) / "seed.cu"  // tiny gelu: gelu's
                              : testing::test_data_dir() / row.twin;
    const double twin = seed_median(task, seed);
    EXPECT_GT(twin, 0);
    gained = r.time.median < kGainsNothing * twin;
    std::cout << "RT native " << row.path << " accepted at " << r.time.median * 1e6 << " us against the "
              << (row.twin.empty() ? "seed's " : "twin's ") << twin * 1e6 << " us";
    if (energy && r.report && r.report->energy && r.report->energy->measured) {
      EvalResult s = AntiCheatGpu::run(*e, task, seed);
      if (s.report && s.report->energy && s.report->energy->measured) {
        gained = gained || r.report->energy->joules_per_call < kGainsNothing * s.report->energy->joules_per_call;
        std::cout << ", " << r.report->energy->joules_per_call << " J a call against " << s.report->energy->joules_per_call;
      }
    }
    std::cout << "\n";
  }
  if (row.kind == "open") {
    // A cheat the judge does not catch yet (the closing note says which class): the day it is
    // caught, this fails and its row becomes a cheat.
    EXPECT_TRUE(r.outcome == Outcome::kOk && gained) << row.path << " is no longer accepted with a gain: make it a cheat";
    return;
  }
  if (r.outcome == Outcome::kOk) {
    EXPECT_FALSE(gained) << row.path << " was accepted and gained (" << row.description << ")";
  } else {
    EXPECT_NE(row.expected.find(std::string(to_string(r.outcome))), std::string::npos)
        << row.path << ": " << to_string(r.outcome) << " [" << r.cheat << "] " << r.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Native, RedTeam, ::testing::ValuesIn(redteam_rows()),
                         [](const ::testing::TestParamInfo<RedTeamRow>& info) {
                           return fs::path(info.param.path).stem().string();
                         });

}  // namespace
}  // namespace kp::eval
