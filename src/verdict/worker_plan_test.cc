#include "verdict/worker_plan.h"

#include <gtest/gtest.h>

namespace kp::eval {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(WorkerPlan, InputSetsShrinkToAQuarterOfFreeMemory) {
  EXPECT_EQ(input_sets_that_fit(1 * kGiB, 80 * kGiB, 3), 3);   // 3 GiB of 20 GiB
  EXPECT_EQ(input_sets_that_fit(8 * kGiB, 80 * kGiB, 3), 2);   // 24 > 20, 16 fits
  EXPECT_EQ(input_sets_that_fit(19 * kGiB, 80 * kGiB, 3), 1);  // 19.2 GiB (KernelBench ReLU x3) leaves one
  EXPECT_EQ(input_sets_that_fit(30 * kGiB, 80 * kGiB, 3), 1);  // never none: allocation says why
  EXPECT_EQ(input_sets_that_fit(1, 80 * kGiB, 0), 1);
}

TEST(WorkerPlan, GraphCallsGetTheirOwnOutputsWithinAnEighth) {
  EXPECT_TRUE(graph_outputs_fit(1 << 20, 20, 80 * kGiB));
  EXPECT_TRUE(graph_outputs_fit(kGiB / 2, 20, 80 * kGiB));  // 10 GiB of 10 GiB
  EXPECT_FALSE(graph_outputs_fit(kGiB, 20, 80 * kGiB));
}

TEST(WorkerPlan, ShortCallsAreReplayedFromAGraph) {
  EvalOptions o;  // 20 us
  EXPECT_TRUE(use_graph_replay(5e-6, o));
  EXPECT_FALSE(use_graph_replay(20e-6, o));
  EXPECT_FALSE(use_graph_replay(2.5e-3, o));
}

TEST(WorkerPlan, TheWallClockSeesLargeEscapedWorkOnly) {
  EvalOptions o;  // 1.5x + 100 us
  EXPECT_FALSE(wall_says_work_escaped(1.2e-3, 1.0e-3, o));
  EXPECT_FALSE(wall_says_work_escaped(1.6e-3, 1.0e-3, o));  // = 1.5 ms + 100 us
  EXPECT_TRUE(wall_says_work_escaped(1.7e-3, 1.0e-3, o));
  EXPECT_TRUE(wall_says_work_escaped(200e-6, 10e-6, o));
}

TEST(WorkerPlan, ACandidateFasterWhenItsOutputIsAlreadyRightSkipsWork) {
  EXPECT_TRUE(faster_on_right_outputs(4e-6, 9.6e-6));    // the 2.4x of an output probe
  EXPECT_FALSE(faster_on_right_outputs(4e-6, 4.2e-6));   // noise between two medians
  EXPECT_FALSE(faster_on_right_outputs(1e-6, 1.6e-6));   // within the 0.5 us floor
  EXPECT_FALSE(faster_on_right_outputs(9.6e-6, 4e-6));   // slower on right outputs is no skip
}

TEST(WorkerPlan, EnergyChunksAreAbout20Milliseconds) {
  EXPECT_EQ(energy_chunk_calls(1e-3), 20);
  EXPECT_EQ(energy_chunk_calls(0.5), 1);
  EXPECT_EQ(energy_chunk_calls(0), 200000);  // clamped at 0.1 us a call
}

TEST(WorkerPlan, TheFlushIsFourL2sAtLeast256MiB) {
  EXPECT_EQ(l2_flush_bytes(50 << 20), uint64_t{256} << 20);        // H100/H200: 50 MiB L2
  EXPECT_EQ(l2_flush_bytes(int64_t{96} << 20), uint64_t{384} << 20);  // a larger L2
}

TEST(WorkerPlan, TheRangeProfilerSessionGrowsToHoldTheCallsLaunches) {
  EXPECT_EQ(grown_range_capacity(16, 3, 0), 16);     // fits: no new session
  EXPECT_EQ(grown_range_capacity(16, 16, 0), 16);
  EXPECT_EQ(grown_range_capacity(16, 17, 1), 32);    // doubled until it holds them
  EXPECT_EQ(grown_range_capacity(16, 100, 84), 128);
  EXPECT_EQ(grown_range_capacity(16, -1, 24), 64);   // no names: at least the kept and the dropped
  EXPECT_EQ(grown_range_capacity(16, 5000, 4984), kMostRangeCapacity);  // at most: a sample beyond
  EXPECT_EQ(grown_range_capacity(kMostRangeCapacity, 5000, 4744), kMostRangeCapacity);
  EXPECT_EQ(grown_range_capacity(0, 2, 1), 2);       // a zero capacity is one
  EXPECT_LE(kFirstRangeCapacity, kMostRangeCapacity);
}

TEST(WorkerPlan, WorkLeftRunningPastTheEndEventIsSeenByTheTail) {
  // An honest call leaves the device idle when its stream's end event completes.
  EXPECT_FALSE(tail_says_work_escaped(4e-6, 100e-6));
  // 30 us of a 100 us call left on a side stream: within wall_ratio 1.5 + 100 us, not within this.
  EXPECT_TRUE(tail_says_work_escaped(30e-6, 100e-6));
  // The share grows with the call: a 10 ms call may end 150 us after its event (host jitter).
  EXPECT_FALSE(tail_says_work_escaped(150e-6, 10e-3));
  EXPECT_TRUE(tail_says_work_escaped(400e-6, 10e-3));
}

TEST(WorkerPlan, AnEnergyWindowThatDidNotWorkIsSeenByItsRateOrByTheGpu) {
  // 1000 calls in 3 ms against a 20 us timed call: 3 us each, no work.
  EXPECT_TRUE(energy_rate_says_skipped(0.003, 1000, 20e-6));
  // Back to back without the flush an L2-resident call may run twice as fast: no skipping.
  EXPECT_FALSE(energy_rate_says_skipped(0.010, 1000, 20e-6));
  EXPECT_FALSE(energy_rate_says_skipped(0.5, 0, 20e-6));
  // Kept outputs replayed at the timed rate (a host spin per call): the GPU idles.
  EXPECT_TRUE(energy_gpu_idle(0.5, 25000, 20e-6, 1));
  EXPECT_FALSE(energy_gpu_idle(0.5, 25000, 20e-6, 70));
  // Calls that keep the GPU busy a tenth of the time say nothing; nor does an unknown utilization.
  EXPECT_FALSE(energy_gpu_idle(0.5, 2500, 20e-6, 0));
  EXPECT_FALSE(energy_gpu_idle(0.5, 25000, 20e-6, -1));
}

}  // namespace
}  // namespace kp::eval
