// The orchestrator's handling of worker failures, against a fake worker that speaks the real
// protocol (tests/data/fake_workers/fake_worker.sh): the real kp-worker needs a GPU, and its
// own crash, hang and restart behaviour is covered by the gpu tier.
#include "eval/worker_client.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

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

TEST_F(WorkerClientTest, NoGpuIsUnavailableWithTheWorkersWords) {
  WorkerClient w = client("no_gpu");
  auto dev = w.device();
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(dev.error().message.find("fake machine without a GPU"), std::string::npos);
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
  EXPECT_NE(ev->report.reason.find("no verdict within 1 s"), std::string::npos) << ev->report.reason;
  EXPECT_TRUE(ev->worker_restarted);
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

}  // namespace
}  // namespace kp::eval
