#include "task/kernelbench_loader.h"

#include <gtest/gtest.h>

#include "sys/temp_dir.h"
#include "util/strings.h"

namespace kp::task {
namespace {

namespace fs = std::filesystem;

const char* kSoftmax = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a Softmax activation.
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)

batch_size = 16
dim = 16384

def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed
)";

class KernelBenchLoader : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<sys::TempDir>(sys::TempDir::create("kp-kb-").value()); }
  fs::path write(const std::string& rel, const std::string& text) {
    fs::path p = dir_->path() / rel;
    fs::create_directories(p.parent_path());
    EXPECT_TRUE(write_file(p.string(), text).ok());
    return p;
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(KernelBenchLoader, LoadsAProblemWithItsLevelAndId) {
  fs::path p = write("level1/23_Softmax.py", kSoftmax);
  auto t = load_kernelbench_problem(p);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kind, TaskKind::kKernelBench);
  EXPECT_EQ(t->name, "23_Softmax.py");
  EXPECT_EQ(t->category, "level1");
  EXPECT_EQ(t->level, 1);
  EXPECT_EQ(t->problem_id, 23);
  EXPECT_EQ(t->reference_path, p);
  EXPECT_TRUE(t->reference_path.is_absolute());
  EXPECT_EQ(t->dir, p.parent_path());
  EXPECT_EQ(t->description, "Simple model that performs a Softmax activation.");
  EXPECT_TRUE(t->inputs.empty());
}

TEST_F(KernelBenchLoader, OutsideALevelFolderHasNoLevel) {
  fs::path p = write("mine/7_Thing.py", kSoftmax);
  auto t = load_kernelbench_problem(p);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->level, 0);
  EXPECT_EQ(t->category, "");
  EXPECT_EQ(t->problem_id, 7);
  fs::path q = write("level3x/Thing.py", kSoftmax);
  auto u = load_kernelbench_problem(q);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->level, 0);
  EXPECT_EQ(u->problem_id, 0);
}

TEST_F(KernelBenchLoader, RelativePathBecomesAbsolute) {
  fs::path p = write("level2/5_X.py", kSoftmax);
  fs::path old = fs::current_path();
  fs::current_path(dir_->path());
  auto t = load_kernelbench_problem("level2/5_X.py");
  fs::current_path(old);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->reference_path, p);
  EXPECT_EQ(t->level, 2);
}

TEST_F(KernelBenchLoader, MissingFileIsNotFound) {
  auto t = load_kernelbench_problem(dir_->path() / "level1" / "nope.py");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kNotFound);
  EXPECT_NE(t.error().message.find("nope.py"), std::string::npos);
}

TEST_F(KernelBenchLoader, NotAPyFileIsInvalid) {
  fs::path p = write("level1/1_X.txt", kSoftmax);
  auto t = load_kernelbench_problem(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(t.error().message.find(".py"), std::string::npos);
}

TEST_F(KernelBenchLoader, NamesEveryMissingDefinition) {
  fs::path p = write("level1/2_Bad.py",
                     "import torch\nclass ModelNew(nn.Module):\n    pass\n    def get_inputs():\n        pass\n");
  auto t = load_kernelbench_problem(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidInput);
  const std::string& m = t.error().message;
  EXPECT_NE(m.find("2_Bad.py"), std::string::npos) << m;
  EXPECT_NE(m.find("class Model"), std::string::npos) << m;
  EXPECT_NE(m.find("get_inputs"), std::string::npos) << m;  // indented: not top level
  EXPECT_NE(m.find("get_init_inputs"), std::string::npos) << m;
}

TEST_F(KernelBenchLoader, OnlyTheMissingOneIsNamed) {
  std::string text = kSoftmax;
  text.replace(text.find("def get_init_inputs"), 19, "def make_init");
  auto t = parse_kernelbench_problem(text, dir_->path() / "level1" / "3_Y.py");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("get_init_inputs"), std::string::npos);
  EXPECT_EQ(t.error().message.find("class Model"), std::string::npos) << t.error().message;
}

}  // namespace
}  // namespace kp::task
