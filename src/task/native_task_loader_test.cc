#include "task/native_task_loader.h"

#include <gtest/gtest.h>

namespace kp::task {
namespace {

const char* kGood = R"(
name = "layernorm"
description = "row layer norm"
category = "normalization"
[symbols]
M = 64
N = 128
[[inputs]]
name = "x"
dtype = "fp32"
shape = ["M", "N"]
init = { dist = "normal", mean = 0.0, std = 2.0 }
[[inputs]]
name = "idx"
dtype = "int64"
shape = ["2*M"]
[[inputs]]
name = "mask"
dtype = "bool"
shape = [4]
[[outputs]]
name = "y"
dtype = "bf16"
shape = ["M", "N"]
[[scalars]]
name = "eps"
value = 1e-5
[[scalars]]
name = "groups"
value = 4
[cost]
flops = "8 * M * N"
bytes = "4*M*N + 2*M*N"
[build]
libraries = ["cublas"]
)";

TEST(NativeTask, ParsesEveryField) {
  auto t = parse_native_task(kGood, "/tmp/t", "task.toml");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->name, "layernorm");
  ASSERT_EQ(t->inputs.size(), 3u);
  EXPECT_EQ(t->inputs[0].shape, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(t->inputs[0].init.kind, DistKind::kNormal);
  EXPECT_DOUBLE_EQ(t->inputs[0].init.b, 2.0);
  EXPECT_EQ(t->inputs[1].dtype, DType::kInt64);
  EXPECT_EQ(t->inputs[1].shape, (std::vector<int64_t>{128}));
  EXPECT_EQ(t->inputs[1].init.kind, DistKind::kRandint);  // default for integers
  EXPECT_EQ(t->inputs[2].init.kind, DistKind::kBernoulli);  // default for bool
  EXPECT_EQ(t->outputs[0].dtype, DType::kBf16);
  ASSERT_EQ(t->scalars.size(), 2u);
  EXPECT_FALSE(t->scalars[0].is_integer);
  EXPECT_TRUE(t->scalars[1].is_integer);
  EXPECT_EQ(t->scalars[1].i, 4);
  EXPECT_DOUBLE_EQ(t->ideal_flops, 8.0 * 64 * 128);
  EXPECT_DOUBLE_EQ(t->ideal_bytes, 6.0 * 64 * 128);
  EXPECT_EQ(t->reference_libraries, std::vector<std::string>{"cublas"});
  EXPECT_TRUE(t->candidate_libraries.empty());
  // No [tolerance]: the bf16 default applies.
  EXPECT_DOUBLE_EQ(t->tolerance_for(0).rel_norm, default_tolerance(DType::kBf16).rel_norm);
}

struct BadCase {
  const char* toml;
  const char* expected;  // a fragment the message must contain
};

TEST(NativeTask, BadInputGetsAMessageThatNamesTheProblem) {
  const BadCase cases[] = {
      {"name = \"x\"\n[[outputs]]\nname=\"y\"\ndtype=\"float8\"\nshape=[4]\n", "unknown dtype \"float8\""},
      {"name = \"x\"\n[[outputs]]\nname=\"y\"\ndtype=\"fp32\"\nshape=[\"N\"]\n", "unknown symbol 'N'"},
      {"name = \"x\"\n[[outputs]]\nname=\"y\"\ndtype=\"fp32\"\n", "shape is missing"},
      {"name = \"x\"\n", "no [[outputs]]"},
      {"[[outputs]]\nname=\"y\"\ndtype=\"fp32\"\nshape=[4]\n", "'name' is missing"},
      {"name = \"x\"\n[[outputs]\n", "not valid TOML"},
      {"name = \"x\"\n[[inputs]]\nname=\"a\"\ndtype=\"fp32\"\nshape=[4]\ninit={dist=\"poisson\"}\n[[outputs]]\nname=\"y\"\ndtype=\"fp32\"\nshape=[4]\n",
       "\"poisson\" is unknown"},
      {"name = \"x\"\n[[inputs]]\nname=\"a\"\ndtype=\"fp32\"\nshape=[4]\n[[outputs]]\nname=\"a\"\ndtype=\"fp32\"\nshape=[4]\n", "used twice"},
      {"name = \"x\"\n[symbols]\nN=0\n[[outputs]]\nname=\"y\"\ndtype=\"fp32\"\nshape=[4]\n", "must be >= 1"},
      {"name = \"x\"\n[[outputs]]\nname=\"y\"\ndtype=\"fp32\"\nshape=[4]\n[build]\nlibraries=[\"mkl\"]\n", "unknown library"},
      {"name = \"x\"\n[[outputs]]\nname=\"y\"\ndtype=\"fp32\"\nshape=[4]\n[tolerance]\natl=1\n", "tolerance.atl is unknown"},
  };
  for (const auto& c : cases) {
    auto t = parse_native_task(c.toml, "/tmp", "t.toml");
    ASSERT_FALSE(t.ok()) << c.toml;
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(t.error().message.find(c.expected), std::string::npos)
        << "message: " << t.error().message << "\nexpected fragment: " << c.expected;
    EXPECT_NE(t.error().message.find("t.toml"), std::string::npos) << "the message must name the file";
  }
}

TEST(NativeTask, MissingFolderAndMissingReference) {
  auto missing = load_native_task("/nonexistent/task");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace kp::task
