// Tests of the latency tools: occupancy_limiter, tail_effect, small_grid, warp_stalls,
// branch_divergence, low_ilp, barrier_overhead. Each flawed case is also run through all seven
// tools, so that a kernel with one flaw fires the one tool that owns it.
#include <memory>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "analysis/tool.h"

namespace kp::analysis {

std::unique_ptr<Tool> make_occupancy_limiter();
std::unique_ptr<Tool> make_tail_effect();
std::unique_ptr<Tool> make_small_grid();
std::unique_ptr<Tool> make_warp_stalls();
std::unique_ptr<Tool> make_branch_divergence();
std::unique_ptr<Tool> make_low_ilp();
std::unique_ptr<Tool> make_barrier_overhead();

namespace {

const std::string kPrefix = "smsp__average_warps_issue_stalled_";
const std::string kSuffix = "_per_issue_active.ratio";

struct Stalls {
  double long_sb = 0.5, short_sb = 0.2, mio = 0.2, lg = 0.1, barrier = 0.2, wait = 0.6, math = 0.1, not_sel = 0.3;
};

// One latency-bound kernel on an H200: 256 threads, 32 registers, 4096 blocks, 200 us, healthy
// stage-1 and stage-2 numbers. Tests change one thing to make one flaw.
struct Case {
  Evidence e;
  profile::KernelMetrics& k() { return e.kernels[0]; }
  build::KernelResources& res() { return *e.sass[0].resources; }

  Case() {
    e.device.cc_major = 9;
    e.device.sm_count = 132;
    e.ceilings.cc_major = 9;
    e.ceilings.sm_count = 132;
    RooflineResult r;
    r.cls = BottleneckClass::kLatencyBound;
    r.sol_fraction = 0.2;
    r.headroom = 5;
    e.roofline = r;
    profile::KernelMetrics m;
    m.name = "work(const float *, float *, int)";
    m.grid = {4096, 1, 1};
    m.block = {256, 1, 1};
    m.values["gpu__time_duration.sum"] = 200e3;
    m.values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 85;
    m.values["smsp__issue_active.avg.per_cycle_active"] = 0.45;
    m.values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 40;
    m.values["smsp__warps_eligible.avg.per_cycle_active"] = 1.6;
    m.values["smsp__thread_inst_executed_per_inst_executed.ratio"] = 31.2;
    e.kernels.push_back(m);
    set_stalls(Stalls{});
    profile::KernelSass s;
    s.name = "work(float const*, float*, int)";
    s.mangled_name = "_Z4workPKfPfi";
    s.sass.by_opcode["BAR"] = 1;
    build::KernelResources rs;
    rs.registers = 32;
    s.resources = rs;
    e.sass.push_back(s);
  }
  void set_stalls(const Stalls& s) {
    auto put = [&](const char* r, double v) { k().values[kPrefix + r + kSuffix] = v; };
    put("long_scoreboard", s.long_sb);
    put("short_scoreboard", s.short_sb);
    put("mio_throttle", s.mio);
    put("lg_throttle", s.lg);
    put("barrier", s.barrier);
    put("wait", s.wait);
    put("math_pipe_throttle", s.math);
    put("not_selected", s.not_sel);
  }
  void drop_stalls() {
    for (auto it = k().values.begin(); it != k().values.end();)
      it = it->first.rfind(kPrefix, 0) == 0 ? k().values.erase(it) : std::next(it);
  }
};

std::vector<Finding> run(std::unique_ptr<Tool> t, const Evidence& e) { return t->run(e); }

// The names of the seven tools that fire on e.
std::set<std::string> fired(const Evidence& e) {
  std::set<std::string> out;
  std::unique_ptr<Tool> tools[] = {make_occupancy_limiter(), make_tail_effect(),   make_small_grid(),
                                   make_warp_stalls(),       make_branch_divergence(), make_low_ilp(),
                                   make_barrier_overhead()};
  for (auto& t : tools)
    for (const auto& f : t->run(e)) {
      out.insert(f.tool);
      EXPECT_GE(f.estimated_gain, 1) << f.tool;
      EXPECT_FALSE(f.guidance.empty()) << f.tool;
      EXPECT_FALSE(f.evidence.empty()) << f.tool;
      for (const auto& a : f.actions) EXPECT_TRUE(is_known_action(a)) << f.tool << ": " << a;
    }
  return out;
}

bool has_action(const Finding& f, const std::string& a) {
  return std::find(f.actions.begin(), f.actions.end(), a) != f.actions.end();
}

using Names = std::set<std::string>;

TEST(LatTools, HealthyKernelFiresNothing) {
  Case c;
  EXPECT_EQ(fired(c.e), Names{});
}

TEST(LatTools, StageTwoMetricsAreDeclared) {
  auto w = make_warp_stalls();
  EXPECT_EQ(w->spec().metrics.size(), 8u);
  auto d = make_branch_divergence();
  EXPECT_EQ(d->spec().metrics, std::vector<std::string>{"smsp__thread_inst_executed_per_inst_executed.ratio"});
  EXPECT_TRUE(make_occupancy_limiter()->spec().metrics.empty());
}

// --- occupancy_limiter ---------------------------------------------------------------------

TEST(LatTools, OccupancyLimitedByRegisters) {
  Case c;
  c.res().registers = 128;  // 4096 per warp: 16 warps per SM = 25%
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 24;
  auto f = run(make_occupancy_limiter(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_TRUE(has_action(f[0], "reduce_registers"));
  EXPECT_NE(f[0].title.find("25%"), std::string::npos) << f[0].title;
  EXPECT_NE(f[0].title.find("registers"), std::string::npos) << f[0].title;
  EXPECT_NEAR(f[0].estimated_gain, 50.0 / 24, 1e-9);
  EXPECT_EQ(fired(c.e), Names{"occupancy_limiter"});
}

TEST(LatTools, OccupancyRegisterArithmeticMatchesTheCalculator) {
  // 40 registers: 1,280 per warp, 12 warps per sub-partition = 48 warps = 75%: quiet. 72
  // registers: 2,304 per warp, 7 per sub-partition = 28 warps, 3 blocks of 8 = 37.5%: fires.
  Case c;
  c.res().registers = 40;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 70;
  EXPECT_TRUE(run(make_occupancy_limiter(), c.e).empty());
  c.res().registers = 72;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 36;
  auto f = run(make_occupancy_limiter(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("37%"), std::string::npos) << f[0].title;
}

TEST(LatTools, OccupancyLimitedByDynamicSharedMemory) {
  Case c;
  c.res().shared_bytes = 0;
  profile::TraceCall call;
  profile::TraceKernel tk;
  tk.grid = {4096, 1, 1};
  tk.block = {256, 1, 1};
  tk.dynamic_shared_bytes = 100 * 1024;  // + 1 KB reserved: 2 blocks in 228 KB = 16 warps = 25%
  call.kernels.push_back(tk);
  c.e.trace = call;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 24;
  auto f = run(make_occupancy_limiter(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].actions, std::vector<std::string>{"reduce_shared_memory"});
  // Fixed twin: 24 KB tiles allow 9 blocks, capped at 8 by threads: 100%.
  c.e.trace->kernels[0].dynamic_shared_bytes = 24 * 1024;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 88;
  EXPECT_TRUE(run(make_occupancy_limiter(), c.e).empty());
}

TEST(LatTools, OccupancyAchievedFarBelowTheoretical) {
  Case c;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 45;  // theoretical 100
  auto f = run(make_occupancy_limiter(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].actions, std::vector<std::string>{"tune_block_size"});
  EXPECT_NEAR(f[0].estimated_gain, 100.0 / 45, 1e-9);
  // The same gap on a grid below one wave is small_grid's, not an imbalance.
  c.k().grid = {132, 1, 1};
  EXPECT_TRUE(run(make_occupancy_limiter(), c.e).empty());
}

TEST(LatTools, OccupancyQuietWithoutEvidenceOrOnOtherClasses) {
  Case c;
  c.res().registers = 128;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 24;
  Case no_res = c;
  no_res.e.sass[0].resources.reset();
  EXPECT_TRUE(run(make_occupancy_limiter(), no_res.e).empty());
  Case compute = c;
  compute.e.roofline->cls = BottleneckClass::kComputeBound;
  EXPECT_TRUE(run(make_occupancy_limiter(), compute.e).empty());
  Case memory_saturated = c;
  memory_saturated.e.roofline->cls = BottleneckClass::kMemoryBound;
  memory_saturated.e.roofline->sol_fraction = 0.85;
  EXPECT_TRUE(run(make_occupancy_limiter(), memory_saturated.e).empty());
  Case memory_low = c;
  memory_low.e.roofline->cls = BottleneckClass::kMemoryBound;
  memory_low.e.roofline->sol_fraction = 0.6;
  EXPECT_EQ(run(make_occupancy_limiter(), memory_low.e).size(), 1u);
}

// --- tail_effect ---------------------------------------------------------------------------

TEST(LatTools, TailEffectOnAPartialSecondWave) {
  Case c;
  c.res().registers = 64;  // 4 blocks of 256 per SM: waves of 528
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 48;  // theoretical 50
  c.k().grid = {600, 1, 1};
  auto f = run(make_tail_effect(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].estimated_gain, 2.0 / (600.0 / 528), 1e-9);
  EXPECT_NE(f[0].title.find("72 blocks"), std::string::npos) << f[0].title;
  EXPECT_TRUE(has_action(f[0], "tune_block_size"));
  EXPECT_EQ(fired(c.e), Names{"tail_effect"});
}

TEST(LatTools, TailEffectQuietOnWholeWavesManyWavesOrOneWaveOrMemoryBound) {
  Case c;
  c.res().registers = 64;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 48;
  for (int64_t blocks : {528, 1056, 5300, 500}) {  // whole, whole, 10.04 waves, < 1 wave
    c.k().grid = {blocks, 1, 1};
    EXPECT_TRUE(run(make_tail_effect(), c.e).empty()) << blocks;
  }
  c.k().grid = {600, 1, 1};
  c.e.roofline->cls = BottleneckClass::kMemoryBound;
  EXPECT_TRUE(run(make_tail_effect(), c.e).empty());
}

// --- small_grid ----------------------------------------------------------------------------

TEST(LatTools, SmallGridFewerBlocksThanSms) {
  Case c;
  c.k().grid = {64, 1, 1};
  c.k().values["gpu__time_duration.sum"] = 45e3;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 12;
  auto f = run(make_small_grid(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].estimated_gain, 132.0 / 64, 1e-9);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_EQ(f[0].actions, std::vector<std::string>{"increase_parallelism"});
  EXPECT_EQ(fired(c.e), Names{"small_grid"});
  // A 5 us kernel: launch overhead, not a grid problem.
  c.k().values["gpu__time_duration.sum"] = 5e3;
  EXPECT_TRUE(run(make_small_grid(), c.e).empty());
}

TEST(LatTools, SmallGridTooFewWarpsPerSm) {
  Case c;
  c.k().grid = {264, 1, 1};
  c.k().block = {64, 1, 1};  // 2 blocks x 2 warps per SM = 4 warps
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 6;
  auto f = run(make_small_grid(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].estimated_gain, 16.0 / 4, 1e-9);
  EXPECT_EQ(fired(c.e), Names{"small_grid"});
  // Fixed twin: 2,112 blocks of 64 threads: 32 warps per SM.
  c.k().grid = {2112, 1, 1};
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 48;
  EXPECT_TRUE(run(make_small_grid(), c.e).empty());
}

TEST(LatTools, SmallGridQuietWithoutGridOrSmCount) {
  Case c;
  c.k().grid = {0, 0, 0};
  EXPECT_TRUE(run(make_small_grid(), c.e).empty());
  Case d;
  d.k().grid = {64, 1, 1};
  d.e.device.sm_count = 0;
  d.e.ceilings.sm_count = 0;
  EXPECT_TRUE(run(make_small_grid(), d.e).empty());
}

// --- warp_stalls ---------------------------------------------------------------------------

TEST(LatTools, WarpStallsNamesLongScoreboard) {
  Case c;
  c.res().registers = 56;  // 1,792 per warp: 36 warps, 4 blocks of 8 = 50%: not a resource limit
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 40;
  c.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.3;
  c.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 0.4;
  c.set_stalls({6.1, 0.2, 0.3, 0.1, 0.2, 0.9, 0.0, 0.1});
  auto f = run(make_warp_stalls(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("long_scoreboard"), std::string::npos);
  EXPECT_NEAR(f[0].estimated_gain, 1 / (1 - 6.1 / 8.9), 1e-9);
  EXPECT_TRUE(has_action(f[0], "use_async_copy"));
  EXPECT_EQ(fired(c.e), Names{"warp_stalls"});
  // With 128 registers the same stalls are the symptom of a 25% occupancy: occupancy_limiter's.
  c.res().registers = 128;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 24;
  EXPECT_TRUE(run(make_warp_stalls(), c.e).empty());
  EXPECT_EQ(fired(c.e), Names{"occupancy_limiter"});
}

TEST(LatTools, WarpStallsMioThrottle) {
  Case c;
  c.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 0.6;
  c.set_stalls({0.4, 0.5, 4.0, 0.1, 0.3, 0.5, 0.1, 0.2});
  auto f = run(make_warp_stalls(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("mio_throttle"), std::string::npos);
  EXPECT_TRUE(has_action(f[0], "vectorize_loads"));
  EXPECT_EQ(fired(c.e), Names{"warp_stalls"});
}

TEST(LatTools, WarpStallsQuietWhenOtherWarpsHideTheStalls) {
  // The low-ILP flaw's fixed twin on the H200 (eight chains stepped together): long_scoreboard
  // 6.0 of 16.4 cycles between issues (37%), but 3.0 warps eligible per cycle and not_selected
  // 4.1: the schedulers had a warp to issue; the loads' latency was hidden.
  Case c;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 68;
  c.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.61;
  c.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 2.99;
  c.set_stalls({6.0, 0.63, 0.01, 0.0, 0.0, 1.72, 2.91, 4.08});
  EXPECT_TRUE(run(make_warp_stalls(), c.e).empty());
  // The same breakdown with 0.6 eligible warps: a scheduler often finds none, and the stall costs.
  c.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 0.6;
  auto f = run(make_warp_stalls(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("long_scoreboard"), std::string::npos);
}

TEST(LatTools, WarpStallsQuietOnBalancedMissingOrOtherClass) {
  Case c;  // the default breakdown: largest is wait 0.6 of 3.2 = 19%
  EXPECT_TRUE(run(make_warp_stalls(), c.e).empty());
  Case m;
  m.set_stalls({6.1, 0.2, 0.3, 0.1, 0.2, 0.9, 0.0, 0.1});
  m.drop_stalls();
  EXPECT_TRUE(run(make_warp_stalls(), m.e).empty());
  Case mem;
  mem.set_stalls({0.4, 0.5, 4.0, 0.1, 0.3, 0.5, 0.1, 0.2});
  mem.e.roofline->cls = BottleneckClass::kMemoryBound;
  EXPECT_TRUE(run(make_warp_stalls(), mem.e).empty());
}

// --- barrier_overhead ----------------------------------------------------------------------

TEST(LatTools, BarrierOverheadOnATreeReduction) {
  Case c;
  c.k().block = {512, 1, 1};
  c.e.sass[0].sass.by_opcode["BAR"] = 10;
  c.set_stalls({1.2, 0.1, 0.2, 0.0, 3.1, 0.3, 0.0, 0.1});
  auto f = run(make_barrier_overhead(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].estimated_gain, 1 / (1 - 3.1 / 6.0), 1e-9);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_TRUE(has_action(f[0], "fewer_barriers"));
  EXPECT_TRUE(has_action(f[0], "tune_block_size"));
  EXPECT_NE(f[0].guidance.find("__shfl_xor_sync"), std::string::npos);
  EXPECT_EQ(fired(c.e), Names{"barrier_overhead"});
}

TEST(LatTools, BarrierOverheadQuietOnStaticBarsAlone) {
  Case c;
  c.e.sass[0].sass.by_opcode["BAR"] = 20;
  EXPECT_TRUE(run(make_barrier_overhead(), c.e).empty());  // barrier 0.2 of 3.2 = 6%
  c.drop_stalls();
  EXPECT_TRUE(run(make_barrier_overhead(), c.e).empty());
}

// A memory-bound kernel at its roof: quiet when the roof is DRAM or L2 (barriers cost nothing
// the memory system would return), firing when only L1/shared memory is busy (the tree
// reduction's own shared traffic, as flaw 17 on the H200).
TEST(LatTools, BarrierOverheadAtASaturatedRoofDependsOnWhichUnitIsBusy) {
  Case c;
  c.k().block = {1024, 1, 1};
  c.e.sass[0].sass.by_opcode["BAR"] = 11;
  c.set_stalls({0.16, 5.5, 3.6, 0.0, 8.7, 1.9, 0.9, 3.9});
  c.e.roofline->cls = BottleneckClass::kMemoryBound;
  c.e.roofline->sol_fraction = 0.82;
  c.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.54;
  c.k().values["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = 17;
  c.k().values["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = 23;
  auto f = run(make_barrier_overhead(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].estimated_gain, 1 / (1 - 8.7 / 25.66), 1e-9);  // 1 + the eight stalls = 25.66
  c.e.roofline->headroom = 1.2;  // then the roofline caps it
  f = run(make_barrier_overhead(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NEAR(f[0].estimated_gain, 1.2, 1e-9);
  EXPECT_EQ(fired(c.e), Names{"barrier_overhead"});
  c.k().values["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = 85;
  EXPECT_TRUE(run(make_barrier_overhead(), c.e).empty());
  c.k().values["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = 17;
  c.k().values["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = 81;
  EXPECT_TRUE(run(make_barrier_overhead(), c.e).empty());
  c.k().values.erase("lts__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_TRUE(run(make_barrier_overhead(), c.e).empty());  // which unit is busy is unknown
}

// --- low_ilp -------------------------------------------------------------------------------

TEST(LatTools, LowIlpWithGoodOccupancy) {
  Case c;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 75;
  c.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.30;
  c.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 0.35;
  c.set_stalls({3.0, 0.1, 0.1, 0.0, 0.1, 2.8, 0.0, 0.1});
  auto f = run(make_low_ilp(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].actions, std::vector<std::string>{"increase_ilp"});
  EXPECT_NEAR(f[0].estimated_gain, 1 / 0.30, 1e-9);
  EXPECT_NE(f[0].guidance.find("long_scoreboard"), std::string::npos);
  // warp_stalls leaves this pattern to low_ilp.
  EXPECT_EQ(fired(c.e), Names{"low_ilp"});
  // An 8.7 us kernel: ramp-up and drain weigh on every average; no low-ILP reading.
  c.k().values["gpu__time_duration.sum"] = 8.7e3;
  EXPECT_TRUE(run(make_low_ilp(), c.e).empty());
}

TEST(LatTools, LowIlpQuietWhenOccupancyIsTheProblemOrWarpsAreEligible) {
  Case c;
  c.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.30;
  c.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 0.35;
  c.set_stalls({3.0, 0.1, 0.1, 0.0, 0.1, 2.8, 0.0, 0.1});
  c.res().registers = 128;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 24;
  EXPECT_TRUE(run(make_low_ilp(), c.e).empty());
  EXPECT_EQ(fired(c.e), Names{"occupancy_limiter"});  // warp_stalls defers to it
  Case d;  // healthy scheduler
  d.set_stalls({3.0, 0.1, 0.1, 0.0, 0.1, 2.8, 0.0, 0.1});
  d.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.7;
  d.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 2.1;
  EXPECT_TRUE(run(make_low_ilp(), d.e).empty());
  Case b;  // barrier-dominated: barrier_overhead's
  b.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.30;
  b.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 0.35;
  b.set_stalls({1.2, 0.1, 0.2, 0.0, 3.1, 0.3, 0.0, 0.1});
  EXPECT_TRUE(run(make_low_ilp(), b.e).empty());
}

// --- branch_divergence ---------------------------------------------------------------------

TEST(LatTools, WarpStallsReadsTheUnexplainedStallsAsMembarWhenTheSassFences) {
  // The fence-per-store flaw on the H200: 96% of the warps resident at 0.158 issues per cycle
  // are 97 cycles between issues, of which the collected reasons explain 55.
  Case c;
  c.k().values["sm__warps_active.avg.pct_of_peak_sustained_active"] = 96;
  c.k().values["smsp__issue_active.avg.per_cycle_active"] = 0.158;
  c.k().values["smsp__warps_eligible.avg.per_cycle_active"] = 0.35;
  c.set_stalls({48.9, 0.04, 0.09, 0.01, 0.0, 3.43, 0.7, 1.21});
  EXPECT_EQ(fired(c.e), Names{"low_ilp"});  // without fences in the SASS: dependency chains
  c.e.sass[0].sass.by_opcode["MEMBAR"] = 1;
  EXPECT_EQ(fired(c.e), Names{"warp_stalls"});
  auto f = run(make_warp_stalls(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("memory fences"), std::string::npos) << f[0].title;
  EXPECT_EQ(f[0].actions, std::vector<std::string>{"remove_fences"});
  const double total = 0.96 * 16 / 0.158, collected = 1 + 48.9 + 0.04 + 0.09 + 0.01 + 3.43 + 0.7 + 1.21;
  EXPECT_NEAR(f[0].estimated_gain, std::min(1 / (1 - (1 - collected / total)), 5.0), 1e-6);
  // A 5 us kernel ramps up and drains too much for the identity: no membar reading.
  c.k().values["gpu__time_duration.sum"] = 5e3;
  for (const auto& g : run(make_warp_stalls(), c.e)) EXPECT_EQ(g.title.find("memory fences"), std::string::npos);
}

TEST(LatTools, SmallGridLeavesAFewIdleSmsAlone) {
  Case c;
  c.k().grid = {128, 1, 1};  // cuBLAS-style: 4 of 132 SMs idle, 3%
  c.k().values["gpu__time_duration.sum"] = 26e3;
  EXPECT_TRUE(run(make_small_grid(), c.e).empty());
  c.k().grid = {118, 1, 1};  // 14 idle: 10.6%
  EXPECT_EQ(run(make_small_grid(), c.e).size(), 1u);
}

TEST(LatTools, BranchDivergenceBelow24Threads) {
  Case c;
  c.k().values["smsp__thread_inst_executed_per_inst_executed.ratio"] = 11.2;
  c.k().values["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 55;
  auto f = run(make_branch_divergence(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_NEAR(f[0].estimated_gain, 1 / (1 - 0.65 * 0.55), 1e-9);
  EXPECT_EQ(f[0].actions, std::vector<std::string>{"reduce_divergence"});
  EXPECT_EQ(fired(c.e), Names{"branch_divergence"});
  c.k().block = {100, 1, 1};
  f = run(make_branch_divergence(), c.e);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(has_action(f[0], "tune_block_size"));
}

TEST(LatTools, BranchDivergenceQuietWhenUniformMissingOrMemoryBound) {
  Case c;
  c.k().values["smsp__thread_inst_executed_per_inst_executed.ratio"] = 24.5;
  EXPECT_TRUE(run(make_branch_divergence(), c.e).empty());
  c.k().values.erase("smsp__thread_inst_executed_per_inst_executed.ratio");
  EXPECT_TRUE(run(make_branch_divergence(), c.e).empty());
  Case m;
  m.k().values["smsp__thread_inst_executed_per_inst_executed.ratio"] = 11.2;
  m.e.roofline->cls = BottleneckClass::kMemoryBound;
  EXPECT_TRUE(run(make_branch_divergence(), m.e).empty());
}

TEST(LatTools, NothingFiresWithoutARoofline) {
  Case c;
  c.res().registers = 128;
  c.k().grid = {64, 1, 1};
  c.k().values["smsp__thread_inst_executed_per_inst_executed.ratio"] = 8;
  c.set_stalls({1.2, 0.1, 0.2, 0.0, 3.1, 0.3, 0.0, 0.1});
  c.e.roofline.reset();
  EXPECT_EQ(fired(c.e), Names{});
}

}  // namespace
}  // namespace kp::analysis
