// Toolchain tier: candidates that use a library their task forbids are rejected from their build
// alone, with real nvcc, readelf and nm, before any worker or GPU is involved.
#include "eval/evaluator.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "sys/temp_dir.h"
#include "task/native_task_loader.h"
#include "tests/support/paths.h"

namespace kp::eval {
namespace {

namespace fs = std::filesystem;

class LibraryPolicyToolchain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
    scratch_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-libpolicy-test-").value());
    EvaluatorOptions o;
    o.build.arch = "sm_90a";  // fixed: no GPU to ask
    o.build.cache_dir = scratch_->path() / "cache";
    o.build.jobs = 2;
    o.eval.timing_budget_s = 0.1;
    o.eval.energy_window_s = 0;
    o.worker.worker_path = testing::worker_binary();
    o.worker.scratch_dir = scratch_->path() / "worker";
    evaluator_ = std::make_unique<Evaluator>(o);
    auto t = task::load_native_task(testing::examples_dir() / "gemm_fp32");
    ASSERT_TRUE(t.ok()) << t.error().message;
    gemm_ = *t;
  }
  EvalResult run(const task::Task& task, const fs::path& candidate) {
    auto r = evaluator_->evaluate(task, candidate);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : EvalResult{};
  }
  static fs::path cheat(const char* name) { return testing::test_data_dir() / "cheats" / "native" / name; }

  std::unique_ptr<sys::TempDir> scratch_;
  std::unique_ptr<Evaluator> evaluator_;
  task::Task gemm_;
};

TEST_F(LibraryPolicyToolchain, DlopenIsRejectedWithoutTheWorker) {
  EvalResult r = run(gemm_, cheat("dlopen_cublas.cu"));
  EXPECT_EQ(r.outcome, Outcome::kRejected) << r.reason;
  EXPECT_EQ(r.cheat, "forbidden_library");
  EXPECT_NE(r.reason.find("calls dlopen"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("candidate_libraries"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.device) << "decided before the worker was asked for a device";
  EXPECT_FALSE(r.report);
  ASSERT_TRUE(r.candidate_build && r.candidate_build->imported_symbols);
}

TEST_F(LibraryPolicyToolchain, AnUnlinkedCublasCallIsRejectedAndTheTaskCanAllowIt) {
  EvalResult r = run(gemm_, cheat("links_cublas.cu"));
  EXPECT_EQ(r.outcome, Outcome::kRejected) << r.reason;
  EXPECT_EQ(r.cheat, "forbidden_library");
  EXPECT_NE(r.reason.find("from cuBLAS"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("candidate_libraries = [\"cublas\"]"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.device);

  // The same candidate where the task allows cuBLAS: linked, and past the policy (not_run here
  // without a GPU; ok on one).
  task::Task allowing = gemm_;
  allowing.candidate_libraries = {"cublas"};
  EvalResult allowed = run(allowing, cheat("links_cublas.cu"));
  EXPECT_EQ(allowed.cheat, "") << allowed.reason;
  EXPECT_NE(allowed.outcome, Outcome::kRejected) << allowed.reason;
  ASSERT_TRUE(allowed.candidate_build && allowed.candidate_build->needed_libraries);
  bool links_cublas = false;
  for (const auto& l : *allowed.candidate_build->needed_libraries) links_cublas |= l.rfind("libcublas.so", 0) == 0;
  EXPECT_TRUE(links_cublas);
}

TEST_F(LibraryPolicyToolchain, AnHonestCandidateIsNotRejected) {
  // The seed's .so imports dlopen through the static CUDA runtime; its own code does not.
  EvalResult r = run(gemm_, testing::examples_dir() / "gemm_fp32" / "seed.cu");
  EXPECT_NE(r.outcome, Outcome::kRejected) << r.reason;
  EXPECT_EQ(r.cheat, "");
}

}  // namespace
}  // namespace kp::eval
