#include "report/transcripts.h"

#include <gtest/gtest.h>

#include "sys/temp_dir.h"

namespace kp::report {
namespace {

TEST(Transcripts, ADirectionAimsAtTheBottleneckItsWordsAddress) {
  EXPECT_TRUE(aims_at("memory-bound", "float4 loads in a grid-stride loop", ""));
  EXPECT_TRUE(aims_at("memory-bound", "x", "vectorize_loads"));
  EXPECT_TRUE(aims_at("compute-bound", "use WGMMA tensor cores with TMA", ""));
  EXPECT_TRUE(aims_at("latency-bound", "more blocks: raise occupancy", ""));
  EXPECT_FALSE(aims_at("compute-bound", "float4 loads", "vectorize_loads")) << "a memory move on a compute-bound kernel";
  EXPECT_FALSE(aims_at("", "float4 loads", "")) << "no class, nothing to aim at";
}

TEST(Transcripts, EachCandidateIsCountedOnceByItsLastVerdict) {
  auto d = sys::TempDir::create("kp-transcripts-").value();
  auto s = store::RunStore::open(d.path() / "store.db").value();
  std::vector<store::EvaluationRow> evals = {
      {1, "ok", "", 2e-3, 0, 1, "{}"},                                                     // the reference
      {2, "compile_error", "expected ;", 0, 0, 0, "{}"},
      {3, "rejected", "kept output", 0, 0, 0, R"({"eval": {"cheat": "result_cache"}})"},
      {4, "timeout", "", 0, 0, 0, "{}"},
      {5, "ok", "", 1e-3, 0, 2, "{}"},
      {5, "ok", "", 1e-3, 0, 2, "{}"},  // a duplicate recorded again: one candidate
  };
  ASSERT_TRUE(s.add_lesson({"t", "gemm", "compute-bound", "tensor cores", "use_tensor_cores", "ok", 2, 0, ""}).ok());
  ASSERT_TRUE(s.add_lesson({"t", "gemm", "compute-bound", "float4 loads", "vectorize_loads", "ok", 1, 0, ""}).ok());
  ASSERT_TRUE(s.add_lesson({"t", "gemm", "", "BLOCK 128 -> 256", "tune", "ok", 1, 0, ""}).ok());
  const CandidateClasses c = classify_candidates(s, evals, {1});
  EXPECT_EQ(c.classes, (std::map<std::string, int>{{"correct", 1},
                                                   {"crashed or hung", 1},
                                                   {"did not compile", 1},
                                                   {"rejected: result_cache", 1}}));
  ASSERT_EQ(c.correct_s.size(), 1u);
  EXPECT_EQ(c.planned_with_class, 2);
  EXPECT_EQ(c.aimed, 1);
  EXPECT_EQ(against_torch(1e-3, 2e-3), "correct, faster than PyTorch");
  EXPECT_EQ(against_torch(3e-3, 2e-3), "correct, slower than PyTorch");
  EXPECT_EQ(against_torch(3e-3, 0), "correct (no PyTorch baseline on this card)");
}

}  // namespace
}  // namespace kp::report
