#include "task/work_kind.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/paths.h"

namespace kp::task {
namespace {

Task kernelbench(const std::string& name, int level) {
  Task t;
  t.kind = TaskKind::kKernelBench;
  t.name = name;
  t.level = level;
  t.category = "level" + std::to_string(level);
  return t;
}

TEST(WorkKind, AKernelBenchProblemIsKnownByTheOpThatDominatesIt) {
  EXPECT_EQ(work_kind(kernelbench("19_ReLU.py", 1)), "elementwise");
  EXPECT_EQ(work_kind(kernelbench("30_Softsign.py", 1)), "elementwise");
  EXPECT_EQ(work_kind(kernelbench("2_Standard_matrix_multiplication_.py", 1)), "gemm");
  EXPECT_EQ(work_kind(kernelbench("4_Matrix_vector_multiplication_.py", 1)), "gemm");
  EXPECT_EQ(work_kind(kernelbench("23_Softmax.py", 1)), "softmax");
  EXPECT_EQ(work_kind(kernelbench("24_LogSoftmax.py", 1)), "softmax");
  EXPECT_EQ(work_kind(kernelbench("36_RMSNorm_.py", 1)), "normalization");
  EXPECT_EQ(work_kind(kernelbench("47_Sum_reduction_over_a_dimension.py", 1)), "reduction");
  EXPECT_EQ(work_kind(kernelbench("52_Argmin_over_a_dimension.py", 1)), "reduction");
  EXPECT_EQ(work_kind(kernelbench("89_cumsum.py", 1)), "scan");
  EXPECT_EQ(work_kind(kernelbench("42_Max_Pooling_2D.py", 1)), "pooling") << "not a max reduction";
  EXPECT_EQ(work_kind(kernelbench("95_CrossEntropyLoss.py", 1)), "loss");
  // Level 2: the GEMM or convolution first, whatever epilogue follows it.
  EXPECT_EQ(work_kind(kernelbench("14_Gemm_Divide_Sum_Scaling.py", 2)), "gemm");
  EXPECT_EQ(work_kind(kernelbench("18_Matmul_Sum_Max_AvgPool2d_LogSumExp_LogSumExp.py", 2)), "gemm");
  EXPECT_EQ(work_kind(kernelbench("1_Conv2D_ReLU_BiasAdd.py", 2)), "conv");
  EXPECT_EQ(work_kind(kernelbench("5_ResNet18.py", 3)), "network");
}

TEST(WorkKind, ANativeTaskIsItsCategoryWhenThatIsAKind) {
  Task t;
  t.kind = TaskKind::kNative;
  t.category = "reduction";
  EXPECT_EQ(work_kind(t), "reduction");
  t.category = "my own words";
  EXPECT_EQ(work_kind(t), "") << "an unknown category is no kind: it matches nothing";
}

// The optimize loop's planner and coder read prompts/playbook_<kind>.md for the task's kind.
TEST(WorkKind, EveryKindHasAPlaybook) {
  for (const auto& k : work_kinds())
    EXPECT_TRUE(std::filesystem::exists(kp::testing::source_dir() / "prompts" / ("playbook_" + k + ".md"))) << k;
}

}  // namespace
}  // namespace kp::task
