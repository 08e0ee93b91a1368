#include "verdict/compare.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

namespace kp::eval {
namespace {

using task::DType;
using task::Tolerance;

std::vector<float> ramp(int n) {
  std::vector<float> v(n);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0, 1);
  for (auto& x : v) x = dist(rng);
  return v;
}

float poison_f32() {
  uint32_t bits = static_cast<uint32_t>(poison_bits(DType::kFp32));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

const Tolerance kFp32 = task::default_tolerance(DType::kFp32);

TEST(Compare, IdenticalPasses) {
  auto ref = ramp(1000);
  auto c = check_output(ref.data(), ref.data(), DType::kFp32, 1000, kFp32, {1000});
  EXPECT_TRUE(c.passed) << c.reason;
  EXPECT_EQ(c.max_abs_error, 0);
}

TEST(Compare, SmallRoundingPasses) {
  auto ref = ramp(1000);
  auto out = ref;
  for (auto& x : out) x = std::nextafter(x, 10.f);
  EXPECT_TRUE(check_output(out.data(), ref.data(), DType::kFp32, 1000, kFp32, {1000}).passed);
}

TEST(Compare, OneWrongElementFailsAndIsLocated) {
  auto ref = ramp(12);
  auto out = ref;
  out[7] += 0.5f;
  auto c = check_output(out.data(), ref.data(), DType::kFp32, 12, kFp32, {3, 4});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_bad_index, 7);
  EXPECT_NE(c.reason.find("[1, 3]"), std::string::npos) << c.reason;
}

TEST(Compare, UnwrittenElementsAreCaught) {
  auto ref = ramp(100);
  auto out = ref;
  for (int i = 50; i < 100; ++i) out[i] = poison_f32();
  auto c = check_output(out.data(), ref.data(), DType::kFp32, 100, kFp32, {100});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.unwritten, 50);
  EXPECT_NE(c.reason.find("never written"), std::string::npos);
}

TEST(Compare, NanNeverPasses) {
  auto ref = ramp(100);
  auto out = ref;
  out[3] = std::nanf("1");
  Tolerance loose{1e9, 1e9, 1e9};
  auto c = check_output(out.data(), ref.data(), DType::kFp32, 100, loose, {100});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nonfinite, 1);
}

TEST(Compare, ZerosFailEvenWhenAtolWouldLetThemThrough) {
  // A softmax over 16384 columns: every value is about 6e-5, below a loose atol of 1e-2.
  std::vector<float> ref(16384);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  float sum = 0;
  for (auto& x : ref) sum += (x = u(rng));
  for (auto& x : ref) x /= sum;
  std::vector<float> zeros(ref.size(), 0.f);
  Tolerance kernelbench_like{1e-2, 1e-2, 1e-5};
  auto c = check_output(zeros.data(), ref.data(), DType::kFp32, 16384, kernelbench_like, {16384});
  EXPECT_FALSE(c.passed);
  EXPECT_TRUE(c.constant_output);
  EXPECT_EQ(c.mismatches, 0);  // the elementwise test alone would have passed
}

TEST(Compare, ScaledOutputFailsOnTheNorm) {
  auto ref = ramp(1000);
  auto out = ref;
  for (auto& x : out) x *= 1.00005f;  // within rtol 1e-4 elementwise, but a systematic error
  Tolerance t{1e-5, 1e-4, 1e-5};
  auto c = check_output(out.data(), ref.data(), DType::kFp32, 1000, t, {1000});
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.reason.find("relative error norm"), std::string::npos);
}

TEST(Compare, IntegersCompareExactly) {
  std::vector<int32_t> ref = {1, 2, 3, 4}, out = {1, 2, 3, 5};
  auto c = check_output(out.data(), ref.data(), DType::kInt32, 4, Tolerance{1, 1, 1}, {4});
  EXPECT_FALSE(c.passed);
  out[3] = 4;
  EXPECT_TRUE(check_output(out.data(), ref.data(), DType::kInt32, 4, Tolerance{}, {4}).passed);
}

TEST(Compare, BoolPoisonIsNotATruthValue) {
  std::vector<uint8_t> ref = {0, 1, 1, 0}, out = {0, 1, 0xA5, 0};
  auto c = check_output(out.data(), ref.data(), DType::kBool, 4, Tolerance{}, {4});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.unwritten, 1);
}

TEST(Compare, HalfAndBf16Conversions) {
  EXPECT_FLOAT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_FLOAT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_FLOAT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(half_to_float(static_cast<uint16_t>(poison_bits(DType::kFp16)))));
  EXPECT_FLOAT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_TRUE(std::isnan(bf16_to_float(static_cast<uint16_t>(poison_bits(DType::kBf16)))));
}

TEST(Compare, ReferenceNanBlamesTheTask) {
  std::vector<float> ref = {1, std::nanf(""), 3}, out = {1, 2, 3};
  auto c = check_output(out.data(), ref.data(), DType::kFp32, 3, kFp32, {3});
  EXPECT_FALSE(c.passed);
  EXPECT_NE(c.reason.find("fix the task"), std::string::npos);
}

// A failed trial's name comes from the check alone, the same in both workers.
TEST(Compare, AFailedCheckIsNamedByWhatItLooksLike) {
  std::vector<float> ref(1000), out(1000);
  for (int i = 0; i < 1000; ++i) ref[i] = 1.0f + 0.001f * static_cast<float>(i);
  for (int i = 0; i < 1000; ++i) out[i] = ref[i] * (1.0f + 1e-3f * ((i % 2) ? 1.0f : -1.0f));  // fp16-sized error
  auto near = check_output(out.data(), ref.data(), DType::kFp32, 1000, kFp32, {1000});
  ASSERT_FALSE(near.passed);
  EXPECT_EQ(failure_kind(near, DType::kFp32).cheat, "precision_downgrade");
  EXPECT_NE(failure_kind(near, DType::kFp32).hint.find("TF32"), std::string::npos);
  EXPECT_EQ(failure_kind(near, DType::kFp16).cheat, "") << "a half output is already narrow";
  std::vector<float> wrong(1000, 0.0f);
  for (int i = 0; i < 1000; ++i) wrong[i] = -ref[i];
  EXPECT_EQ(failure_kind(check_output(wrong.data(), ref.data(), DType::kFp32, 1000, kFp32, {1000}), DType::kFp32).cheat,
            "")
      << "a wrong formula, far off";
  std::vector<float> flat(1000, 0.5f);
  EXPECT_EQ(failure_kind(check_output(flat.data(), ref.data(), DType::kFp32, 1000, kFp32, {1000}), DType::kFp32).cheat,
            "constant_output");
  EXPECT_EQ(failure_kind(check_output(ref.data(), ref.data(), DType::kFp32, 1000, kFp32, {1000}), DType::kFp32).cheat,
            "")
      << "a passing check has no name";
  std::vector<float> nan_ref = ref;
  nan_ref[3] = std::nanf("");
  EXPECT_EQ(failure_kind(check_output(flat.data(), nan_ref.data(), DType::kFp32, 1000, kFp32, {1000}), DType::kFp32).cheat,
            "")
      << "the task's fault";
}

}  // namespace
}  // namespace kp::eval
