// The measured lines a prompt gets beside the feedback text.
#include "driver/analyze_session.h"

#include <gtest/gtest.h>

namespace kp::driver {
namespace {

TEST(MeasuredSummary, GivesTheCallTheReferenceTheIdealAndEachKernel) {
  AnalyzePage page;
  EXPECT_EQ(measured_summary(page), "") << "nothing timed, nothing said";
  page.profile.eval.time.median = 2.0e-3;
  page.profile.eval.time.count = 41;
  page.profile.eval.reference_seconds = 3.0e-3;
  page.profile.eval.speedup_vs_reference = 1.5;
  page.evidence.ideal_bytes = 4.28e9;
  page.evidence.ceilings.dram_bytes_per_s = 4.28e12;
  for (int i = 0; i < 8; ++i) {
    profile::KernelMetrics k;
    k.name = i == 0 ? std::string(120, 'k') : "small_" + std::to_string(i);
    k.grid = {128, 2, 1};
    k.block = {256, 1, 1};
    k.values["gpu__time_duration.sum"] = 250000;  // ns
    k.values["dram__bytes_read.sum"] = 1e9;
    k.values["dram__bytes_write.sum"] = 0.5e9;
    page.evidence.kernels.push_back(k);
  }
  const std::string s = measured_summary(page);
  EXPECT_NE(s.find("MEASURED  2 ms per call (median of 41); the reference 3 ms (1.50x)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("ideal traffic 4280 MB: 1 ms at the datasheet DRAM roof of 4.28 TB/s, 50% of this call's time\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("DRAM traffic of the profiled kernels: 8000 MB read, 4000 MB written (2.80x the ideal)\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  kernel 1: " + std::string(87, 'k') + "..., 256 blocks of 256 threads, 0.25 ms\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  kernel 6: small_5"), std::string::npos);
  EXPECT_EQ(s.find("small_6"), std::string::npos) << "six kernels at most";
  EXPECT_NE(s.find("... and 2 more kernels"), std::string::npos);
}

// A native task's ideal is its [cost]; a KernelBench problem has none, and its ideal is the
// traffic its worker counted (inputs, outputs and parameters once), so that a reference moving
// several times that (unfused PyTorch ops) is told so.
TEST(EvidenceOf, TheIdealBytesAreTheTasksElseWhatTheKernelBenchWorkerCounted) {
  ProfilePage page;
  page.eval.report = eval::WorkerReport{};
  page.eval.report->io_bytes = 12.9e9;
  task::Task native;
  native.ideal_bytes = 1.07e9;
  EXPECT_DOUBLE_EQ(evidence_of(native, page).ideal_bytes, 1.07e9);
  task::Task kernelbench;
  EXPECT_DOUBLE_EQ(evidence_of(kernelbench, page).ideal_bytes, 12.9e9);
  page.eval.report.reset();
  EXPECT_DOUBLE_EQ(evidence_of(kernelbench, page).ideal_bytes, 0) << "no worker report, no ideal";
}

}  // namespace
}  // namespace kp::driver
