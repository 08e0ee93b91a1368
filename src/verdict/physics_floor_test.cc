#include "verdict/physics_floor.h"

#include <gtest/gtest.h>

namespace kp::eval {
namespace {

DeviceInfo h200() {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.sm_clock_khz = 1980000;
  d.l2_bytes = 50 << 20;
  d.dram_bytes_per_s = 4.0e12;
  return d;
}

task::TensorSpec tensor(const char* name, task::DType dtype, std::vector<int64_t> shape) {
  task::TensorSpec s;
  s.name = name;
  s.dtype = dtype;
  s.shape = std::move(shape);
  return s;
}

task::Task gelu(int64_t n) {
  task::Task t;
  t.name = "gelu";
  t.inputs = {tensor("x", task::DType::kFp32, {n})};
  t.outputs = {tensor("y", task::DType::kFp32, {n})};
  t.ideal_bytes = 8.0 * static_cast<double>(n);
  t.ideal_flops = 8.0 * static_cast<double>(n);
  return t;
}

task::Task gemm(task::DType dtype, int64_t n) {
  task::Task t;
  t.name = "gemm";
  t.inputs = {tensor("A", dtype, {n, n}), tensor("B", dtype, {n, n})};
  t.outputs = {tensor("C", dtype, {n, n})};
  double e = static_cast<double>(task::dtype_size(dtype));
  t.ideal_bytes = 3.0 * e * static_cast<double>(n * n);
  t.ideal_flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return t;
}

TEST(PhysicsFloor, PeakIsSmsTimesClockTimesTheRateOfTheClass) {
  DeviceInfo d = h200();
  EXPECT_DOUBLE_EQ(peak_flops_per_s(d, PrecisionClass::kTf32), 132 * 1.98e9 * 2048);
  EXPECT_DOUBLE_EQ(peak_flops_per_s(d, PrecisionClass::kBf16), 132 * 1.98e9 * 4096);
  EXPECT_DOUBLE_EQ(peak_flops_per_s(d, PrecisionClass::kInt8Fp8), 132 * 1.98e9 * 8192);
  // The published H100 SXM FP64 tensor figure, 66.9 TFLOPS, within 1%.
  EXPECT_NEAR(peak_flops_per_s(d, PrecisionClass::kFp64), 66.9e12, 0.67e12);
  // The published dense BF16 figure (989 TFLOPS at 1.83 GHz) is below ours at the 1.98 GHz peak
  // clock: the floor errs on the side of the candidate.
  EXPECT_GT(peak_flops_per_s(d, PrecisionClass::kBf16), 989e12);
  d.cc_major = 7;  // no table: no peak
  EXPECT_EQ(peak_flops_per_s(d, PrecisionClass::kTf32), 0);
  d = h200();
  d.sm_clock_khz = 0;
  EXPECT_EQ(peak_flops_per_s(d, PrecisionClass::kTf32), 0);
}

TEST(PhysicsFloor, ClassIsTheMostLenientAmongTheInputs) {
  EXPECT_EQ(precision_class(gemm(task::DType::kFp32, 16)), PrecisionClass::kTf32);
  EXPECT_EQ(precision_class(gemm(task::DType::kFp64, 16)), PrecisionClass::kFp64);
  EXPECT_EQ(precision_class(gemm(task::DType::kBf16, 16)), PrecisionClass::kBf16);
  EXPECT_EQ(precision_class(gemm(task::DType::kFp16, 16)), PrecisionClass::kBf16);
  task::Task mixed = gemm(task::DType::kFp32, 16);
  mixed.inputs[1].dtype = task::DType::kBf16;
  EXPECT_EQ(precision_class(mixed), PrecisionClass::kBf16);
  mixed.inputs[0].dtype = task::DType::kInt32;
  EXPECT_EQ(precision_class(mixed), PrecisionClass::kInt8Fp8);
}

TEST(PhysicsFloor, MemoryBoundTaskIsHeldToTheMeasuredBandwidth) {
  task::Task t = gelu(int64_t{1} << 26);
  PhysicsFloor f = physics_floor(t, h200(), TimingMethod::kEvents, 1.3);
  EXPECT_NEAR(f.seconds, t.ideal_bytes / (4.0e12 * 1.3), 1e-12);
  EXPECT_NEAR(f.seconds, 103e-6, 1e-6);
  EXPECT_TRUE(f.bytes_bound);
  EXPECT_NE(f.basis.find("max("), std::string::npos) << f.basis;
  EXPECT_NE(f.basis.find("5.37e+08 B / (4e+12 B/s x 1.3)"), std::string::npos) << f.basis;
  EXPECT_NE(f.basis.find("TF32 peak"), std::string::npos) << f.basis;
  // A larger margin lowers the floor in proportion.
  EXPECT_NEAR(physics_floor(t, h200(), TimingMethod::kEvents, 2.6).seconds, f.seconds / 2, 1e-12);
}

TEST(PhysicsFloor, ComputeBoundTaskIsHeldToThePeakOfItsInputPrecision) {
  task::Task fp32 = gemm(task::DType::kFp32, 4096);
  PhysicsFloor f = physics_floor(fp32, h200(), TimingMethod::kEvents, 1.3);
  double tf32 = 132 * 1.98e9 * 2048;
  EXPECT_NEAR(f.seconds, fp32.ideal_flops / (tf32 * 1.3), 1e-12);
  EXPECT_FALSE(f.bytes_bound);
  // cuBLAS SGEMM on an H200 takes ~2.7 ms for this task; the floor must stay far below.
  EXPECT_LT(f.seconds, 2.7e-3 / 5);
  task::Task bf16 = gemm(task::DType::kBf16, 4096);
  PhysicsFloor g = physics_floor(bf16, h200(), TimingMethod::kEvents, 1.3);
  EXPECT_NEAR(g.seconds, f.seconds / 2, 1e-12);
  EXPECT_NE(g.basis.find("BF16/FP16 peak"), std::string::npos) << g.basis;
  // cuBLAS bf16 GEMM runs at ~780 TFLOP/s (0.18 ms): honest, and above the floor.
  EXPECT_LT(g.seconds, 0.18e-3);
}

TEST(PhysicsFloor, GraphReplayCountsTheBytesTheL2HoldsAtTheSmsDataPathAndTheRestAtDram) {
  const double sm_path = 132 * 1.98e9 * 128;  // 33.4 TB/s
  EXPECT_NEAR(sm_path_bytes_per_s(h200()), sm_path, 1e3);
  task::Task small = gelu(1 << 20);  // 8 MiB of traffic, inside a 50 MiB L2
  PhysicsFloor f = physics_floor(small, h200(), TimingMethod::kGraphReplay, 1.3);
  // A working set that fits in L2 keeps its bytes term, at the SMs' data path.
  EXPECT_TRUE(f.bytes_bound) << f.basis;
  EXPECT_NEAR(f.seconds, small.ideal_bytes / (sm_path * 1.3), 1e-12);
  EXPECT_NE(f.basis.find("SM data path"), std::string::npos) << f.basis;
  // Lenient: 0.19 us against about 4 us for the honest kernel (8 MiB at the L2's ~2-3 TB/s).
  EXPECT_LT(f.seconds, 1e-6);
  // The same task timed with events (L2 flushed) is held to the DRAM bandwidth, a stricter floor.
  PhysicsFloor e = physics_floor(small, h200(), TimingMethod::kEvents, 1.3);
  EXPECT_TRUE(e.bytes_bound);
  EXPECT_GT(e.seconds, f.seconds);

  task::Task big = gelu(int64_t{12} << 20);  // 96 MiB
  PhysicsFloor g = physics_floor(big, h200(), TimingMethod::kGraphReplay, 1.3);
  EXPECT_NEAR(g.seconds, (big.ideal_bytes - (50 << 20)) / (4.0e12 * 1.3) + (50 << 20) / (sm_path * 1.3), 1e-12);
  EXPECT_NE(g.basis.find("of L2"), std::string::npos) << g.basis;

  // Without an SM count or clock the L2's share has no rate: the bytes that fit are not counted,
  // and the floor says so.
  DeviceInfo unknown = h200();
  unknown.sm_clock_khz = 0;
  PhysicsFloor u = physics_floor(small, unknown, TimingMethod::kGraphReplay, 1.3);
  EXPECT_EQ(u.seconds, 0);
  EXPECT_NE(u.basis.find("SMs' data path is unknown"), std::string::npos) << u.basis;
}

TEST(PhysicsFloor, TermsWithoutDataAreNotAppliedAndSaySo) {
  task::Task t = gelu(1 << 20);
  t.ideal_flops = 0;
  DeviceInfo d = h200();
  d.dram_bytes_per_s = 0;
  PhysicsFloor f = physics_floor(t, d, TimingMethod::kEvents, 1.3);
  EXPECT_EQ(f.seconds, 0);
  EXPECT_NE(f.basis.find("the DRAM bandwidth was not measured"), std::string::npos) << f.basis;
  EXPECT_NE(f.basis.find("the task gives no FLOPs"), std::string::npos) << f.basis;

  // Without ideal bytes, the tensors' own sizes stand in.
  task::Task u = gelu(1 << 20);
  u.ideal_bytes = 0;
  PhysicsFloor g = physics_floor(u, h200(), TimingMethod::kEvents, 1.0);
  EXPECT_NEAR(g.seconds, static_cast<double>(u.io_bytes()) / 4.0e12, 1e-15);

  DeviceInfo old = h200();
  old.cc_major = 7;
  old.cc_minor = 5;
  PhysicsFloor h = physics_floor(gemm(task::DType::kFp32, 256), old, TimingMethod::kEvents, 1.3);
  EXPECT_NE(h.basis.find("no TF32 peak for sm_75"), std::string::npos) << h.basis;
  EXPECT_TRUE(h.bytes_bound);
}

TEST(PhysicsFloor, TheDeviceFiguresTravelInTheWorkersHello) {
  DeviceInfo d = device_info_from_json(to_json(h200()));
  EXPECT_DOUBLE_EQ(d.dram_bytes_per_s, 4.0e12);
  EXPECT_EQ(d.sm_clock_khz, 1980000);
  task::Task t = gemm(task::DType::kBf16, 1024);
  EXPECT_DOUBLE_EQ(physics_floor(t, d, TimingMethod::kEvents, 1.3).seconds,
                   physics_floor(t, h200(), TimingMethod::kEvents, 1.3).seconds);
  // A worker that sends neither (an older one) gives a floor that says why it is not applied.
  PhysicsFloor f = physics_floor(t, device_info_from_json(nlohmann::json::object()), TimingMethod::kEvents, 1.3);
  EXPECT_EQ(f.seconds, 0);
  EXPECT_NE(f.basis.find("not measured"), std::string::npos) << f.basis;
}

}  // namespace
}  // namespace kp::eval
