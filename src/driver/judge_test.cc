// The judge against a fake worker that logs every request (tests/data/fake_workers/
// fake_judge_worker.sh): one evaluation per candidate, each reference timed once, alone, in a
// process that never loaded a candidate, and profiles that reuse the verdict on the same worker.
#include "driver/judge.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "profile/datasheets.h"
#include "profile/metric_lists.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::driver {
namespace {

namespace fs = std::filesystem;

struct Request {
  std::string pid, op, kind;
};

class JudgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-judge-").value());
    setenv("FAKE_REQUESTS", (dir_->path() / "requests").c_str(), 1);
  }
  void TearDown() override { unsetenv("FAKE_REQUESTS"); }

  eval::EvaluatorOptions options() const {
    eval::EvaluatorOptions o;
    o.worker.worker_path = testing::test_data_dir() / "fake_workers" / "fake_judge_worker.sh";
    o.worker.scratch_dir = dir_->path() / "scratch";
    o.worker.start_timeout_s = 10;
    o.build.cache_dir = dir_->path() / "cache";
    o.eval.timeout_s = 5;
    return o;
  }
  // A KernelBench task (no reference to build: the worker imports the problem itself).
  task::Task problem(const std::string& name) const {
    fs::path p = dir_->path() / name;
    std::ofstream(p) << "# problem " << name << "\n";
    task::Task t;
    t.kind = task::TaskKind::kKernelBench;
    t.name = name;
    t.reference_path = p;
    t.dir = dir_->path();
    return t;
  }
  fs::path candidate(const std::string& name, const std::string& text = "class ModelNew: pass\n") const {
    fs::path p = dir_->path() / name;
    std::ofstream(p) << text;
    return p;
  }
  std::vector<Request> requests() const {
    std::vector<Request> out;
    auto text = read_file((dir_->path() / "requests").string());
    if (!text.ok()) return out;
    for (const auto& line : split_lines(*text)) {
      auto f = split(line, ' ');
      if (f.size() == 3) out.push_back({f[0], f[1], f[2]});
    }
    return out;
  }
  static int count(const std::vector<Request>& rs, const std::string& kind) {
    int n = 0;
    for (const auto& r : rs) n += r.kind == kind;
    return n;
  }
  // The number of metrics each profile request asked for, in order.
  std::vector<std::string> profile_sizes() const {
    std::vector<std::string> out;
    for (const auto& r : requests())
      if (r.op == "profile") out.push_back(r.kind);
    return out;
  }
  ProfileSessionOptions profile_options() const {
    ProfileSessionOptions po;
    po.evaluator = options();
    po.trace = false;
    po.sass = false;
    po.profiler.rangeprof_library = dir_->path() / "libkp_rangeprof.so";
    po.ceilings_for = [](const eval::DeviceInfo& d, std::string*) { return profile::datasheet_ceilings(d); };
    return po;
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(JudgeTest, EachReferenceIsTimedOnceAloneAndEveryVerdictQuotesIt) {
  Judge judge(options());
  const task::Task t = problem("1_Add.py");
  auto a = judge.evaluate(t, candidate("fast_a.py"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = judge.evaluate(t, candidate("slow_b.py"));
  ASSERT_TRUE(b.ok()) << b.error().message;

  // The reference's 4 ms from its own measurement, in both verdicts: 2x and 0.5x.
  EXPECT_DOUBLE_EQ(a->reference_seconds, 0.004);
  EXPECT_DOUBLE_EQ(b->reference_seconds, 0.004);
  EXPECT_DOUBLE_EQ(a->speedup_vs_reference, 2.0);
  EXPECT_DOUBLE_EQ(b->speedup_vs_reference, 0.5);
  ASSERT_TRUE(a->report.has_value());
  EXPECT_DOUBLE_EQ(a->report->reference_seconds, 0.004);

  const auto rs = requests();
  EXPECT_EQ(count(rs, "reference"), 1);
  EXPECT_EQ(count(rs, "eval"), 2);                    // neither evaluation timed the reference again
  EXPECT_EQ(count(rs, "eval-timing-reference"), 0);
  // The reference went first, to a process no candidate had reached.
  std::vector<Request> evals;
  for (const auto& r : rs)
    if (r.op == "eval") evals.push_back(r);
  ASSERT_EQ(evals.size(), 3u);
  EXPECT_EQ(evals[0].kind, "reference");
  EXPECT_EQ(judge.stats().reference_timings, 1);
  EXPECT_EQ(judge.stats().reference_reuses, 1);
  EXPECT_EQ(judge.stats().evaluations, 2);
}

TEST_F(JudgeTest, AReferenceAfterACandidateGetsAWorkerOfItsOwn) {
  Judge judge(options());
  ASSERT_TRUE(judge.evaluate(problem("1_Add.py"), candidate("fast_a.py")).ok());
  ASSERT_TRUE(judge.evaluate(problem("2_Mul.py"), candidate("fast_b.py")).ok());
  std::vector<std::string> eval_pids, reference_pids;
  for (const auto& r : requests()) {
    if (r.kind == "eval") eval_pids.push_back(r.pid);
    if (r.kind == "reference") reference_pids.push_back(r.pid);
  }
  ASSERT_EQ(eval_pids.size(), 2u);
  ASSERT_EQ(reference_pids.size(), 2u);
  EXPECT_EQ(reference_pids[0], eval_pids[0]);  // the first: the judge's worker, before any candidate
  // The second: a clean worker, not the one that ran a candidate; and that one was stopped
  // first, with whatever its candidate left running, so the next candidate has a fresh worker.
  EXPECT_NE(reference_pids[1], eval_pids[0]);
  EXPECT_NE(eval_pids[1], eval_pids[0]);
  EXPECT_TRUE(judge.evaluator().worker().has_loaded_candidate());
}

TEST_F(JudgeTest, AnEditedReferenceIsTimedAgain) {
  Judge judge(options());
  task::Task t = problem("1_Add.py");
  ASSERT_TRUE(judge.evaluate(t, candidate("fast_a.py")).ok());
  std::ofstream(t.reference_path, std::ios::app) << "# edited\n";
  ASSERT_TRUE(judge.evaluate(t, candidate("fast_a.py")).ok());
  EXPECT_EQ(count(requests(), "reference"), 2);
}

TEST_F(JudgeTest, AProfileAfterTheVerdictCollectsCountersOnlyOnTheSameWorker) {
  Judge judge(options());
  const task::Task t = problem("1_Add.py");
  const fs::path c = candidate("fast_a.py");
  auto verdict = judge.evaluate(t, c);
  ASSERT_TRUE(verdict.ok()) << verdict.error().message;

  auto page = judge.profile(t, c, {}, profile_options());
  ASSERT_TRUE(page.ok()) << page.error().message;
  // The page's evaluation is the verdict itself: the MEASURED numbers a model reads are the
  // verdict's.
  EXPECT_DOUBLE_EQ(page->eval.time.median, verdict->time.median);
  EXPECT_DOUBLE_EQ(page->eval.speedup_vs_reference, verdict->speedup_vs_reference);
  EXPECT_EQ(judge.stats().evaluations, 1);
  EXPECT_EQ(judge.stats().verdict_reuses, 1);

  const auto rs = requests();
  int evals = 0, profiles = 0;
  std::string eval_pid, profile_pid;
  for (const auto& r : rs) {
    if (r.kind == "eval") ++evals, eval_pid = r.pid;
    if (r.op == "profile") ++profiles, profile_pid = r.pid;
  }
  EXPECT_EQ(evals, 1);  // measured once
  EXPECT_GE(profiles, 1);
  EXPECT_EQ(profile_pid, eval_pid);  // on the worker that judged it
}

// tests/data/cupti/loop_metrics.txt is the model loop's one collection (stage 1 and every
// tool's metrics, in request order), for kp_rangeprof_probe to time on a GPU.
TEST(LoopMetrics, TheProbesLoopFileIsTheLoopsRequest) {
  std::ifstream in(testing::test_data_dir() / "cupti" / "loop_metrics.txt");
  ASSERT_TRUE(in.good());
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    std::string t(trim(line));
    if (!t.empty() && t[0] != '#') names.push_back(t);
  }
  ProfileSessionOptions o;
  o.ahead_metrics = every_tool_metric({}).value();
  const std::vector<std::string> want = stage1_request(o);
  EXPECT_EQ(names, want) << "regenerate tests/data/cupti/loop_metrics.txt:\n" << join(want, "\n");
}

// The model loop's analysis (driver::JudgeBench::open): stage 1 and every tool's metrics in one request,
// one metric list for every candidate, so the worker keeps one warm Range Profiler session.
TEST_F(JudgeTest, TheLoopsAnalysisAsksForStageOneAndEveryToolsMetricsInOneRequest) {
  Judge judge(options());
  const task::Task t = problem("1_Add.py");
  AnalyzeOptions ao;
  ao.profile = profile_options();
  auto ahead = every_tool_metric({});
  ASSERT_TRUE(ahead.ok()) << ahead.error().message;
  ASSERT_FALSE(ahead->empty());
  ao.profile.ahead_metrics = *ahead;
  // Every tool runs, so that stage 2 would have metrics to collect if the first request lacked them.
  auto tools = list_tools({});
  ASSERT_TRUE(tools.ok()) << tools.error().message;
  for (const auto& tool : *tools) ao.extra_tools.push_back(tool["name"].get<std::string>());
  const size_t all = stage1_request(ao.profile).size();
  ASSERT_EQ(all, profile::stage1_metrics().size() + ahead->size());  // none of stage 1 repeated
  for (const char* name : {"fast_a.py", "fast_b.py"}) {
    const fs::path c = candidate(name, std::string("class ModelNew: pass # ") + name + "\n");
    ASSERT_TRUE(judge.evaluate(t, c).ok());
    auto page = judge.analyze(t, c, {}, ao);
    ASSERT_TRUE(page.ok()) << page.error().message;
    EXPECT_TRUE(page->stage2_metrics.empty()) << "stage 2 found metrics the first collection lacked";
    EXPECT_EQ(page->profile.seconds.count("stage2"), 0u);
  }
  const std::vector<std::string> profiles = profile_sizes();
  EXPECT_EQ(profiles, std::vector<std::string>(2, std::to_string(all)));  // one request per candidate
}

TEST_F(JudgeTest, WhenTheChipRefusesTheLongListStageOneIsCollectedAloneAndSaysSo) {
  setenv("FAKE_PROFILE_MAX_METRICS", std::to_string(profile::stage1_metrics().size()).c_str(), 1);
  Judge judge(options());
  const task::Task t = problem("1_Add.py");
  const fs::path c = candidate("fast_a.py");
  AnalyzeOptions ao;
  ao.profile = profile_options();
  ao.profile.ahead_metrics = every_tool_metric({}).value();
  ASSERT_TRUE(judge.evaluate(t, c).ok());
  auto page = judge.analyze(t, c, {}, ao);
  unsetenv("FAKE_PROFILE_MAX_METRICS");
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_TRUE(page->profile.counters.has_value());
  EXPECT_GE(page->profile.counters->metrics.size(), profile::stage1_metrics().size());
  bool noted = false;
  for (const auto& n : page->profile.notes) noted = noted || n.find("stage 1 was collected alone") != std::string::npos;
  EXPECT_TRUE(noted);
  const std::vector<std::string> profiles = profile_sizes();
  ASSERT_GE(profiles.size(), 2u);
  EXPECT_EQ(profiles[0], std::to_string(stage1_request(ao.profile).size()));
  EXPECT_EQ(profiles[1], std::to_string(profile::stage1_metrics().size()));
}

// The worker's reply says its Range Profiler session grew for this call (worker_plan.h,
// grown_range_capacity): the page's counters carry the capacities and the page says so.
TEST_F(JudgeTest, ASessionThatGrewForTheCallIsNotedOnThePage) {
  setenv("FAKE_PROFILE_GREW", "1", 1);
  Judge judge(options());
  const task::Task t = problem("1_Add.py");
  const fs::path c = candidate("fast_a.py");
  AnalyzeOptions ao;
  ao.profile = profile_options();
  ASSERT_TRUE(judge.evaluate(t, c).ok());
  auto page = judge.analyze(t, c, {}, ao);
  unsetenv("FAKE_PROFILE_GREW");
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_TRUE(page->profile.counters.has_value());
  EXPECT_EQ(page->profile.counters->capacity, 64);
  EXPECT_EQ(page->profile.counters->capacity_grown_from, 16);
  bool noted = false;
  for (const auto& n : page->profile.notes) noted = noted || n.find("the session grew to 64") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_F(JudgeTest, AChangedCandidateIsEvaluatedAgainBeforeItsProfile) {
  Judge judge(options());
  const task::Task t = problem("1_Add.py");
  const fs::path c = candidate("fast_a.py");
  ASSERT_TRUE(judge.evaluate(t, c).ok());
  std::ofstream(c, std::ios::app) << "# a new version\n";
  EXPECT_EQ(judge.verdict_of(c), nullptr);
  (void)judge.profile(t, c, {}, profile_options());
  EXPECT_EQ(judge.stats().evaluations, 2);
  EXPECT_EQ(judge.stats().verdict_reuses, 0);
}

TEST_F(JudgeTest, AGpuHeldElsewhereIsTriedAgainOnAFreshWorkerAndOnlyTheRealVerdictIsKept) {
  setenv("FAKE_BUSY_EVALS", "1", 1);
  setenv("FAKE_BUSY_COUNT", (dir_->path() / "busy").c_str(), 1);
  Judge judge(options(), GpuRetry{2, 0});
  const task::Task t = problem("relu.py");
  const fs::path c = candidate("fast.py");
  auto r = judge.evaluate(t, c);
  unsetenv("FAKE_BUSY_EVALS");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kOk) << r->reason;
  EXPECT_EQ(judge.stats().gpu_retries, 1);
  ASSERT_NE(judge.verdict_of(c), nullptr);
  EXPECT_EQ(judge.verdict_of(c)->outcome, eval::Outcome::kOk);
  // The second try ran on a worker started after the first one left.
  std::vector<std::string> eval_pids;
  for (const auto& q : requests())
    if (q.kind == "eval") eval_pids.push_back(q.pid);
  ASSERT_EQ(eval_pids.size(), 2u);
  EXPECT_NE(eval_pids[0], eval_pids[1]);
}

TEST_F(JudgeTest, AGpuHeldThroughEveryRetryIsGpuUnavailableAndNeverKeptAsAVerdict) {
  setenv("FAKE_BUSY_EVALS", "100", 1);
  setenv("FAKE_BUSY_COUNT", (dir_->path() / "busy").c_str(), 1);
  Judge judge(options(), GpuRetry{2, 0});
  const fs::path c = candidate("fast.py");
  auto r = judge.evaluate(problem("relu.py"), c);
  unsetenv("FAKE_BUSY_EVALS");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kGpuUnavailable);
  EXPECT_NE(r->reason.find("held outside this worker"), std::string::npos) << r->reason;
  EXPECT_TRUE(eval::is_machine_outcome(r->outcome));
  EXPECT_EQ(judge.stats().gpu_retries, 2);
  EXPECT_EQ(count(requests(), "eval"), 3) << "the first try and two more";
  EXPECT_EQ(judge.verdict_of(c), nullptr) << "the machine's failure is not the candidate's verdict";
}

TEST_F(JudgeTest, WithoutAGpuTheVerdictIsNotRunAndNoReferenceIsTimed) {
  eval::EvaluatorOptions o = options();
  o.worker.worker_path = testing::test_data_dir() / "fake_workers" / "fake_worker.sh";
  setenv("FAKE_MODE", "no_gpu", 1);
  Judge judge(o);
  auto r = judge.evaluate(problem("1_Add.py"), candidate("fast_a.py"));
  unsetenv("FAKE_MODE");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kNotRun);
  EXPECT_EQ(judge.stats().reference_timings, 0);
}

// Issue 28, item 7: a GPU that exists but is busy (exclusive-process mode, held elsewhere) is the
// machine's failure, tried again on a fresh worker; never not_run for good, never a verdict.
TEST_F(JudgeTest, ABusyGpuAtTheWorkersStartIsTriedAgainAndOnlyTheRealVerdictIsKept) {
  setenv("FAKE_BUSY_HELLOS", "1", 1);
  setenv("FAKE_BUSY_HELLO_COUNT", (dir_->path() / "busy-hellos").c_str(), 1);
  Judge judge(options(), GpuRetry{2, 0});
  const fs::path c = candidate("fast.py");
  auto r = judge.evaluate(problem("relu.py"), c);
  unsetenv("FAKE_BUSY_HELLOS");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kOk) << r->reason;
  EXPECT_EQ(judge.stats().gpu_retries, 1);
  ASSERT_NE(judge.verdict_of(c), nullptr);
  EXPECT_EQ(judge.verdict_of(c)->outcome, eval::Outcome::kOk);
}

TEST_F(JudgeTest, AGpuBusyThroughEveryRetryIsGpuUnavailableNamingIt) {
  setenv("FAKE_BUSY_HELLOS", "100", 1);
  setenv("FAKE_BUSY_HELLO_COUNT", (dir_->path() / "busy-hellos").c_str(), 1);
  Judge judge(options(), GpuRetry{2, 0});
  const fs::path c = candidate("fast.py");
  auto r = judge.evaluate(problem("relu.py"), c);
  unsetenv("FAKE_BUSY_HELLOS");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kGpuUnavailable);
  EXPECT_NE(r->reason.find("the GPU is busy"), std::string::npos) << r->reason;
  EXPECT_EQ(judge.stats().gpu_retries, 2);
  EXPECT_EQ(judge.verdict_of(c), nullptr) << "the machine's failure is not the candidate's verdict";
}

// Issue 28, item 4: a reference timed while another process ran GPU work is not kept; the
// evaluation is the machine's gpu_unavailable, and the retry times the reference again. (NVML's
// check itself runs on the GPU: src/eval/evaluator_gpu_test.cc; here it is replaced.)
TEST_F(JudgeTest, AReferenceTimedBesideForeignWorkIsDroppedAndTimedAgain) {
  eval::EvaluatorOptions o = options();
  int checks = 0;
  o.foreign_work_check = [&checks](int worker_pid) {
    EXPECT_GT(worker_pid, 0);
    eval::ForeignWork f;
    f.checked = true;
    f.busy = checks++ == 0;
    f.note = f.busy ? "another process ran work on the GPU while the reference was timed: pid 4242"
                    : "no other process held the GPU";
    return f;
  };
  Judge judge(o, GpuRetry{2, 0});
  const task::Task t = problem("relu.py");
  const fs::path c = candidate("fast.py");
  auto r = judge.evaluate(t, c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kOk) << r->reason;
  // The check's finding, and what it cost.
  EXPECT_EQ(r->reference_gpu_check.rfind("no other process held the GPU (checked in ", 0), 0u) << r->reference_gpu_check;
  EXPECT_EQ(judge.stats().busy_references, 1);
  EXPECT_EQ(judge.stats().reference_timings, 2);
  EXPECT_EQ(judge.stats().gpu_retries, 1);
  ASSERT_NE(judge.reference_of(t), nullptr);
  EXPECT_TRUE(judge.reference_of(t)->machine_busy.empty());
  EXPECT_EQ(count(requests(), "eval"), 1) << "no candidate ran against the untrusted time";
}

TEST_F(JudgeTest, ForeignWorkThroughEveryRetryIsGpuUnavailableAndKeepsNothing) {
  eval::EvaluatorOptions o = options();
  o.foreign_work_check = [](int) {
    eval::ForeignWork f;
    f.checked = f.busy = true;
    f.note = "another process ran work on the GPU while the reference was timed: pid 4242";
    return f;
  };
  Judge judge(o, GpuRetry{2, 0});
  const task::Task t = problem("relu.py");
  const fs::path c = candidate("fast.py");
  auto r = judge.evaluate(t, c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kGpuUnavailable);
  EXPECT_NE(r->reason.find("pid 4242"), std::string::npos) << r->reason;
  EXPECT_EQ(judge.reference_of(t), nullptr);
  EXPECT_EQ(judge.verdict_of(c), nullptr);
  EXPECT_EQ(count(requests(), "eval"), 0);
}

// A GPU that turns busy just when the reference is to be timed (its worker's start) is the
// machine's failure too: retried, and the reference timed alone once the GPU is free, never
// left to the candidate's worker for the rest of the run.
TEST_F(JudgeTest, ABusyGpuWhenTheReferenceIsTimedIsRetriedNotGivenUp) {
  Judge judge(options(), GpuRetry{2, 0});
  ASSERT_TRUE(judge.evaluate(problem("relu.py"), candidate("fast.py")).ok());
  setenv("FAKE_BUSY_HELLOS", "1", 1);  // the next worker to start: the second problem's reference's
  setenv("FAKE_BUSY_HELLO_COUNT", (dir_->path() / "busy-hellos").c_str(), 1);
  const task::Task t = problem("softmax.py");
  auto r = judge.evaluate(t, candidate("fast_b.py"));
  unsetenv("FAKE_BUSY_HELLOS");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->outcome, eval::Outcome::kOk) << r->reason;
  EXPECT_EQ(judge.stats().busy_references, 1);
  EXPECT_EQ(judge.stats().gpu_retries, 1);
  ASSERT_NE(judge.reference_of(t), nullptr);
  EXPECT_EQ(count(requests(), "eval-timing-reference"), 0) << "the reference was left to a candidate's worker";
}

}  // namespace
}  // namespace kp::driver
