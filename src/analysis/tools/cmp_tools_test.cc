// Tests of the compute and system tools: tensor_cores_unused, hopper_path_unused,
// special_functions, accidental_fp64, fp32_unfused, atomics_contention, launch_overhead,
// host_device_copies. Evidence is built by hand with numbers in the range of the H200 captures
// (bench/results/h200-2026-12-03-profile/run2/).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {

std::unique_ptr<Tool> make_accidental_fp64();
std::unique_ptr<Tool> make_atomics_contention();
std::unique_ptr<Tool> make_fp32_unfused();
std::unique_ptr<Tool> make_hopper_path_unused();
std::unique_ptr<Tool> make_host_device_copies();
std::unique_ptr<Tool> make_launch_overhead();
std::unique_ptr<Tool> make_special_functions();
std::unique_ptr<Tool> make_tensor_cores_unused();

namespace {

using profile::SassClass;

profile::Ceilings h200() {
  profile::Ceilings c;
  c.gpu = "NVIDIA H200";
  c.cc_major = 9;
  c.sm_count = 132;
  c.dram_bytes_per_s = 4.27e12;
  c.l2_bytes_per_s = 8.45e12;
  c.fp32_flops = 65.2e12;
  c.fp64_flops = 30.7e12;
  c.fp16_flops = 131.6e12;
  c.tensor_fp16_flops = 767e12;
  c.tensor_bf16_flops = 802e12;
  c.tensor_tf32_flops = 412e12;
  c.tensor_int8_ops = 1.49e15;
  return c;
}

profile::KernelMetrics kernel(const std::string& name, double ns) {
  profile::KernelMetrics k;
  k.name = name;
  k.values["gpu__time_duration.sum"] = ns;
  for (const char* op : {"fadd", "fmul", "ffma", "dadd", "dmul", "dfma", "hadd", "hmul", "hfma"})
    k.values[std::string("smsp__sass_thread_inst_executed_op_") + op + "_pred_on.sum"] = 0;
  for (const char* t : {"fp16", "bf16_dst_fp32", "tf32_dst_fp32", "fp64", "int8", "fp8_sparsity_off"})
    k.values[std::string("sm__ops_path_tensor_src_") + t + ".sum"] = 0;
  return k;
}

void set_op(profile::KernelMetrics& k, const char* op, double v) {
  k.values[std::string("smsp__sass_thread_inst_executed_op_") + op + "_pred_on.sum"] = v;
}

profile::KernelSass sass(const std::string& name, std::map<std::string, int64_t> ops) {
  profile::KernelSass s;
  s.name = name;
  s.mangled_name = "_Z" + name;
  s.sass.arch = "sm_90a";
  const auto& arch = profile::sass_arch("sm_90a");
  for (const auto& [op, n] : ops) {
    s.sass.by_opcode[op] += n;
    s.sass.by_class[static_cast<int>(arch.classify(op))] += n;
    s.sass.instructions += n;
    if (op == "LDG") s.sass.global_load_bits[32] += n;
    if (op == "STG") s.sass.global_store_bits[32] += n;
    if (op == "FFMA") s.sass.fp32_fma += n;
    if (op == "FADD") s.sass.fp32_add += n;
    if (op == "FMUL") s.sass.fp32_mul += n;
  }
  return s;
}

Evidence one(profile::KernelMetrics k, std::optional<profile::KernelSass> s, BottleneckClass cls) {
  Evidence e;
  e.ceilings = h200();
  e.device.cc_major = 9;
  e.device.sm_count = 132;
  e.kernels.push_back(std::move(k));
  if (s) e.sass.push_back(std::move(*s));
  RooflineResult r;
  r.cls = cls;
  e.roofline = r;
  return e;
}

void expect_valid(const std::vector<Finding>& fs) {
  for (const auto& f : fs) {
    EXPECT_GE(f.estimated_gain, 1);
    EXPECT_FALSE(f.evidence.empty());
    EXPECT_FALSE(f.guidance.empty());
    for (const auto& a : f.actions) EXPECT_TRUE(is_known_action(a)) << a;
  }
}

// ---- tensor_cores_unused -------------------------------------------------------------------

// The naive 4096^3 FP32 GEMM of profile_gemm_fp32.json.
Evidence naive_gemm() {
  auto k = kernel("gemm_seed", 16.89e6);
  set_op(k, "ffma", 6.87e10);
  k.values["dram__bytes_read.sum"] = 1.69e10;
  k.values["dram__bytes_write.sum"] = 9.1e7;
  Evidence e = one(k, sass("gemm_seed", {{"FFMA", 16}, {"LDS", 20}, {"LDG", 2}, {"STG", 1}}),
                   BottleneckClass::kMemoryBound);
  e.ideal_flops = 2.0 * 4096 * 4096 * 4096;
  e.ideal_bytes = 3.0 * 4096 * 4096 * 4;
  return e;
}

TEST(CmpTools, TensorCoresUnusedFiresOnFfmaGemm) {
  auto fs = make_tensor_cores_unused()->run(naive_gemm());
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 16.89e-3 / (1.374e11 / 412e12), 2);  // about 51x
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"use_tensor_cores"});
  EXPECT_NE(fs[0].guidance.find("TF32"), std::string::npos);
}

TEST(CmpTools, TensorCoresUnusedQuietWithMma) {
  Evidence e = naive_gemm();
  e.kernels[0].values["sm__ops_path_tensor_src_tf32_dst_fp32.sum"] = 1.37e11;
  e.kernels[0].values["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] = 1e7;
  e.sass[0].sass.tensor_shapes["HMMA.1688.F32.TF32"] = 8;
  EXPECT_TRUE(make_tensor_cores_unused()->run(e).empty());
}

TEST(CmpTools, TensorCoresUnusedQuietOnElementwise) {
  // GELU: 1.29 GFLOP on 537 MB ideal: 2.4 FLOP/B, below the 15 FLOP/B ridge.
  auto k = kernel("gelu_seed", 211904);
  set_op(k, "ffma", 4.7e8);
  set_op(k, "fmul", 2.7e8);
  set_op(k, "fadd", 7.8e7);
  Evidence e = one(k, sass("gelu_seed", {{"FFMA", 7}, {"FMUL", 4}, {"MUFU", 1}}), BottleneckClass::kLatencyBound);
  e.ideal_flops = 1.29e9;
  e.ideal_bytes = 5.37e8;
  EXPECT_TRUE(make_tensor_cores_unused()->run(e).empty());
}

// Flaw 09's polynomial on the H200: 1.02e10 FFMA (3.2e8 warp FFMA), one load per element,
// ideal intensity far above the ridge: a thread keeps its operand, so it is no matrix product.
// The GEMM re-reads its operands (2 warp loads per warp FFMA) and still fires.
TEST(CmpTools, TensorCoresUnusedQuietWhenOperandsAreNotReread) {
  Evidence poly = naive_gemm();
  poly.kernels[0].values["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 3.3e5;
  poly.kernels[0].values["smsp__sass_inst_executed_op_shared_ld.sum"] = 0;
  EXPECT_TRUE(make_tensor_cores_unused()->run(poly).empty());

  Evidence gemm = naive_gemm();
  gemm.kernels[0].values["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 2 * 6.87e10 / 32;
  gemm.kernels[0].values["smsp__sass_inst_executed_op_shared_ld.sum"] = 0;
  auto fs = make_tensor_cores_unused()->run(gemm);
  ASSERT_EQ(fs.size(), 1u);
  bool shown = false;
  for (const auto& ev : fs[0].evidence) shown = shown || ev.metric == "warp loads per warp FMA";
  EXPECT_TRUE(shown);
}

// Flaw 07's fp32 twin on the H200: a 64-step recurrence per element, 2.11e9 FFMA and 1.05e6
// warp load requests, 1/63 loads per warp FMA (above the 1/64 bar), but its loads carry the
// 134 MB it reads from DRAM once: elementwise. The naive GEMM's loads re-read its operands.
TEST(CmpTools, TensorCoresUnusedQuietWhenEachInputIsLoadedOnce) {
  Evidence rec = naive_gemm();
  auto& v = rec.kernels[0].values;
  v["gpu__time_duration.sum"] = 115200;
  set_op(rec.kernels[0], "ffma", 2.11e9);
  v["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 1.05e6;
  v["smsp__sass_inst_executed_op_shared_ld.sum"] = 0;
  v["dram__bytes_read.sum"] = 1.34e8;
  v["dram__bytes_write.sum"] = 1.12e8;
  rec.ideal_flops = 4.29e9;
  rec.ideal_bytes = 2.68e8;
  EXPECT_TRUE(make_tensor_cores_unused()->run(rec).empty());
  v.erase("dram__bytes_read.sum");  // unknown: the load-per-FMA bar alone decides, and passes
  EXPECT_EQ(make_tensor_cores_unused()->run(rec).size(), 1u);

  Evidence gemm = naive_gemm();
  gemm.kernels[0].values["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] = 2 * 6.87e10 / 32;
  gemm.kernels[0].values["smsp__sass_inst_executed_op_shared_ld.sum"] = 0;
  auto fs = make_tensor_cores_unused()->run(gemm);
  ASSERT_EQ(fs.size(), 1u);
  bool shown = false;
  for (const auto& ev : fs[0].evidence)
    shown = shown || (ev.metric == "loaded bytes (128 B a warp request) per DRAM byte read" && ev.value >= 4);
  EXPECT_TRUE(shown);
}

TEST(CmpTools, TensorCoresUnusedNeedsSass) {
  Evidence e = naive_gemm();
  e.sass.clear();
  EXPECT_TRUE(make_tensor_cores_unused()->run(e).empty());
}

// ---- hopper_path_unused --------------------------------------------------------------------

Evidence hmma_gemm() {
  auto k = kernel("gemm_mma", 1.0e6);
  k.values["sm__ops_path_tensor_src_bf16_dst_fp32.sum"] = 4.0e14 * 1e-3;  // 400 TFLOP/s for 1 ms
  k.values["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 85;
  return one(k, sass("gemm_mma", {{"HMMA", 64}, {"LDSM", 32}, {"LDGSTS", 8}}), BottleneckClass::kComputeBound);
}

TEST(CmpTools, HopperPathUnusedFiresOnMmaSync) {
  auto fs = make_hopper_path_unused()->run(hmma_gemm());
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 0.8 * 802 / 400, 0.01);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"use_wgmma_tma"});
}

TEST(CmpTools, HopperPathUnusedQuietOnWgmmaWithTma) {
  Evidence e = hmma_gemm();
  e.sass[0] = sass("gemm_mma", {{"HGMMA", 16}, {"WARPGROUP", 4}, {"UTMALDG", 2}, {"SYNCS", 6}});
  EXPECT_TRUE(make_hopper_path_unused()->run(e).empty());
}

TEST(CmpTools, HopperPathUnusedFlagsWgmmaWithoutTma) {
  Evidence e = hmma_gemm();
  e.sass[0] = sass("gemm_mma", {{"HGMMA", 16}, {"WARPGROUP", 4}, {"LDGSTS", 8}});
  auto fs = make_hopper_path_unused()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NE(fs[0].title.find("TMA"), std::string::npos);
}

TEST(CmpTools, HopperPathUnusedQuietOffHopperAndOnAFewMmasInCudaCoreWork) {
  Evidence ampere = hmma_gemm();
  ampere.device.cc_major = 8;
  EXPECT_TRUE(make_hopper_path_unused()->run(ampere).empty());
  // An idle tensor pipe in a kernel whose math is mostly FFMA: the MMAs are not its work.
  Evidence mostly_fp32 = hmma_gemm();
  mostly_fp32.kernels[0].values["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 6;
  mostly_fp32.kernels[0].values["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] = 4.0e11;
  EXPECT_TRUE(make_hopper_path_unused()->run(mostly_fp32).empty());
  // wgmma without TMA and an idle pipe: the loads are not what holds it back.
  Evidence wgmma_idle = mostly_fp32;
  wgmma_idle.kernels[0].values.erase("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
  wgmma_idle.sass[0] = sass("gemm_mma", {{"HGMMA", 16}, {"WARPGROUP", 4}, {"LDGSTS", 8}});
  EXPECT_TRUE(make_hopper_path_unused()->run(wgmma_idle).empty());
}

TEST(CmpTools, HopperPathUnusedFiresOnAStarvedMmaSyncGemm) {
  // The flaw suite's WMMA GEMM on the H200: 17.2 G tensor ops in 475 us (3.7% of the BF16
  // datasheet ceiling), pipe 6.6% busy, little FFMA: TMA-fed wgmma is the fix.
  Evidence e = hmma_gemm();
  e.ceilings.tensor_bf16_flops = 990e12;
  auto& v = e.kernels[0].values;
  v["gpu__time_duration.sum"] = 475008;
  v["sm__ops_path_tensor_src_bf16_dst_fp32.sum"] = 17179869184.0;
  v["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 6.6;
  v["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] = 1.0e6;
  e.roofline->cls = BottleneckClass::kLatencyBound;
  e.roofline->headroom = 27.4;
  auto fs = make_hopper_path_unused()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);  // not compute-bound
  const double fraction = 17179869184.0 / 475008e-9 / 990e12;
  EXPECT_NEAR(fs[0].estimated_gain, std::min(0.8 / fraction, e.roofline->headroom), 0.01);
}

// ---- special_functions ---------------------------------------------------------------------

Evidence mufu_softmax(double xu) {
  auto k = kernel("softmax", 3e5);
  k.values["sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"] = xu;
  k.values["sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"] = 31;
  k.values["sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"] = 12;
  k.values["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = 40;
  auto s = sass("softmax", {{"MUFU", 16}, {"FFMA", 82}, {"FCHK", 5}});
  s.sass.mufu = {{"EX2", 10}, {"RCP", 6}};
  return one(k, s, BottleneckClass::kLatencyBound);
}

TEST(CmpTools, SpecialFunctionsFiresOnBusyXu) {
  auto fs = make_special_functions()->run(mufu_softmax(86));
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 86.0 / 40, 1e-9);
  EXPECT_NE(fs[0].guidance.find("__expf"), std::string::npos);
  EXPECT_NE(fs[0].guidance.find("__fdividef"), std::string::npos);
}

TEST(CmpTools, SpecialFunctionsQuietWhenXuModerateOrMemoryBound) {
  EXPECT_TRUE(make_special_functions()->run(mufu_softmax(25)).empty());
  Evidence mem = mufu_softmax(86);
  mem.roofline->cls = BottleneckClass::kMemoryBound;
  EXPECT_TRUE(make_special_functions()->run(mem).empty());
  Evidence no_metric = mufu_softmax(86);
  no_metric.kernels[0].values.erase("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active");
  EXPECT_TRUE(make_special_functions()->run(no_metric).empty());
}

// ---- accidental_fp64 -----------------------------------------------------------------------

Evidence promoted_gelu(double dmul) {
  auto k = kernel("gelu", 4e5);
  set_op(k, "ffma", 2.7e8);
  set_op(k, "fmul", 1.3e8);
  set_op(k, "dmul", dmul);
  set_op(k, "dfma", dmul);
  return one(k, sass("gelu", {{"FFMA", 7}, {"DMUL", 2}, {"DFMA", 2}, {"F2F", 2}}), BottleneckClass::kLatencyBound);
}

TEST(CmpTools, AccidentalFp64FiresOnPromotion) {
  auto fs = make_accidental_fp64()->run(promoted_gelu(1.3e8));
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  const double f32 = 4.0e8, f64 = 2.6e8;
  EXPECT_NEAR(fs[0].estimated_gain, (f32 + 2 * f64) / (f32 + f64), 1e-9);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"avoid_fp64"});
}

TEST(CmpTools, AccidentalFp64QuietOnFloatAndOnDgemm) {
  EXPECT_TRUE(make_accidental_fp64()->run(promoted_gelu(0)).empty());
  EXPECT_TRUE(make_accidental_fp64()->run(promoted_gelu(1e6)).empty());  // 0.5%: trivial
  // A DGEMM: FP64 on purpose, no conversions.
  auto k = kernel("dgemm", 1e6);
  set_op(k, "dfma", 1e10);
  set_op(k, "fadd", 1e3);
  Evidence e = one(k, sass("dgemm", {{"DFMA", 64}}), BottleneckClass::kComputeBound);
  EXPECT_TRUE(make_accidental_fp64()->run(e).empty());
}

// ---- fp32_unfused --------------------------------------------------------------------------

Evidence unfused(double fmul, double fadd, double ffma, double ns) {
  auto k = kernel("poly", ns);
  set_op(k, "fmul", fmul);
  set_op(k, "fadd", fadd);
  set_op(k, "ffma", ffma);
  return one(k, sass("poly", {{"FMUL", 8}, {"FADD", 8}, {"FFMA", 4}}), BottleneckClass::kComputeBound);
}

TEST(CmpTools, Fp32UnfusedFiresOnSeparateMulAdd) {
  // 1e9 FMUL + 1e9 FADD + 0.5e9 FFMA = 3 GFLOP in 65 us: 3e9 / 65e-6 = 46 TFLOP/s = 71% of 65.2.
  auto fs = make_fp32_unfused()->run(unfused(1e9, 1e9, 0.5e9, 65e3));
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NEAR(fs[0].estimated_gain, 2.5 / 1.5, 1e-9);
  EXPECT_TRUE(fs[0].actions.empty());
  EXPECT_NE(fs[0].guidance.find("-fmad=true"), std::string::npos);
}

TEST(CmpTools, Fp32UnfusedQuietWhenFusedOrUnimportantOrAddOnly) {
  EXPECT_TRUE(make_fp32_unfused()->run(unfused(0.05e9, 0.05e9, 1.5e9, 65e3)).empty());  // fused
  EXPECT_TRUE(make_fp32_unfused()->run(unfused(1e9, 1e9, 0.5e9, 65e5)).empty());        // 0.7% of FP32 roof
  EXPECT_TRUE(make_fp32_unfused()->run(unfused(0, 3e9, 0, 65e3)).empty());              // reduction: adds only
}

TEST(CmpTools, Fp32UnfusedQuietWhenPtxasFusedMostOfTheCode) {
  // The special-function flaw: accurate expf keeps exact FMUL/FADD pairs in its range reduction
  // while ptxas fused the rest (67% of the SASS FP32 is FFMA): the pairs are deliberate.
  Evidence e = unfused(1e9, 1e9, 0.5e9, 65e3);
  e.sass[0] = sass("poly", {{"FMUL", 8}, {"FADD", 8}, {"FFMA", 33}});
  EXPECT_TRUE(make_fp32_unfused()->run(e).empty());
}

// ---- atomics_contention --------------------------------------------------------------------

Evidence histogram(double long_sb) {
  auto k = kernel("histogram", 2e5);
  k.values["smsp__average_warp_latency_per_inst_issued.ratio"] = 42;
  k.values["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"] = long_sb;
  k.values["smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"] = 4;
  return one(k, sass("histogram", {{"LDG", 2}, {"ATOMG", 1}, {"IMAD", 6}}), BottleneckClass::kLatencyBound);
}

TEST(CmpTools, AtomicsContentionFiresOnHistogram) {
  auto fs = make_atomics_contention()->run(histogram(25));
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 1 / (1 - 29.0 / 42), 1e-9);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"avoid_atomics"});
}

TEST(CmpTools, AtomicsContentionQuietWithoutStallsOrWithOneAtomicPerBlock) {
  EXPECT_TRUE(make_atomics_contention()->run(histogram(3)).empty());  // 7 / 42 < 0.3
  Evidence reduction = histogram(25);
  reduction.sass[0] = sass("histogram", {{"LDG", 29}, {"LDS", 17}, {"STS", 9}, {"RED", 1}});
  EXPECT_TRUE(make_atomics_contention()->run(reduction).empty());
  Evidence no_stage2 = histogram(25);
  no_stage2.kernels[0].values.erase("smsp__average_warp_latency_per_inst_issued.ratio");
  EXPECT_TRUE(make_atomics_contention()->run(no_stage2).empty());
}

TEST(CmpTools, AtomicsContentionFiresOnSameAddressQueueingWithoutACollectedReason) {
  // The flaw suite's row sum by one atomicAdd (REDG) per element on the H200: 81% of the warps
  // resident, 0.00127 issues per cycle: 10,200 cycles between issues, no warp latency metric.
  auto k = kernel("row_atomic", 7.17e6);
  k.values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 81;
  k.values["smsp__issue_active.avg.per_cycle_active"] = 0.00127;
  k.values["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"] = 2364;
  k.values["smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"] = 19;
  Evidence e = one(k, sass("row_atomic", {{"LDG", 1}, {"REDG", 1}}), BottleneckClass::kLatencyBound);
  auto fs = make_atomics_contention()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  const double cpi = 0.81 * 16 / 0.00127;
  EXPECT_NEAR(fs[0].estimated_gain, cpi / 1000, 1e-6);
  EXPECT_NE(fs[0].title.find("queue"), std::string::npos);
  // Its warp-reduced twin: one REDG per warp, 81 cycles between issues, long_scoreboard on the
  // loads. RED returns nothing, so those stalls are not the atomic's: quiet.
  auto& v = e.kernels[0].values;
  v["sm__warps_active.avg.pct_of_peak_sustained_active"] = 73;
  v["smsp__issue_active.avg.per_cycle_active"] = 0.143;
  v["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"] = 71;
  v["smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"] = 0;
  EXPECT_TRUE(make_atomics_contention()->run(e).empty());
  // The same stalls behind a returning ATOMG are the atomic's.
  e.sass[0] = sass("row_atomic", {{"LDG", 1}, {"ATOMG", 1}});
  EXPECT_EQ(make_atomics_contention()->run(e).size(), 1u);
}

TEST(CmpTools, SpecialFunctionsInAnIssueBoundKernel) {
  // The special-function flaw: 8 EX2 per element, XU 45%, issue 0.86 (every slot in use).
  Evidence e = mufu_softmax(44.8);
  e.kernels[0].values["smsp__issue_active.avg.per_cycle_active"] = 0.855;
  auto fs = make_special_functions()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NEAR(fs[0].estimated_gain, 1.448, 1e-9);
  EXPECT_NE(fs[0].title.find("issue-bound"), std::string::npos);
  // Not issue-bound: XU at 45% is not the limit.
  e.kernels[0].values["smsp__issue_active.avg.per_cycle_active"] = 0.4;
  EXPECT_TRUE(make_special_functions()->run(e).empty());
}

// ---- launch_overhead -----------------------------------------------------------------------

Evidence many_kernels(int n, uint64_t duration_ns, uint64_t gap_ns, double call_seconds) {
  Evidence e;
  e.ceilings = h200();
  profile::TraceCall t;
  uint64_t at = 1000;
  for (int i = 0; i < n; ++i) {
    profile::TraceKernel k;
    k.name = "step" + std::to_string(i);
    k.start_ns = at;
    k.end_ns = at + duration_ns;
    at = k.end_ns + gap_ns;
    t.kernels.push_back(k);
  }
  t.launch_api_calls = static_cast<uint64_t>(n);
  t.busy_s = n * duration_ns * 1e-9;
  t.span_s = (at - gap_ns - 1000) * 1e-9;
  t.gaps_s = t.span_s - t.busy_s;
  e.trace = t;
  e.call_seconds = call_seconds;
  RooflineResult r;
  r.cls = BottleneckClass::kLaunchBound;
  e.roofline = r;
  return e;
}

TEST(CmpTools, LaunchOverheadFiresOnShortKernelsWithGaps) {
  auto fs = make_launch_overhead()->run(many_kernels(40, 3000, 5000, 330e-6));
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 330.0 / 120, 1e-6);
  EXPECT_EQ(fs[0].actions, (std::vector<std::string>{"fewer_launches", "fuse"}));
}

TEST(CmpTools, LaunchOverheadQuietOnLongKernelsOrNoGapsOrNoTrace) {
  Evidence e = many_kernels(4, 500000, 5000, 0);  // 500 us kernels
  e.roofline->cls = BottleneckClass::kMemoryBound;
  EXPECT_TRUE(make_launch_overhead()->run(e).empty());
  EXPECT_TRUE(make_launch_overhead()->run(many_kernels(8, 3000, 100, 0)).empty());  // 3% idle, 8 launches
  Evidence none = many_kernels(40, 3000, 5000, 330e-6);
  none.trace.reset();
  EXPECT_TRUE(make_launch_overhead()->run(none).empty());
}

// ---- host_device_copies --------------------------------------------------------------------

Evidence with_copy(const char* direction, uint64_t bytes, uint64_t ns, double call_seconds) {
  Evidence e = many_kernels(1, 200000, 0, call_seconds);
  e.roofline->cls = BottleneckClass::kMemoryBound;
  profile::TraceCopy c;
  c.kind = direction[0] ? "memcpy" : "memset";
  c.direction = direction;
  c.bytes = bytes;
  c.start_ns = 0;
  c.end_ns = ns;
  e.trace->copies.push_back(c);
  return e;
}

TEST(CmpTools, HostDeviceCopiesFiresOnHtoD) {
  auto fs = make_host_device_copies()->run(with_copy("HtoD", 64ull << 20, 1000000, 1.2e-3));
  ASSERT_EQ(fs.size(), 1u);
  expect_valid(fs);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 6, 1e-6);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"remove_copies"});
}

TEST(CmpTools, HostDeviceCopiesFlagsLargeDtoDOnly) {
  auto fs = make_host_device_copies()->run(with_copy("DtoD", 256ull << 20, 150000, 0.4e-3));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NE(fs[0].guidance.find("in place"), std::string::npos);
  EXPECT_TRUE(make_host_device_copies()->run(with_copy("DtoD", 4096, 2000, 0.4e-3)).empty());
}

TEST(CmpTools, HostDeviceCopiesQuietOnMemsetAndWithoutCopies) {
  EXPECT_TRUE(make_host_device_copies()->run(with_copy("", 4096, 2000, 0.3e-3)).empty());
  EXPECT_TRUE(make_host_device_copies()->run(many_kernels(1, 200000, 0, 0.2e-3)).empty());
}

}  // namespace
}  // namespace kp::analysis
