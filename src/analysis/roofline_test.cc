#include "analysis/roofline.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "profile/ncu/ncu_csv.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::analysis {
namespace {

using profile::KernelMetrics;

constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kSmPct = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kMemPct = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kWaves = "launch__waves_per_multiprocessor";
constexpr const char* kDramRead = "dram__bytes_read.sum";
constexpr const char* kDramWrite = "dram__bytes_write.sum";
constexpr const char* kFfma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
constexpr const char* kBf16 = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";

// The H200 figures measured on the target (D2D copy, cuBLAS 8192^3 bf16 GEMM, FP32 FFMA loop);
// the other ceilings are left unknown, so their roofs must be skipped.
profile::Ceilings h200() {
  profile::Ceilings c;
  c.gpu = "NVIDIA H200";
  c.cc_major = 9;
  c.sm_count = 132;
  c.source = profile::CeilingSource::kCalibrated;
  c.dram_bytes_per_s = 4.3e12;
  c.fp32_flops = 67e12;
  c.tensor_bf16_flops = 790e12;
  return c;
}

bool has_roof(const RooflineResult& r, const std::string& name) {
  for (const auto& roof : r.roofs)
    if (roof.name == name) return true;
  return false;
}

const Roof& roof(const RooflineResult& r, const std::string& name) {
  for (const auto& x : r.roofs)
    if (x.name == name) return x;
  ADD_FAILURE() << "no roof " << name;
  static Roof none;
  return none;
}

bool any_evidence(const RooflineResult& r, const std::string& needle) {
  for (const auto& e : r.evidence)
    if (e.find(needle) != std::string::npos) return true;
  return false;
}

std::string all_evidence(const RooflineResult& r) { return join(r.evidence, "\n"); }

// saxpy (index 0) and strided (index 1) from the real `ncu --set full` capture, read by the ncu
// parser. `--set full` has the SASS FLOP counters only as .sum.per_cycle_elapsed; the stage-1 list
// asks for their .sum, which is that rate times the elapsed SMSP cycles of the same row
// (saxpy: 147.52 FFMA/cycle x 454,904 cycles = 2^26, one FFMA per element).
std::vector<KernelMetrics> fixture_kernels() {
  auto text = read_file((kp::testing::test_data_dir() / "ncu" / "ncu_full_raw.csv").string());
  EXPECT_TRUE(text.ok()) << text.error().message;
  auto kernels = profile::parse_ncu_raw_csv(text.value());
  EXPECT_TRUE(kernels.ok()) << kernels.error().message;
  auto out = kernels.value();
  EXPECT_EQ(out.size(), 2u);
  for (auto& k : out) {
    double cycles = k.get_or(kDuration, 0) * 1e-9 * k.get_or("smsp__cycles_elapsed.avg.per_second", 0);
    for (const char* op : {"fadd", "fmul", "ffma", "dadd", "dmul", "dfma", "hadd", "hmul", "hfma"}) {
      std::string base = std::string("smsp__sass_thread_inst_executed_op_") + op + "_pred_on.sum";
      if (auto rate = k.get(base + ".per_cycle_elapsed")) k.values[base] = *rate * cycles;
    }
  }
  return out;
}

double dram_fraction(const KernelMetrics& k) {
  return (k.get_or(kDramRead, 0) + k.get_or(kDramWrite, 0)) / (k.get_or(kDuration, 0) * 1e-9) / 4.3e12;
}

TEST(Roofline, SaxpyFromTheFixtureIsMemoryBoundOnDramAndAgreesWithNcu) {
  auto kernels = fixture_kernels();
  ASSERT_EQ(kernels.size(), 2u);
  ASSERT_NE(kernels[0].name.find("saxpy"), std::string::npos);
  RooflineResult r = classify({{kernels[0]}, h200(), std::nullopt, 0});

  EXPECT_EQ(r.cls, BottleneckClass::kMemoryBound) << all_evidence(r);
  EXPECT_EQ(r.limiter, "DRAM");
  EXPECT_NEAR(r.sol_fraction, dram_fraction(kernels[0]), 1e-9);
  EXPECT_NEAR(r.sol_fraction, 0.788, 0.002);  // 787 MB in 232 us over 4.30 TB/s
  EXPECT_NEAR(r.headroom, 1 / r.sol_fraction, 1e-9);
  EXPECT_NEAR(r.kernel_seconds, 232192e-9, 1e-12);
  // One FFMA per element: 2^26 FFMA = 2^27 FLOP over 787 MB.
  EXPECT_NEAR(roof(r, "FP32").amount, 2.0 * (1 << 26), 0.01 * (1 << 26));
  EXPECT_LT(roof(r, "FP32").fraction, 0.01);
  EXPECT_NEAR(r.arithmetic_intensity, 0.17, 0.01);
  EXPECT_EQ(r.ridge_roof, "FP32");
  EXPECT_NEAR(r.ridge_intensity, 67e12 / 4.3e12, 1e-9);
  // Unknown ceilings (L2, FP64, tensor) give no roof; the roofs come largest fraction first.
  EXPECT_FALSE(has_roof(r, "L2"));
  EXPECT_FALSE(has_roof(r, "Tensor BF16"));  // no tensor work
  for (size_t i = 1; i < r.roofs.size(); ++i) EXPECT_GE(r.roofs[i - 1].fraction, r.roofs[i].fraction);

  EXPECT_EQ(r.ncu_rule.verdict, "memory");
  EXPECT_NEAR(r.ncu_rule.sm_pct, 34.94, 1e-9);
  EXPECT_NEAR(r.ncu_rule.mem_pct, 70.45, 1e-9);
  EXPECT_TRUE(r.agrees_with_ncu);
  EXPECT_TRUE(r.disagreement.empty());
  EXPECT_TRUE(any_evidence(r, "DRAM 3.39 TB/s = 79% of the calibrated 4.30 TB/s")) << all_evidence(r);
  EXPECT_TRUE(any_evidence(r, "below the FP32 ridge")) << all_evidence(r);
}

TEST(Roofline, StridedFromTheFixtureSaturatesDramWithFewUsefulBytes) {
  auto kernels = fixture_kernels();
  ASSERT_EQ(kernels.size(), 2u);
  ASSERT_NE(kernels[1].name.find("strided"), std::string::npos);
  RooflineResult r = classify({{kernels[1]}, h200(), std::nullopt, 0});
  // One float per 128-byte line: 134 MB read from DRAM (64 B per line) for 8 MB of floats, in
  // 38.6 us: DRAM at 86% of 4.30 TB/s although the schedulers issue 0.03 instructions a cycle.
  EXPECT_EQ(r.cls, BottleneckClass::kMemoryBound) << all_evidence(r);
  EXPECT_EQ(r.limiter, "DRAM");
  EXPECT_NEAR(r.sol_fraction, dram_fraction(kernels[1]), 1e-9);
  EXPECT_GT(r.sol_fraction, 0.8);
  EXPECT_FALSE(has_roof(r, "FP32"));  // no FP32 work at all: no arithmetic roof
  EXPECT_EQ(r.ncu_rule.verdict, "memory");
  EXPECT_TRUE(r.agrees_with_ncu);
  EXPECT_TRUE(any_evidence(r, "DRAM 3.71 TB/s = 86%")) << all_evidence(r);
  EXPECT_TRUE(any_evidence(r, "DRAM read 134 MB and wrote 8.87 MB")) << all_evidence(r);
  EXPECT_TRUE(any_evidence(r, "issued 0.03 instructions per active cycle")) << all_evidence(r);
}

// ncu's own SOLBottleneck message for each fixture kernel (ncu_sol_details.csv) is the one our
// reproduction of the rule names.
TEST(Roofline, NcuRuleMatchesNcusOwnMessageOnTheFixtures) {
  auto text = read_file((kp::testing::test_data_dir() / "ncu" / "ncu_sol_details.csv").string());
  ASSERT_TRUE(text.ok());
  auto details = profile::parse_ncu_details_csv(text.value());
  ASSERT_TRUE(details.ok()) << details.error().message;
  ASSERT_EQ(details.value().kernels.size(), 2u);
  for (const auto& k : details.value().kernels) {
    KernelMetrics m;
    for (const auto& metric : k.metrics) {
      if (metric.name == "Compute (SM) Throughput" && metric.value) m.values[kSmPct] = *metric.value;
      if (metric.name == "Memory Throughput" && metric.value) m.values[kMemPct] = *metric.value;
    }
    std::string ncu_text;
    for (const auto& rule : k.rules)
      if (rule.rule == "SOLBottleneck") ncu_text = rule.description;
    ASSERT_FALSE(ncu_text.empty()) << k.name;
    NcuRuleVerdict v = ncu_sol_bottleneck(m);
    ASSERT_EQ(v.title, "High Memory Throughput") << k.name;
    EXPECT_TRUE(starts_with(ncu_text, "Memory is more heavily utilized than Compute")) << ncu_text;
  }
}

TEST(Roofline, TwoKernelsOfACallAreSummedOverTheirTotalTime) {
  auto kernels = fixture_kernels();
  ASSERT_EQ(kernels.size(), 2u);
  RooflineResult r = classify({kernels, h200(), std::nullopt, 0});
  double bytes = 0, seconds = 0;
  for (const auto& k : kernels) {
    bytes += k.get_or(kDramRead, 0) + k.get_or(kDramWrite, 0);
    seconds += k.get_or(kDuration, 0) * 1e-9;
  }
  EXPECT_EQ(r.kernel_count, 2);
  EXPECT_NEAR(r.kernel_seconds, seconds, 1e-12);
  EXPECT_EQ(r.cls, BottleneckClass::kMemoryBound);
  EXPECT_NEAR(roof(r, "DRAM").achieved, bytes / seconds, 1);
}

// A bf16 8192^3 GEMM on HGMMA: tensor ops at 75% of the measured 790 TFLOP/s, while ncu's SM%
// (45%) and Mem% (35%) both sit under 60: ncu says "Latency Issue".
KernelMetrics bf16_gemm(double sm_pct, double mem_pct) {
  KernelMetrics k;
  k.name = "gemm_bf16_hgmma";
  k.grid = {132, 1, 1};
  double flop = 2.0 * 8192 * 8192 * 8192;
  k.values[kBf16] = flop;
  k.values[kDuration] = flop / (0.75 * 790e12) * 1e9;
  k.values[kDramRead] = 1.0e9;
  k.values[kDramWrite] = 0.134e9;
  k.values[kFfma] = 8192.0 * 8192;  // the epilogue's alpha * acc
  k.values[kSmPct] = sm_pct;
  k.values[kMemPct] = mem_pct;
  k.values[kWaves] = 1;
  return k;
}

TEST(Roofline, TensorGemmIsComputeBoundWhereNcusRuleSaysLatency) {
  RooflineResult r = classify({{bf16_gemm(45, 35)}, h200(), std::nullopt, 0});
  EXPECT_EQ(r.cls, BottleneckClass::kComputeBound) << all_evidence(r);
  EXPECT_EQ(r.limiter, "Tensor BF16");
  EXPECT_NEAR(r.sol_fraction, 0.75, 1e-6);
  EXPECT_NEAR(r.headroom, 1 / 0.75, 1e-6);
  EXPECT_EQ(r.ridge_roof, "Tensor BF16");
  EXPECT_NEAR(r.ridge_intensity, 790e12 / 4.3e12, 1e-9);
  EXPECT_GT(r.arithmetic_intensity, r.ridge_intensity);
  EXPECT_EQ(r.ncu_rule.verdict, "latency");
  EXPECT_FALSE(r.agrees_with_ncu);
  EXPECT_NE(r.disagreement.find("ncu's SM% of 45% ignores that the tensor cores ran at 75% of their BF16 peak"),
            std::string::npos)
      << r.disagreement;
  EXPECT_TRUE(any_evidence(r, "TFLOP/s = 75% of the calibrated 790 TFLOP/s")) << all_evidence(r);

  // Where ncu's SM% is high it says "compute" too, and both agree.
  RooflineResult agree = classify({{bf16_gemm(72, 35)}, h200(), std::nullopt, 0});
  EXPECT_EQ(agree.cls, BottleneckClass::kComputeBound);
  EXPECT_EQ(agree.ncu_rule.verdict, "compute");
  EXPECT_TRUE(agree.agrees_with_ncu);
}

// A call of `n` kernels of `kernel_us` each, `gap_us` apart, one stream.
profile::TraceCall trace_of(int n, double kernel_us, double gap_us) {
  profile::TraceCall call;
  uint64_t t = 1'000'000;
  for (int i = 0; i < n; ++i) {
    profile::TraceKernel k;
    k.name = "tiny";
    k.stream = 7;
    k.start_ns = t;
    k.end_ns = t + static_cast<uint64_t>(kernel_us * 1e3);
    t = k.end_ns + static_cast<uint64_t>(gap_us * 1e3);
    call.kernels.push_back(k);
  }
  call.launch_api_calls = n;
  call.span_s = (n * kernel_us + (n - 1) * gap_us) * 1e-6;
  call.busy_s = n * kernel_us * 1e-6;
  call.gaps_s = call.span_s - call.busy_s;
  call.streams = 1;
  return call;
}

// What ncu sees of one of those kernels: a small grid, low SM% and Mem%.
std::vector<KernelMetrics> tiny_kernels(int n, double kernel_us) {
  std::vector<KernelMetrics> out;
  for (int i = 0; i < n; ++i) {
    KernelMetrics k;
    k.name = "tiny";
    k.launch_index = i;
    k.grid = {32, 1, 1};
    k.values[kDuration] = kernel_us * 1e3;
    k.values[kSmPct] = 8;
    k.values[kMemPct] = 14;
    k.values[kWaves] = 0.24;
    k.values[kDramRead] = 1 << 20;
    k.values[kDramWrite] = 1 << 20;
    out.push_back(k);
  }
  return out;
}

TEST(Roofline, FortyShortLaunchesWithGapsAreLaunchBoundWhereNcuSaysSmallGrid) {
  // 40 x 3 us kernels 5 us apart: span 315 us, busy 120 us; the timed call takes 330 us.
  RooflineResult r = classify({tiny_kernels(40, 3), h200(), trace_of(40, 3, 5), 330e-6});
  EXPECT_EQ(r.cls, BottleneckClass::kLaunchBound) << all_evidence(r);
  EXPECT_EQ(r.limiter, "launch overhead");
  EXPECT_NEAR(r.headroom, 330.0 / 120.0, 1e-6);
  EXPECT_NEAR(r.sol_fraction, 120.0 / 330.0, 1e-6);
  EXPECT_NEAR(r.idle_fraction, 1 - 120.0 / 330.0, 1e-6);
  EXPECT_EQ(r.kernel_count, 40);
  EXPECT_NEAR(r.median_kernel_seconds, 3e-6, 1e-12);
  EXPECT_EQ(r.ncu_rule.verdict, "small-grid");
  EXPECT_EQ(r.ncu_rule.as_class, BottleneckClass::kLatencyBound);
  EXPECT_FALSE(r.agrees_with_ncu);
  EXPECT_NE(r.disagreement.find("ncu sees each kernel alone"), std::string::npos) << r.disagreement;
  EXPECT_NE(r.disagreement.find("idle 64% of the 330 us call between 40 launches"), std::string::npos)
      << r.disagreement;
  EXPECT_TRUE(any_evidence(r, "idle 62% of the traced call")) << all_evidence(r);

  // Without the call time, the trace's own span decides: idle 195 of 315 us.
  RooflineResult trace_only = classify({tiny_kernels(40, 3), h200(), trace_of(40, 3, 5), 0});
  EXPECT_EQ(trace_only.cls, BottleneckClass::kLaunchBound);
  EXPECT_NEAR(trace_only.headroom, 315.0 / 120.0, 1e-6);
  EXPECT_NEAR(trace_only.idle_fraction, 195.0 / 315.0, 1e-6);

  // A timed call (graph replay) with the device busy most of it is not launch-bound, whatever
  // the traced stream launches showed; the evidence still reports the traced gaps.
  RooflineResult graphed = classify({tiny_kernels(40, 3), h200(), trace_of(40, 3, 5), 150e-6});
  EXPECT_NE(graphed.cls, BottleneckClass::kLaunchBound);
  EXPECT_TRUE(any_evidence(graphed, "the traced call was idle 62% between 40 launches, but the timed call only 20%"))
      << all_evidence(graphed);

  // Without the trace, the event time against the kernels' own time says the same.
  RooflineResult untraced = classify({tiny_kernels(40, 3), h200(), std::nullopt, 330e-6});
  EXPECT_EQ(untraced.cls, BottleneckClass::kLaunchBound);
  EXPECT_NEAR(untraced.headroom, 330.0 / 120.0, 1e-6);
  EXPECT_NE(untraced.disagreement.find("event time"), std::string::npos) << untraced.disagreement;

  // Without launch__waves_per_multiprocessor ncu has no small-grid check: "latency"; with the SM
  // count, a 32-block grid on 132 SMs still cannot fill one wave.
  auto no_waves = tiny_kernels(1, 3);
  no_waves[0].values.erase(kWaves);
  EXPECT_EQ(ncu_sol_bottleneck(no_waves[0]).verdict, "latency");
  EXPECT_EQ(ncu_sol_bottleneck(no_waves[0], 132).verdict, "small-grid");
}

TEST(Roofline, IdleGapsBetweenLongKernelsAreNotLaunchBound) {
  // 4 x 50 us kernels with 100 us gaps (the host syncs between them): idle, but no launch is short.
  auto kernels = tiny_kernels(4, 50);
  RooflineResult r = classify({kernels, h200(), trace_of(4, 50, 100), 0});
  EXPECT_GT(r.idle_fraction, kLaunchIdleFraction);
  EXPECT_NE(r.cls, BottleneckClass::kLaunchBound) << all_evidence(r);
  EXPECT_TRUE(any_evidence(r, "long enough to hide launches")) << all_evidence(r);
}

TEST(Roofline, LowOccupancyDependentChainIsLatencyBound) {
  // 132 blocks of 32 threads, each a chain of dependent FFMAs: FP32 at 15% of 67 TFLOP/s,
  // SM 22% and Mem 8% (ncu: "Latency Issue"), 3% occupancy, 0.12 issues per cycle.
  KernelMetrics k;
  k.name = "chain(float*, int)";
  k.grid = {132, 1, 1};
  k.block = {32, 1, 1};
  double seconds = 500e-6;
  k.values[kDuration] = seconds * 1e9;
  k.values[kFfma] = 0.15 * 67e12 * seconds / 2;
  k.values[kDramRead] = 5e6;
  k.values[kDramWrite] = 5e6;
  k.values[kSmPct] = 22;
  k.values[kMemPct] = 8;
  k.values[kWaves] = 1;
  k.values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 3;
  k.values["smsp__issue_active.avg.per_cycle_active"] = 0.12;
  RooflineResult r = classify({{k}, h200(), std::nullopt, 0});
  EXPECT_EQ(r.cls, BottleneckClass::kLatencyBound) << all_evidence(r);
  EXPECT_EQ(r.limiter, "FP32");
  EXPECT_NEAR(r.sol_fraction, 0.15, 1e-9);
  EXPECT_NEAR(r.headroom, 1 / 0.15, 1e-9);
  EXPECT_EQ(r.ncu_rule.verdict, "latency");
  EXPECT_TRUE(r.agrees_with_ncu);
  EXPECT_TRUE(any_evidence(r, "achieved occupancy 3% of the warp slots (low")) << all_evidence(r);
  EXPECT_TRUE(any_evidence(r, "0.12 instructions per active cycle (below 0.6")) << all_evidence(r);
  EXPECT_TRUE(any_evidence(r, "the highest is FP32 at 15%")) << all_evidence(r);
}

TEST(Roofline, NcusMemoryPercentDecidesWhenNoRoofWasMeasured) {
  // Shared-memory-bound kernel with only ncu's two percentages: Mem% 85 (L1), SM% 40.
  KernelMetrics k;
  k.values[kDuration] = 100e3;
  k.values[kSmPct] = 40;
  k.values[kMemPct] = 85;
  RooflineResult r = classify({{k}, h200(), std::nullopt, 0});
  EXPECT_TRUE(r.roofs.empty());
  EXPECT_EQ(r.cls, BottleneckClass::kMemoryBound) << all_evidence(r);
  EXPECT_EQ(r.limiter, "memory (ncu Mem%)");
  EXPECT_NEAR(r.sol_fraction, 0.85, 1e-9);
  EXPECT_EQ(r.ncu_rule.verdict, "high-throughput");
  EXPECT_TRUE(r.agrees_with_ncu);
  EXPECT_TRUE(any_evidence(r, "not collected: DRAM bytes")) << all_evidence(r);
}

TEST(Roofline, MissingMetricsStillGiveAClassWithReducedEvidence) {
  KernelMetrics k;
  k.name = "k";
  k.values[kDuration] = 20e3;
  k.values[kSmPct] = 30;  // no Mem%: ncu's rule cannot run
  RooflineResult r = classify({{k}, h200(), std::nullopt, 0});
  EXPECT_EQ(r.cls, BottleneckClass::kLatencyBound);
  EXPECT_TRUE(r.roofs.empty());
  EXPECT_EQ(r.headroom, 0);  // unknown
  EXPECT_TRUE(r.ncu_rule.verdict.empty());
  EXPECT_FALSE(r.agrees_with_ncu);
  EXPECT_NE(r.disagreement.find("not collected"), std::string::npos) << r.disagreement;
  EXPECT_TRUE(any_evidence(r, "not collected: DRAM bytes, L2 bytes, FP32 instruction counts")) << all_evidence(r);
  EXPECT_TRUE(any_evidence(r, "tensor ops (every path)")) << all_evidence(r);

  RooflineResult nothing = classify({});
  EXPECT_EQ(nothing.cls, BottleneckClass::kLatencyBound);
  EXPECT_EQ(nothing.limiter, "");
  EXPECT_EQ(nothing.headroom, 0);
  EXPECT_EQ(nothing.kernel_count, 0);
  EXPECT_TRUE(any_evidence(nothing, "nothing to classify")) << all_evidence(nothing);
}

void expect_finite(const nlohmann::json& j, const std::string& where) {
  if (j.is_number()) {
    EXPECT_TRUE(std::isfinite(j.get<double>())) << where;
  }
  if (j.is_structured())
    for (auto it = j.begin(); it != j.end(); ++it) expect_finite(*it, where + "/" + (j.is_object() ? it.key() : "[]"));
}

TEST(Roofline, ZeroDurationGivesNoRatesAndNoDivisionByZero) {
  KernelMetrics k = bf16_gemm(45, 35);
  k.values[kDuration] = 0;
  RooflineInput in{{k}, h200(), std::nullopt, 0};
  in.ceilings.fp32_flops = 0;  // and a zero ceiling on top
  RooflineResult r = classify(in);
  EXPECT_TRUE(r.roofs.empty());
  EXPECT_EQ(r.kernel_seconds, 0);
  EXPECT_TRUE(std::isfinite(r.sol_fraction) && std::isfinite(r.headroom) && std::isfinite(r.arithmetic_intensity));
  EXPECT_TRUE(any_evidence(r, "no kernel duration")) << all_evidence(r);
  expect_finite(to_json(r), "");
  // Also with the trace and the call time zero.
  profile::TraceCall empty_call;
  RooflineResult t = classify({{k}, h200(), empty_call, 0});
  expect_finite(to_json(t), "");
  EXPECT_NE(t.cls, BottleneckClass::kLaunchBound);
}

TEST(Roofline, SparseTensorWorkAboveTheDenseCeilingIsFlagged) {
  KernelMetrics k = bf16_gemm(85, 30);
  k.values[kBf16] *= 1.6;  // 2:4 sparsity counts more ops than the dense path can do: 120%
  RooflineResult r = classify({{k}, h200(), std::nullopt, 0});
  EXPECT_EQ(r.cls, BottleneckClass::kComputeBound);
  EXPECT_GT(r.sol_fraction, 1);
  EXPECT_TRUE(any_evidence(r, "Tensor BF16 is above its ceiling")) << all_evidence(r);
}

TEST(NcuSolBottleneck, ReproducesTheRuleAtItsThresholds) {
  struct Case {
    double sm, mem;
    std::optional<double> waves;
    const char* verdict;
    std::optional<BottleneckClass> cls;
  };
  const Case cases[] = {
      {59.9, 59.9, 0.5, "small-grid", BottleneckClass::kLatencyBound},
      {59.9, 59.9, 1.0, "latency", BottleneckClass::kLatencyBound},
      {10, 20, std::nullopt, "latency", BottleneckClass::kLatencyBound},
      {60, 50, 0.5, "compute", BottleneckClass::kComputeBound},  // not both < 60; 10 points apart
      {50, 60, 8, "memory", BottleneckClass::kMemoryBound},
      {70, 61, 8, "balanced", std::nullopt},
      {79.9, 70, 8, "balanced", std::nullopt},
      {80, 10, 8, "high-throughput", BottleneckClass::kComputeBound},
      {50, 85, 0.5, "high-throughput", BottleneckClass::kMemoryBound},
      {90, 90, 8, "high-throughput", BottleneckClass::kComputeBound},  // tie: SM%
  };
  for (const auto& c : cases) {
    KernelMetrics k;
    k.values[kSmPct] = c.sm;
    k.values[kMemPct] = c.mem;
    if (c.waves) k.values[kWaves] = *c.waves;
    NcuRuleVerdict v = ncu_sol_bottleneck(k);
    EXPECT_EQ(v.verdict, c.verdict) << c.sm << " " << c.mem;
    EXPECT_EQ(v.as_class, c.cls) << c.sm << " " << c.mem;
    EXPECT_EQ(v.sm_pct, c.sm);
    EXPECT_EQ(v.mem_pct, c.mem);
  }
}

TEST(Roofline, JsonCarriesEveryFieldAndTheClassAsItsString) {
  auto kernels = fixture_kernels();
  ASSERT_EQ(kernels.size(), 2u);
  RooflineResult r = classify({{kernels[0]}, h200(), std::nullopt, 0});
  nlohmann::json j = to_json(r);
  for (const char* key : {"class", "limiter", "sol_fraction", "headroom", "arithmetic_intensity", "ridge_intensity",
                          "ridge_roof", "kernel_seconds", "kernel_count", "median_kernel_seconds", "idle_fraction",
                          "roofs", "evidence", "ncu_rule", "agrees_with_ncu", "disagreement"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["class"], "memory-bound");
  EXPECT_EQ(bottleneck_class_from_string(j["class"].get<std::string>()), r.cls);
  ASSERT_EQ(j["roofs"].size(), r.roofs.size());
  EXPECT_EQ(j["roofs"][0]["name"], "DRAM");
  EXPECT_EQ(j["roofs"][0]["memory"], true);
  EXPECT_DOUBLE_EQ(j["roofs"][0]["fraction"].get<double>(), r.sol_fraction);
  EXPECT_EQ(j["ncu_rule"]["verdict"], "memory");
  EXPECT_EQ(j["ncu_rule"]["class"], "memory-bound");
  EXPECT_EQ(j["ncu_rule"]["waves"].get<double>(), kernels[0].get_or(kWaves, -1));
  EXPECT_EQ(j["evidence"].size(), r.evidence.size());
  expect_finite(j, "");

  RooflineResult balanced;
  balanced.ncu_rule.verdict = "balanced";
  EXPECT_TRUE(to_json(balanced)["ncu_rule"]["class"].is_null());
}

TEST(Roofline, ClassNamesRoundTrip) {
  for (auto c : {BottleneckClass::kMemoryBound, BottleneckClass::kComputeBound, BottleneckClass::kLatencyBound,
                 BottleneckClass::kLaunchBound})
    EXPECT_EQ(bottleneck_class_from_string(to_string(c)), c);
  EXPECT_STREQ(to_string(BottleneckClass::kLaunchBound), "launch-bound");
  EXPECT_EQ(bottleneck_class_from_string("memory"), std::nullopt);
  EXPECT_EQ(bottleneck_class_from_string(""), std::nullopt);
}

}  // namespace
}  // namespace kp::analysis
