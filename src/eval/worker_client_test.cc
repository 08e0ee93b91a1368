// The orchestrator's handling of worker failures, against a fake worker that speaks the real
// protocol (tests/data/fake_workers/fake_worker.sh): the real kp-worker needs a GPU, and its
// own crash, hang and restart behaviour is covered by the gpu tier.
#include "eval/worker_client.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sys/temp_dir.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::eval {
namespace {

namespace fs = std::filesystem;

class WorkerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-wc-").value());
    starts_ = dir_->path() / "starts";
    setenv("FAKE_STARTS", starts_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("FAKE_MODE");
    unsetenv("FAKE_STARTS");
  }
  WorkerClient client(const char* mode) {
    setenv("FAKE_MODE", mode, 1);
    WorkerOptions o;
    o.worker_path = testing::test_data_dir() / "fake_workers" / "fake_worker.sh";
    o.scratch_dir = dir_->path() / "scratch";
    o.start_timeout_s = 10;
    return WorkerClient(o);
  }
  int starts() {
    auto text = read_file(starts_.string());
    return text.ok() ? static_cast<int>(split_lines(*text).size()) : 0;
  }
  static task::Task one_output_task() {
    task::Task t;
    t.name = "t";
    task::TensorSpec y;
    y.name = "y";
    y.shape = {4};
    t.outputs.push_back(y);
    return t;
  }
  EvalOptions fast() {
    EvalOptions o;
    o.timeout_s = 1;
    return o;
  }
  std::unique_ptr<sys::TempDir> dir_;
  fs::path starts_;
};

TEST_F(WorkerClientTest, HealthyWorkerReportsAndKeepsRunning) {
  WorkerClient w = client("ok");
  auto dev = w.device();
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  EXPECT_EQ(dev->name, "Fake GPU");
  for (int i = 0; i < 2; ++i) {
    auto ev = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
    ASSERT_TRUE(ev.ok()) << ev.error().message;
    EXPECT_EQ(ev->report.outcome, Outcome::kOk);
    EXPECT_EQ(ev->report.timing->samples_s.size(), 3u);
    EXPECT_FALSE(ev->worker_restarted);
    EXPECT_NE(ev->candidate_stderr.find("candidate says hi"), std::string::npos);
  }
  EXPECT_EQ(starts(), 1);
}

TEST_F(WorkerClientTest, LaunchedEarlyTheHelloAsksForTheProfilerPrewarm) {
  fs::path hello = dir_->path() / "hello.json";
  setenv("FAKE_HELLO", hello.c_str(), 1);
  setenv("FAKE_MODE", "ok", 1);
  WorkerOptions o;
  o.worker_path = testing::test_data_dir() / "fake_workers" / "fake_worker.sh";
  o.scratch_dir = dir_->path() / "scratch";
  o.start_timeout_s = 10;
  o.prewarm_metrics = {"gpu__time_duration.sum", "dram__bytes_read.sum"};
  o.rangeprof_library = "lib/libkp_rangeprof.so";
  WorkerClient w(o);
  w.launch();
  w.launch();  // already running: no second worker
  auto dev = w.device();
  unsetenv("FAKE_HELLO");
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  EXPECT_EQ(dev->name, "Fake GPU");
  auto ev = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->report.outcome, Outcome::kOk);
  EXPECT_EQ(starts(), 1);
  auto text = read_file(hello.string());
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["op"], "hello");
  EXPECT_EQ(j["prewarm_profiler"]["metrics"], nlohmann::json(o.prewarm_metrics));
  EXPECT_EQ(j["prewarm_profiler"]["rangeprof_library"], fs::absolute(o.rangeprof_library).string());
}

TEST_F(WorkerClientTest, WithoutPrewarmMetricsTheHelloIsPlain) {
  fs::path hello = dir_->path() / "hello.json";
  setenv("FAKE_HELLO", hello.c_str(), 1);
  WorkerClient w = client("ok");
  ASSERT_TRUE(w.device().ok());
  unsetenv("FAKE_HELLO");
  auto text = read_file(hello.string());
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(nlohmann::json::parse(*text).contains("prewarm_profiler"));
}

TEST_F(WorkerClientTest, ALaunchThatCannotStartIsReportedByTheNextCall) {
  WorkerOptions o;
  o.worker_path = dir_->path() / "no-such-kp-worker";
  o.scratch_dir = dir_->path() / "scratch";
  WorkerClient w(o);
  w.launch();
  auto dev = w.device();
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code, ErrorCode::kNotFound);
}

TEST_F(WorkerClientTest, NoGpuIsUnavailableWithTheWorkersWords) {
  WorkerClient w = client("no_gpu");
  auto dev = w.device();
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(dev.error().message.find("fake machine without a GPU"), std::string::npos);
}

TEST_F(WorkerClientTest, AWorkerThatDiesBeforeItsHelloIsABrokenToolNotAMissingGpu) {
  WorkerClient w = client("broken");
  auto dev = w.device();
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code, ErrorCode::kTool) << "a broken worker must not pass for a machine without a GPU";
  EXPECT_NE(dev.error().message.find("cannot start"), std::string::npos) << dev.error().message;
}

TEST_F(WorkerClientTest, CrashIsAnOutcomeAndTheNextEvaluationGetsANewWorker) {
  WorkerClient w = client("segv");
  auto ev = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
  ASSERT_TRUE(ev.ok()) << ev.error().message;
  EXPECT_EQ(ev->report.outcome, Outcome::kCrash);
  EXPECT_NE(ev->report.reason.find("SIGSEGV"), std::string::npos) << ev->report.reason;
  EXPECT_TRUE(ev->worker_restarted);
  setenv("FAKE_MODE", "ok", 1);
  auto next = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->report.outcome, Outcome::kOk);
  EXPECT_EQ(starts(), 2);
}

TEST_F(WorkerClientTest, HangIsATimeoutAndTheWorkerIsKilled) {
  WorkerClient w = client("hang");
  auto ev = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->report.outcome, Outcome::kTimeout);
  EXPECT_NE(ev->report.reason.find("no verdict within 1 s (it was in its timing phase)"), std::string::npos)
      << ev->report.reason;
  EXPECT_TRUE(ev->worker_restarted);
}

// Before the reference is timed the candidates' worker is stopped: a process a candidate left
// running must not outlive it (issue 28, items 4 and 6), whether it stayed in the worker's
// process group ("child") or left it and its session ("escaped": found by the worker's token).
void expect_stop_ends_child(WorkerClient& w, const std::string& child_file) {
  EvalOptions options;
  options.timeout_s = 1;
  task::Task t;
  t.name = "t";
  t.outputs.push_back(task::TensorSpec{});
  t.outputs.back().name = "y";
  t.outputs.back().shape = {4};
  auto ev = w.evaluate(t, "/r.so", "/c.so", options);
  ASSERT_TRUE(ev.ok());
  pid_t child = 0;
  for (int i = 0; i < 100 && child == 0; ++i) {  // the escaped one writes its pid a moment later
    if (auto text = read_file(child_file); text.ok() && !text->empty()) child = std::stoi(*text);
    if (child == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(child, 0) << "the fake worker did not start its child";
  ASSERT_EQ(::kill(child, 0), 0) << "the fake worker's child should be running";
  w.stop();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    // Gone, or a zombie waiting for whoever adopted it to reap it.
    auto stat = read_file("/proc/" + std::to_string(child) + "/stat");
    gone = !stat.ok() || stat->find(") Z ") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "pid " << child << " outlived the stopped worker";
}

TEST_F(WorkerClientTest, StoppingTheWorkerEndsWhatItLeftRunning) {
  const std::string child_file = (dir_->path() / "child.pid").string();
  setenv("FAKE_CHILD", child_file.c_str(), 1);
  WorkerClient w = client("child");
  expect_stop_ends_child(w, child_file);
  unsetenv("FAKE_CHILD");
}

TEST_F(WorkerClientTest, StoppingTheWorkerEndsWhatLeftItsGroup) {
  const std::string child_file = (dir_->path() / "escaped.pid").string();
  setenv("FAKE_CHILD", child_file.c_str(), 1);
  WorkerClient w = client("escaped");
  expect_stop_ends_child(w, child_file);
  unsetenv("FAKE_CHILD");
}

TEST_F(WorkerClientTest, ABusyGpuIsNotRememberedAsAMissingOne) {
  WorkerClient w = client("busy");
  auto first = w.device();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(first.error().message.find("busy"), std::string::npos) << first.error().message;
  EXPECT_TRUE(w.start_was_busy());
  auto second = w.device();  // tried again: the GPU may be free by now
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(starts(), 2);

  WorkerClient none = client("no_gpu");
  ASSERT_FALSE(none.device().ok());
  EXPECT_FALSE(none.start_was_busy());
  ASSERT_FALSE(none.device().ok());
  EXPECT_EQ(starts(), 3) << "a machine without a GPU is asked once";
}

TEST_F(WorkerClientTest, GarbageReplyIsACrashNamingTheProtocol) {
  WorkerClient w = client("garbage");
  auto ev = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->report.outcome, Outcome::kCrash);
  EXPECT_NE(ev->report.reason.find("broke the protocol"), std::string::npos) << ev->report.reason;
}

TEST_F(WorkerClientTest, AWorkerThatExitsAfterReplyingIsReplaced) {
  WorkerClient w = client("poisoned");
  auto ev = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->report.outcome, Outcome::kOk);  // the reply came before the exit
  EXPECT_TRUE(ev->worker_restarted);
  auto next = w.evaluate(one_output_task(), "/r.so", "/c.so", fast());
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->report.outcome, Outcome::kOk);
  EXPECT_EQ(starts(), 2);
}

TEST_F(WorkerClientTest, MissingWorkerBinarySaysHowToBuildIt) {
  WorkerOptions o;
  o.worker_path = "/nonexistent/kp-worker";
  o.scratch_dir = dir_->path() / "scratch";
  WorkerClient w(o);
  auto dev = w.device();
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code, ErrorCode::kNotFound);
  EXPECT_NE(dev.error().message.find("build it"), std::string::npos);
}

class PythonWorkerClientTest : public WorkerClientTest {
 protected:
  void TearDown() override {
    WorkerClientTest::TearDown();
    unsetenv("FAKE_LOG");
  }
  // The fake stands in for the interpreter: started as `fake -m kernelpro_torch.worker`.
  WorkerOptions python_options() {
    WorkerOptions o;
    o.argv = {(testing::test_data_dir() / "fake_workers" / "fake_torch_worker.sh").string(), "-m", "kernelpro_torch.worker"};
    o.env = {{"PYTHONPATH", "/src/python"}};
    o.scratch_dir = dir_->path() / "scratch";
    o.start_timeout_s = 10;
    return o;
  }
  std::vector<nlohmann::json> logged() {
    std::vector<nlohmann::json> out;
    auto text = read_file((dir_->path() / "log").string());
    if (text.ok())
      for (const auto& l : split_lines(*text)) out.push_back(nlohmann::json::parse(l));
    return out;
  }
};

TEST_F(PythonWorkerClientTest, ArgvAndEnvironmentStartThePythonWorker) {
  WorkerClient w(python_options());
  auto dev = w.device();
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  EXPECT_EQ(dev->name, "Fake H200");
}

TEST_F(PythonWorkerClientTest, WithoutItsEnvironmentTheWorkerRefusesAndThatIsUnavailable) {
  WorkerOptions o = python_options();
  o.env.clear();
  unsetenv("PYTHONPATH");
  WorkerClient w(o);
  auto dev = w.device();
  ASSERT_FALSE(dev.ok());
  // The worker started and answered its hello with the reason (not a worker dying before it).
  EXPECT_EQ(dev.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(dev.error().message.find("PYTHONPATH"), std::string::npos) << dev.error().message;
}

TEST_F(PythonWorkerClientTest, MissingInterpreterIsNotFoundNamingTheCommand) {
  WorkerOptions o = python_options();
  o.argv[0] = "kp-no-such-python3";
  WorkerClient w(o);
  auto dev = w.device();
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code, ErrorCode::kNotFound);
  EXPECT_NE(dev.error().message.find("kp-no-such-python3 -m kernelpro_torch.worker"), std::string::npos)
      << dev.error().message;
}

TEST_F(PythonWorkerClientTest, KernelBenchEvalSendsTheExtraFilesOnlyWhenSet) {
  setenv("FAKE_LOG", (dir_->path() / "log").c_str(), 1);
  WorkerClient w(python_options());
  task::Task t;
  t.kind = task::TaskKind::kKernelBench;
  t.name = "23_Softmax.py";
  t.reference_path = "/suite/level1/23_Softmax.py";
  t.level = 1;
  t.problem_id = 23;
  auto inline_form = w.evaluate(t, t.reference_path, "/c/cand.py", fast(), KernelBenchFiles{{}, {}, "/cache/torch_extensions"});
  ASSERT_TRUE(inline_form.ok()) << inline_form.error().message;
  EXPECT_EQ(inline_form->report.outcome, Outcome::kOk);
  ASSERT_EQ(inline_form->report.kernels.size(), 1u);
  auto prebuilt = w.evaluate(t, t.reference_path, "/c/cand.py", fast(), KernelBenchFiles{"/cache/x.so", "/c/cand.cu", {}});
  ASSERT_TRUE(prebuilt.ok());
  auto reqs = logged();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0]["task"]["kind"], "kernelbench");
  EXPECT_EQ(reqs[0]["reference"], "/suite/level1/23_Softmax.py");
  EXPECT_EQ(reqs[0]["candidate"], "/c/cand.py");
  EXPECT_EQ(reqs[0]["build_dir"], "/cache/torch_extensions");
  EXPECT_FALSE(reqs[0].contains("library"));
  EXPECT_EQ(reqs[1]["library"], "/cache/x.so");
  EXPECT_EQ(reqs[1]["library_source"], "/c/cand.cu");
  EXPECT_FALSE(reqs[1].contains("build_dir"));
  EXPECT_EQ(reqs[1]["options"]["precision_policy"], "kernelbench");
  EXPECT_NE(reqs[0]["id"], reqs[1]["id"]);
}

TEST_F(PythonWorkerClientTest, BaselineReturnsEachMode) {
  setenv("FAKE_LOG", (dir_->path() / "log").c_str(), 1);
  WorkerClient w(python_options());
  auto b = w.baseline("/suite/level1/1_A.py", {"eager", "compile"}, 3, 50, 10);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->reply.hardware, "Fake H200");
  EXPECT_EQ(b->reply.torch_version, "2.11.0");
  EXPECT_TRUE(b->reply.results.at("eager").ok);
  EXPECT_DOUBLE_EQ(b->reply.results.at("compile").mean_ms, 1.0);
  EXPECT_FALSE(b->worker_restarted);
  auto reqs = logged();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0]["op"], "baseline");
  EXPECT_EQ(reqs[0]["problem"], "/suite/level1/1_A.py");
  EXPECT_EQ(reqs[0]["modes"], nlohmann::json::parse(R"(["eager","compile"])"));
  EXPECT_EQ(reqs[0]["warmup"], 3);
  EXPECT_EQ(reqs[0]["trials"], 50);
}

TEST_F(PythonWorkerClientTest, ACrashDuringABaselineFailsThatProblemAndTheNextGetsANewWorker) {
  WorkerClient w(python_options());
  auto b = w.baseline("/suite/level1/2_crash.py", {"eager", "compile"}, 5, 100, 10);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_TRUE(b->worker_restarted);
  for (const char* mode : {"eager", "compile"}) {
    const auto& m = b->reply.results.at(mode);
    EXPECT_FALSE(m.ok);
    EXPECT_NE(m.error.find("SIGSEGV"), std::string::npos) << m.error;
    EXPECT_NE(m.error.find("segfault in the problem"), std::string::npos) << "last stderr line: " << m.error;
  }
  auto next = w.baseline("/suite/level1/3_B.py", {"eager"}, 5, 100, 10);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->reply.results.at("eager").ok);
  EXPECT_EQ(starts(), 2);
}

TEST_F(PythonWorkerClientTest, AHangDuringABaselineIsAFailedProblem) {
  WorkerClient w(python_options());
  auto b = w.baseline("/suite/level1/4_hang.py", {"eager"}, 5, 100, 1);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->reply.results.at("eager").ok);
  EXPECT_NE(b->reply.results.at("eager").error.find("no result within 1 s"), std::string::npos)
      << b->reply.results.at("eager").error;
  EXPECT_TRUE(b->worker_restarted);
}

TEST_F(PythonWorkerClientTest, AModeTheWorkerDoesNotAnswerIsFailed) {
  WorkerClient w(python_options());
  auto b = w.baseline("/suite/level1/5_C.py", {"eager", "max-autotune"}, 5, 100, 10);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->reply.results.at("eager").ok);
  EXPECT_FALSE(b->reply.results.at("max-autotune").ok);
  EXPECT_NE(b->reply.results.at("max-autotune").error.find("no result for mode max-autotune"), std::string::npos);
}

}  // namespace
}  // namespace kp::eval
