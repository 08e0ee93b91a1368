// Tests of the memory-side tools: roofline_headroom, uncoalesced_access, narrow_loads,
// bank_conflicts, dram_over_ideal, low_l2_hit_rate, register_spills. Each builds Evidence by hand
// from the H200 numbers of bench/results/h200-2026-12-03-profile/run2 (or a planted flaw of the
// same shape) and checks that the tool fires on the flaw and stays quiet on the fixed twin and on
// an unrelated flaw.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/tool.h"

namespace kp::analysis {

std::unique_ptr<Tool> make_roofline_headroom();
std::unique_ptr<Tool> make_uncoalesced_access();
std::unique_ptr<Tool> make_narrow_loads();
std::unique_ptr<Tool> make_bank_conflicts();
std::unique_ptr<Tool> make_dram_over_ideal();
std::unique_ptr<Tool> make_low_l2_hit_rate();
std::unique_ptr<Tool> make_host_device_copies();
std::unique_ptr<Tool> make_register_spills();

namespace {

using profile::KernelMetrics;
using profile::KernelSass;

profile::Ceilings h200() {
  profile::Ceilings c;
  c.gpu = "NVIDIA H200";
  c.sm_count = 132;
  c.dram_bytes_per_s = 4.27e12;
  c.l2_bytes_per_s = 8.45e12;
  c.fp32_flops = 65.2e12;
  return c;
}

RooflineResult roofline(BottleneckClass cls, std::string limiter, double sol, double dram_fraction = 0) {
  RooflineResult r;
  r.cls = cls;
  r.limiter = std::move(limiter);
  r.sol_fraction = sol;
  r.headroom = 1 / sol;
  r.kernel_count = 1;
  if (dram_fraction > 0) r.roofs.push_back(Roof{"DRAM", "B/s", 0, 4.27e12, dram_fraction, 0, true});
  return r;
}

KernelMetrics kernel(std::string name, std::map<std::string, double> values) {
  KernelMetrics k;
  k.name = std::move(name);
  k.values = std::move(values);
  return k;
}

KernelSass sass(std::string name, std::map<int, int64_t> loads, std::map<int, int64_t> stores) {
  KernelSass s;
  s.name = std::move(name);
  s.mangled_name = "_Z" + s.name;
  s.sass.arch = "sm_90a";
  s.sass.global_load_bits = std::move(loads);
  s.sass.global_store_bits = std::move(stores);
  return s;
}

bool has_action(const Finding& f, const std::string& a) {
  return std::find(f.actions.begin(), f.actions.end(), a) != f.actions.end();
}

void expect_known_actions(const std::vector<Finding>& fs) {
  for (const auto& f : fs)
    for (const auto& a : f.actions) EXPECT_TRUE(is_known_action(a)) << f.tool << ": " << a;
}

// --- coalescing fixtures (transpose seed, run2) ---------------------------------------------

constexpr const char* kLdSec = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
constexpr const char* kLdReq = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
constexpr const char* kStSec = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
constexpr const char* kStReq = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
constexpr const char* kLdUse = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio";
constexpr const char* kStUse = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio";

// Naive transpose: coalesced reads, column-strided writes (32 sectors per request, 4 B used).
Evidence naive_transpose() {
  Evidence e;
  e.ceilings = h200();
  e.roofline = roofline(BottleneckClass::kMemoryBound, "memory (ncu Mem%)", 0.819);
  e.kernels.push_back(kernel("transpose_seed", {{"gpu__time_duration.sum", 2070848},
                                                {"dram__bytes_read.sum", 612381696},
                                                {"dram__bytes_write.sum", 611916800},
                                                {"lts__t_bytes.sum", 7764163584},
                                                {"lts__t_sector_hit_rate.pct", 88.95},
                                                {kLdSec, 16777216}, {kLdReq, 4194304}, {kLdUse, 32},
                                                {kStSec, 134217728}, {kStReq, 4194304}, {kStUse, 4}}));
  e.sass.push_back(sass("transpose_seed", {{32, 1}}, {{32, 1}}));
  e.ideal_bytes = 2.0 * 16384 * 8192 * 4;
  return e;
}

// Its fixed twin: a shared-memory tiled transpose, 4 sectors per request both ways.
Evidence tiled_transpose() {
  Evidence e = naive_transpose();
  e.roofline = roofline(BottleneckClass::kMemoryBound, "DRAM", 0.82, 0.82);
  auto& v = e.kernels[0].values;
  v[kStSec] = 16777216;
  v[kStUse] = 32;
  v["lts__t_bytes.sum"] = 1.1e9;
  v["gpu__time_duration.sum"] = 350000;
  return e;
}

// --- softmax seed (run2): coalesced 32-bit, input read twice, low L2 hit rate -----------------

Evidence softmax_seed() {
  Evidence e;
  e.ceilings = h200();
  e.roofline = roofline(BottleneckClass::kMemoryBound, "DRAM", 0.798, 0.798);
  e.kernels.push_back(kernel("softmax_seed", {{"gpu__time_duration.sum", 303616},
                                              {"dram__bytes_read.sum", 764120320},
                                              {"dram__bytes_write.sum", 270131200},
                                              {"lts__t_bytes.sum", 1587704640},
                                              {"lts__t_sector_hit_rate.pct", 27.83},
                                              {kLdSec, 25165824}, {kLdReq, 6291456}, {kLdUse, 32},
                                              {kStSec, 8388608}, {kStReq, 2097152}, {kStUse, 32}}));
  e.sass.push_back(sass("softmax_seed", {{32, 39}}, {{32, 5}}));
  e.ideal_bytes = 2.0 * 268435456;
  return e;
}

// Online softmax, 128-bit: reads the input once.
Evidence online_softmax() {
  Evidence e = softmax_seed();
  e.roofline = roofline(BottleneckClass::kMemoryBound, "DRAM", 0.88, 0.88);
  auto& v = e.kernels[0].values;
  v["dram__bytes_read.sum"] = 270000000;
  v["dram__bytes_write.sum"] = 268500000;
  v["lts__t_bytes.sum"] = 560000000;
  v["lts__t_sector_hit_rate.pct"] = 12;
  v["gpu__time_duration.sum"] = 143000;
  v[kLdSec] = 8388608;
  v[kLdReq] = 524288;
  v[kStSec] = 8388608;
  v[kStReq] = 524288;
  e.sass[0] = sass("softmax_seed", {{128, 4}}, {{128, 1}});
  return e;
}

// --- roofline_headroom ------------------------------------------------------------------------

TEST(MemTools, RooflineHeadroomCriticalWhenFarFromTheRoof) {
  Evidence e;
  e.roofline = roofline(BottleneckClass::kLatencyBound, "DRAM", 0.12);
  auto fs = make_roofline_headroom()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 8.33, 0.01);
  EXPECT_TRUE(has_action(fs[0], "increase_occupancy"));
  EXPECT_TRUE(has_action(fs[0], "increase_ilp"));
  EXPECT_EQ(fs[0].evidence[0].op, ">=");
  EXPECT_EQ(fs[0].evidence[0].threshold, 4);
  expect_known_actions(fs);
}

TEST(MemTools, RooflineHeadroomSeverityAndActionsFollowTheClass) {
  Evidence e;
  e.roofline = roofline(BottleneckClass::kMemoryBound, "memory (ncu Mem%)", 0.819);  // transpose seed
  auto fs = make_roofline_headroom()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_TRUE(has_action(fs[0], "reuse_data"));
  EXPECT_TRUE(has_action(fs[0], "fuse"));

  e.roofline = roofline(BottleneckClass::kComputeBound, "FP32", 0.5);
  fs = make_roofline_headroom()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_TRUE(has_action(fs[0], "use_tensor_cores"));

  e.roofline = roofline(BottleneckClass::kComputeBound, "Tensor BF16", 0.7);
  fs = make_roofline_headroom()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_FALSE(has_action(fs[0], "use_tensor_cores"));

  e.roofline = roofline(BottleneckClass::kLaunchBound, "launch overhead", 1 / 2.75);
  e.roofline->idle_fraction = 0.64;
  fs = make_roofline_headroom()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"fewer_launches"});
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  expect_known_actions(fs);
}

TEST(MemTools, RooflineHeadroomQuietWithoutAMeasurement) {
  Evidence e;
  EXPECT_TRUE(make_roofline_headroom()->run(e).empty());
  e.roofline = RooflineResult{};  // no kernels: limiter "" and headroom 0
  e.roofline->headroom = 0;
  EXPECT_TRUE(make_roofline_headroom()->run(e).empty());
}

// --- uncoalesced_access -----------------------------------------------------------------------

TEST(MemTools, UncoalescedFiresOnStridedStores) {
  auto fs = make_uncoalesced_access()->run(naive_transpose());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].kernel, "transpose_seed");
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  // w = 134.2M x 28/32 / 151.0M = 0.778: gain 1 / 0.222.
  EXPECT_NEAR(fs[0].estimated_gain, 4.5, 0.05);
  EXPECT_TRUE(has_action(fs[0], "coalesce"));
  EXPECT_NE(fs[0].title.find("stores"), std::string::npos);
  EXPECT_EQ(fs[0].title.find("loads"), std::string::npos);  // the loads are clean
  expect_known_actions(fs);
}

TEST(MemTools, UncoalescedQuietOnTiledTwinAndOnReReads) {
  EXPECT_TRUE(make_uncoalesced_access()->run(tiled_transpose()).empty());
  EXPECT_TRUE(make_uncoalesced_access()->run(softmax_seed()).empty());
  // 128-bit coalesced: 16 sectors per request is the ideal for that width.
  EXPECT_TRUE(make_uncoalesced_access()->run(online_softmax()).empty());
}

TEST(MemTools, UncoalescedIgnoresATinyStoreAndOtherClasses) {
  // row_sum seed: column-strided loads (32 per request, 4 B) and one 4-byte store per row.
  Evidence e = softmax_seed();
  auto& v = e.kernels[0].values;
  v[kLdSec] = 134217728;
  v[kLdReq] = 4194304;
  v[kLdUse] = 4;
  v[kStSec] = 8192;
  v[kStReq] = 8192;
  v[kStUse] = 4;
  auto fs = make_uncoalesced_access()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NE(fs[0].title.find("loads"), std::string::npos);
  EXPECT_EQ(fs[0].title.find("stores"), std::string::npos);

  e.roofline = roofline(BottleneckClass::kComputeBound, "FP32", 0.7);
  EXPECT_TRUE(make_uncoalesced_access()->run(e).empty());
  e.kernels[0].values.erase(kLdUse);
  e.roofline = roofline(BottleneckClass::kMemoryBound, "DRAM", 0.8);
  e.kernels[0].values.erase(kStUse);
  EXPECT_TRUE(make_uncoalesced_access()->run(e).empty());  // the metrics were not collected
}

// --- narrow_loads -----------------------------------------------------------------------------

// The softmax seed's accesses with 24 of 64 warps resident (a grid of 3 blocks of 256 per SM).
Evidence few_warps_softmax() {
  Evidence e = softmax_seed();
  e.kernels[0].values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 36.6;
  return e;
}

TEST(MemTools, NarrowLoadsFiresOnCoalesced32BitMemoryBoundWithFewWarps) {
  auto fs = make_narrow_loads()->run(few_warps_softmax());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"vectorize_loads"});
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NEAR(fs[0].estimated_gain, 1.0 / 0.798, 0.01);
  EXPECT_NE(fs[0].title.find("44 of 44"), std::string::npos);
  EXPECT_NE(fs[0].title.find("37% of the SM's warps"), std::string::npos);
  // Latency-bound short of the DRAM roof: the same advice.
  Evidence e = few_warps_softmax();
  e.roofline = roofline(BottleneckClass::kLatencyBound, "DRAM", 0.3);
  EXPECT_EQ(make_narrow_loads()->run(e).size(), 1u);
}

TEST(MemTools, NarrowLoadsQuietAtFullOccupancy) {
  // H200: with most warps resident a 32-bit stream is within a few % of a 128-bit one.
  Evidence e = few_warps_softmax();
  e.kernels[0].values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 86;
  EXPECT_TRUE(make_narrow_loads()->run(e).empty());
  EXPECT_TRUE(make_narrow_loads()->run(softmax_seed()).empty());  // not collected: no guess
}

TEST(MemTools, NarrowLoadsLeavesFewWarpsToTheToolThatNamesTheirCause) {
  // Few warps because shared memory caps the blocks (occupancy_limiter's), or because the grid
  // leaves SMs idle (small_grid's): more warps is the first fix, not wider loads.
  Evidence e = few_warps_softmax();
  e.device.sm_count = 132;
  e.kernels[0].block = {128, 1, 1};
  e.kernels[0].grid = {4096, 1, 1};
  e.sass[0].resources = build::KernelResources{};
  e.sass[0].resources->registers = 32;
  ASSERT_EQ(make_narrow_loads()->run(e).size(), 1u);
  e.sass[0].resources->shared_bytes = 40 * 1024;  // 5 blocks of 4 warps: 31%
  EXPECT_TRUE(make_narrow_loads()->run(e).empty());
  e.sass[0].resources->shared_bytes = 0;
  e.kernels[0].grid = {32, 1, 1};  // 100 SMs idle
  EXPECT_TRUE(make_narrow_loads()->run(e).empty());
}

TEST(MemTools, UncoalescedQuietOnBroadcastsAndOnASmallWaste) {
  // One sector per request with 4 bytes used: a warp reading one address (a broadcast) or one
  // active lane storing. No address order touches fewer sectors.
  Evidence e = naive_transpose();
  auto& v = e.kernels[0].values;
  v["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] = v["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"];
  v["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = v["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"];
  v["smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"] = 4;
  v["smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"] = 4;
  EXPECT_TRUE(make_uncoalesced_access()->run(e).empty());
}

TEST(MemTools, NarrowLoadsQuietWhenWideUncoalescedOrNotMemoryBound) {
  EXPECT_TRUE(make_narrow_loads()->run(online_softmax()).empty());   // already 128-bit
  EXPECT_TRUE(make_narrow_loads()->run(naive_transpose()).empty());  // uncoalesced stores
  Evidence e = few_warps_softmax();
  e.roofline = roofline(BottleneckClass::kComputeBound, "FP32", 0.7);
  EXPECT_TRUE(make_narrow_loads()->run(e).empty());
  e = few_warps_softmax();
  e.roofline = roofline(BottleneckClass::kLatencyBound, "FP32", 0.3);  // short of a compute roof
  EXPECT_TRUE(make_narrow_loads()->run(e).empty());
  e = few_warps_softmax();
  e.sass.clear();
  EXPECT_TRUE(make_narrow_loads()->run(e).empty());
  // Mostly 128-bit bytes with a few 32-bit tail accesses: quiet.
  e = few_warps_softmax();
  e.sass[0] = sass("softmax_seed", {{128, 4}, {32, 6}}, {{128, 1}, {32, 2}});
  EXPECT_TRUE(make_narrow_loads()->run(e).empty());
}

// --- bank_conflicts ---------------------------------------------------------------------------

Evidence shared_transpose(double conflicts) {
  Evidence e;
  e.roofline = roofline(BottleneckClass::kLatencyBound, "DRAM", 0.3);
  e.kernels.push_back(kernel(
      "smem_transpose", {{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", conflicts},
                         {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0},
                         {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 1048576 + conflicts},
                         {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 1048576},
                         {"smsp__sass_inst_executed_op_shared_ld.sum", 1048576},
                         {"smsp__sass_inst_executed_op_shared_st.sum", 1048576},
                         {"l1tex__throughput.avg.pct_of_peak_sustained_active", 85}}));
  return e;
}

TEST(MemTools, BankConflictsFiresOn32WayColumnReads) {
  auto fs = make_bank_conflicts()->run(shared_transpose(31.0 * 1048576));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  // share = 31M / (32M + 1M) = 0.939; gain 1 / (1 - 0.939 x 0.85) = 4.0.
  EXPECT_NEAR(fs[0].estimated_gain, 1 / (1 - 31.0 / 33 * 0.85), 0.01);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"avoid_bank_conflicts"});
  EXPECT_NE(fs[0].title.find("loads"), std::string::npos);
}

TEST(MemTools, BankConflictsQuietWhenPaddedOrUnmeasured) {
  EXPECT_TRUE(make_bank_conflicts()->run(shared_transpose(0)).empty());
  // 5% extra wavefronts: below ncu's 10%.
  EXPECT_TRUE(make_bank_conflicts()->run(shared_transpose(0.1 * 1048576)).empty());
  EXPECT_TRUE(make_bank_conflicts()->run(softmax_seed()).empty());  // no shared-memory metrics
  // 2-way on the loads only: 1M / 3M = 33%: a warning.
  auto fs = make_bank_conflicts()->run(shared_transpose(1048576));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
}

// --- dram_over_ideal --------------------------------------------------------------------------

TEST(MemTools, DramOverIdealLeavesTheExcessToTheToolThatNamesItsCause) {
  // The softmax seed's second read misses L2: low_l2_hit_rate fires, and names the fix.
  ASSERT_EQ(make_low_l2_hit_rate()->run(softmax_seed()).size(), 1u);
  EXPECT_TRUE(make_dram_over_ideal()->run(softmax_seed()).empty());
  // A kernel that spills: local memory may carry the excess (register_spills names it).
  Evidence spills = softmax_seed();
  spills.kernels[0].values.erase("lts__t_sector_hit_rate.pct");
  ASSERT_TRUE(make_low_l2_hit_rate()->run(spills).empty());
  ASSERT_FALSE(make_dram_over_ideal()->run(spills).empty());
  spills.sass[0].sass.local_loads = 4;
  spills.sass[0].sass.local_stores = 4;
  EXPECT_TRUE(make_dram_over_ideal()->run(spills).empty());
}

TEST(MemTools, DramOverIdealFiresOnSoftmaxReadingTwice) {
  // Without the stage-2 L2 hit rate, low_l2_hit_rate cannot say why: the excess is reported.
  Evidence e = softmax_seed();
  e.kernels[0].values.erase("lts__t_sector_hit_rate.pct");
  auto fs = make_dram_over_ideal()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NEAR(fs[0].estimated_gain, 1034251520.0 / 536870912, 0.01);
  EXPECT_TRUE(has_action(fs[0], "reuse_data"));
  EXPECT_EQ(fs[0].kernel, "");
  expect_known_actions(fs);
}

TEST(MemTools, DramOverIdealQuietOnOnePassAndWithoutIdeal) {
  EXPECT_TRUE(make_dram_over_ideal()->run(online_softmax()).empty());
  Evidence e = softmax_seed();
  e.ideal_bytes = 0;
  EXPECT_TRUE(make_dram_over_ideal()->run(e).empty());
  // Uncoalesced transpose: L1/L2 waste, but DRAM moves 1.14x the ideal: not this tool's flaw.
  EXPECT_TRUE(make_dram_over_ideal()->run(naive_transpose()).empty());
}

TEST(MemTools, DramOverIdealCriticalForUnfusedPasses) {
  // Three elementwise kernels over 2^26 floats where one would do: 6 x 268 MB against 2 x 268 MB.
  Evidence e;
  e.roofline = roofline(BottleneckClass::kMemoryBound, "DRAM", 0.85, 0.85);
  e.ideal_bytes = 2.0 * 268435456;
  for (const char* name : {"scale", "bias", "gelu"})
    e.kernels.push_back(kernel(name, {{"dram__bytes_read.sum", 268435456}, {"dram__bytes_write.sum", 268435456}}));
  auto fs = make_dram_over_ideal()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_NEAR(fs[0].estimated_gain, 3.0, 1e-9);
  EXPECT_EQ(fs[0].actions.front(), "fuse");
  // Not memory-bound: a warning, and only the DRAM part of the time shrinks.
  e.roofline = roofline(BottleneckClass::kLatencyBound, "DRAM", 0.4, 0.4);
  fs = make_dram_over_ideal()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  EXPECT_NEAR(fs[0].estimated_gain, 1 / (1 - 0.4 * (1 - 1 / 3.0)), 1e-9);
  // One kernel without its DRAM counters: nothing is guessed.
  e.kernels[1].values.erase("dram__bytes_write.sum");
  EXPECT_TRUE(make_dram_over_ideal()->run(e).empty());
}

// The hopper-path flaw's fixed twin on the H200 (calibrated): a cuBLAS BF16 GEMM moving 1.72x its
// ideal with DRAM at 23% of its roof, at 98% of the tensor roof. Without the headroom cap it
// would claim 1.11x from bytes that cost it nothing.
TEST(MemTools, DramOverIdealGainCappedByTheRoofHeadroom) {
  Evidence e;
  e.roofline = roofline(BottleneckClass::kComputeBound, "Tensor BF16", 0.978, 0.228);
  e.ideal_bytes = 100663296;
  e.kernels.push_back(kernel("nvjet_sm90_tst_256x128", {{"dram__bytes_read.sum", 148296960},
                                                        {"dram__bytes_write.sum", 25323008}}));
  EXPECT_TRUE(make_dram_over_ideal()->run(e).empty());
  e.roofline = roofline(BottleneckClass::kComputeBound, "Tensor BF16", 0.7, 0.228);  // 1.43x headroom
  auto fs = make_dram_over_ideal()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_NEAR(fs[0].estimated_gain, 1 / (1 - 0.228 * (1 - 100663296.0 / 173619968)), 1e-6);
}

// --- low_l2_hit_rate --------------------------------------------------------------------------

TEST(MemTools, LowL2HitRateFiresOnReReadsThatMissL2) {
  auto fs = make_low_l2_hit_rate()->run(softmax_seed());
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarning);
  // 303.6 us against max(536.9e6 / 4.27e12, 1.588e9 / 8.45e12) = 187.9 us.
  EXPECT_NEAR(fs[0].estimated_gain, 303616e-9 / (1587704640 / 8.45e12), 0.01);
  EXPECT_TRUE(has_action(fs[0], "tile_for_l2"));
}

// Flaw 05 on the H200, two runs: its 134 MB input read twice (268 MB from DRAM both times), but
// 147 MB and then 119 MB of its 134 MB output counted as written in the kernel's window. The
// excess is judged on reads, 268 / (268 - 119) = 1.8x, so both runs fire; a stream reading its
// input once (134 MB, 112 MB written) is quiet.
TEST(MemTools, LowL2HitRateJudgesTheExcessOnReadsWhenWritesFallOutsideTheWindow) {
  auto flaw05 = [](double written) {
    Evidence e = softmax_seed();
    e.ideal_bytes = 268435456;
    auto& v = e.kernels[0].values;
    v["gpu__time_duration.sum"] = 114912;
    v["dram__bytes_read.sum"] = 268452352;
    v["dram__bytes_write.sum"] = written;
    v["lts__t_bytes.sum"] = 605285664;
    v["lts__t_sector_hit_rate.pct"] = 33.4;
    return e;
  };
  for (double written : {147345920.0, 118819072.0}) {
    auto fs = make_low_l2_hit_rate()->run(flaw05(written));
    ASSERT_EQ(fs.size(), 1u) << written;
    bool by_reads = false;
    for (const auto& ev : fs[0].evidence)
      by_reads = by_reads || (ev.metric.rfind("DRAM reads / compulsory reads", 0) == 0 &&
                              ev.value == 268452352 / (268435456 - written));
    EXPECT_TRUE(by_reads) << written;
  }
  Evidence stream = flaw05(112079360);
  stream.kernels[0].values["dram__bytes_read.sum"] = 134232832;
  EXPECT_TRUE(make_low_l2_hit_rate()->run(stream).empty());
}

// Flaw 19 on the H200: a 16 MB table uploaded in every call, then read by the kernel; its reads
// (208 MB) are 1.64x the compulsory reads less the writes, and L2 hits 44%. The copy is the
// cause: host_device_copies names it, and low_l2_hit_rate stays quiet while it fires.
TEST(MemTools, LowL2HitRateQuietWhileACopyInTheCallFeedsTheKernel) {
  Evidence e = softmax_seed();
  ASSERT_EQ(make_low_l2_hit_rate()->run(e).size(), 1u);
  e.call_seconds = 400e-6;
  e.trace.emplace();
  e.trace->span_s = 400e-6;
  profile::TraceCopy c;
  c.kind = "memcpy";
  c.direction = "HtoD";
  c.bytes = 16u << 20;
  c.start_ns = 0;
  c.end_ns = 90000;
  e.trace->copies.push_back(c);
  ASSERT_FALSE(make_host_device_copies()->run(e).empty());
  EXPECT_TRUE(make_low_l2_hit_rate()->run(e).empty());
}

// The unfused-passes flaw on the H200: two streams through a 134 MB temporary. Each kernel moves
// 1.9x its share of the ideal at 50% L2 hits; that is the intermediate, which dram_over_ideal
// names (fuse), not a re-read inside either kernel.
TEST(MemTools, LowL2HitRateLeavesIntermediatesBetweenKernelsToDramOverIdeal) {
  Evidence e;
  e.ceilings = h200();
  e.roofline = roofline(BottleneckClass::kMemoryBound, "DRAM", 0.86, 0.86);
  e.ideal_bytes = 268435456;
  e.kernels.push_back(kernel("k1", {{"gpu__time_duration.sum", 68224}, {"dram__bytes_read.sum", 134224128},
                                    {"dram__bytes_write.sum", 109787904}, {"lts__t_bytes.sum", 409361472},
                                    {"lts__t_sector_hit_rate.pct", 49.9}}));
  e.kernels.push_back(kernel("k2", {{"gpu__time_duration.sum", 70592}, {"dram__bytes_read.sum", 134223616},
                                    {"dram__bytes_write.sum", 134103552}, {"lts__t_bytes.sum", 407974208},
                                    {"lts__t_sector_hit_rate.pct", 49.6}}));
  ASSERT_EQ(make_dram_over_ideal()->run(e).size(), 1u);
  EXPECT_TRUE(make_low_l2_hit_rate()->run(e).empty());
}

TEST(MemTools, LowL2HitRateQuietOnStreamsHighHitsAndMissingIdeal) {
  EXPECT_TRUE(make_low_l2_hit_rate()->run(naive_transpose()).empty());  // 89% hits
  EXPECT_TRUE(make_low_l2_hit_rate()->run(online_softmax()).empty());   // a stream: 12% is natural
  Evidence e = softmax_seed();
  e.ideal_bytes = 0;
  EXPECT_TRUE(make_low_l2_hit_rate()->run(e).empty());
  e = softmax_seed();
  e.roofline = roofline(BottleneckClass::kLatencyBound, "DRAM", 0.5);
  EXPECT_TRUE(make_low_l2_hit_rate()->run(e).empty());
  e = softmax_seed();
  e.kernels[0].values.erase("lts__t_sector_hit_rate.pct");
  EXPECT_TRUE(make_low_l2_hit_rate()->run(e).empty());
}

// --- register_spills --------------------------------------------------------------------------

KernelSass pressure(int64_t stack, int64_t spill_st, int64_t spill_ld, int limit) {
  KernelSass s = sass("pressure", {{32, 4}}, {{32, 1}});
  s.sass.local_stores = spill_st > 0 ? 81 : 0;
  s.sass.local_loads = spill_ld > 0 ? 85 : (stack > 0 ? 4 : 0);
  build::KernelResources r;
  r.mangled_name = s.mangled_name;
  r.name = s.name;
  r.arch = "sm_90a";
  r.registers = 24;
  r.register_limit = limit;
  r.stack_frame_bytes = stack;
  r.spill_store_bytes = spill_st;
  r.spill_load_bytes = spill_ld;
  s.resources = r;
  return s;
}

TEST(MemTools, RegisterSpillsCriticalUnderARegisterCap) {
  Evidence e;
  e.roofline = roofline(BottleneckClass::kLatencyBound, "DRAM", 0.2);
  e.sass.push_back(pressure(1024, 2212, 2324, 24));  // tests/data/ptxas capture
  auto fs = make_register_spills()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kCritical);
  EXPECT_EQ(fs[0].actions, std::vector<std::string>{"reduce_registers"});
  EXPECT_NE(fs[0].guidance.find("capped at 24"), std::string::npos);
  EXPECT_EQ(fs[0].evidence[0].value, 4536);
}

TEST(MemTools, RegisterSpillsQuietForALocalArrayAndMildWhenComputeBound) {
  Evidence e;
  e.roofline = roofline(BottleneckClass::kLatencyBound, "DRAM", 0.2);
  e.sass.push_back(pressure(1024, 0, 0, 0));  // a stack frame, no spills
  EXPECT_TRUE(make_register_spills()->run(e).empty());
  e.sass[0].resources.reset();  // LDL without a ptxas report: not guessed
  EXPECT_TRUE(make_register_spills()->run(e).empty());
  EXPECT_TRUE(make_register_spills()->run(softmax_seed()).empty());  // no resources at all

  e.sass[0] = pressure(16, 8, 8, 0);
  e.roofline = roofline(BottleneckClass::kComputeBound, "FP32", 0.8);
  auto fs = make_register_spills()->run(e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_EQ(fs[0].guidance.find("capped"), std::string::npos);
}

// --- specs ------------------------------------------------------------------------------------

TEST(MemTools, SpecsNameOnlyStageTwoMetricsAndKnownClasses) {
  const std::vector<std::string> stage2 = {
      kLdSec, kLdReq, kStSec, kStReq, kLdUse, kStUse, "lts__t_sector_hit_rate.pct",
      "l1tex__throughput.avg.pct_of_peak_sustained_active",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "smsp__sass_inst_executed_op_shared_ld.sum",
      "smsp__sass_inst_executed_op_shared_st.sum"};
  for (auto make : {make_roofline_headroom, make_uncoalesced_access, make_narrow_loads, make_bank_conflicts,
                    make_dram_over_ideal, make_low_l2_hit_rate, make_register_spills}) {
    auto tool = make();
    for (const auto& m : tool->spec().metrics)
      EXPECT_NE(std::find(stage2.begin(), stage2.end(), m), stage2.end()) << tool->spec().name << ": " << m;
  }
  Evidence launch;
  launch.roofline = roofline(BottleneckClass::kLaunchBound, "launch overhead", 0.3);
  EXPECT_TRUE(make_roofline_headroom()->wanted(launch));
  EXPECT_FALSE(make_uncoalesced_access()->wanted(launch));
  EXPECT_FALSE(make_narrow_loads()->wanted(launch));
  EXPECT_TRUE(make_narrow_loads()->wanted(softmax_seed()));
}

}  // namespace
}  // namespace kp::analysis
