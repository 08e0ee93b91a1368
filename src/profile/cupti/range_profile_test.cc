#include "profile/cupti/range_profile.h"

#include "profile/metric_lists.h"
#include "tests/support/paths.h"
#include "util/strings.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace kp::profile {
namespace {

// The shape kp_rp_result_json writes (kp_rangeprof_api.h): two auto ranges, names from the
// launch callback, one value CUPTI could not evaluate (null).
constexpr const char* kTwoRanges = R"json({"chip":"GH100","passes":3,
 "metrics":["gpu__time_duration.sum","dram__bytes_read.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed"],
 "units":{"gpu__time_duration.sum":"nsecond","dram__bytes_read.sum":"byte",
          "sm__throughput.avg.pct_of_peak_sustained_elapsed":"%"},
 "ranges":[
  {"index":0,"range":"0","name":"saxpy","mangled":"saxpy",
   "values":{"gpu__time_duration.sum":186432,"dram__bytes_read.sum":537001984,
             "sm__throughput.avg.pct_of_peak_sustained_elapsed":null}},
  {"index":1,"range":"1","name":"strided_read(float const*, float*, int, int)",
   "mangled":"_Z12strided_readPKfPfii",
   "values":{"gpu__time_duration.sum":51200.5,"dram__bytes_read.sum":67108864,
             "sm__throughput.avg.pct_of_peak_sustained_elapsed":4.25}}],
 "launches":2,"dropped":0,"names_from":"callback",
 "timing_s":{"create":0.05,"begin":0.01,"end":0.125}})json";

TEST(RangeProfile, KernelsInLaunchOrderWithValuesAndUnits) {
  auto p = parse_range_profile(kTwoRanges);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->collector, Collector::kCupti);
  EXPECT_EQ(p->passes, 3);
  EXPECT_NEAR(p->wall_s, 0.185, 1e-12);
  ASSERT_EQ(p->metrics.size(), 3u);
  ASSERT_EQ(p->kernels.size(), 2u);
  const KernelMetrics& saxpy = p->kernels[0];
  EXPECT_EQ(saxpy.name, "saxpy");
  EXPECT_EQ(saxpy.launch_index, 0);
  EXPECT_DOUBLE_EQ(saxpy.get_or("dram__bytes_read.sum", 0), 537001984.0);
  EXPECT_EQ(saxpy.units.at("gpu__time_duration.sum"), "nsecond");
  // null (not evaluated) is missing, not zero
  EXPECT_FALSE(saxpy.get("sm__throughput.avg.pct_of_peak_sustained_elapsed").has_value());
  const KernelMetrics& strided = p->kernels[1];
  EXPECT_EQ(strided.name, "strided_read(float const*, float*, int, int)");
  EXPECT_EQ(strided.launch_index, 1);
  EXPECT_DOUBLE_EQ(strided.get_or("gpu__time_duration.sum", 0), 51200.5);
  EXPECT_DOUBLE_EQ(strided.get_or("sm__throughput.avg.pct_of_peak_sustained_elapsed", 0), 4.25);
}

TEST(RangeProfile, UserReplayTimesAndFallbackAreRead) {
  // kp_rp_collect's result: "replay":"user", its prepare and pass times in timing_s.
  auto p = parse_range_profile(
      R"({"passes":2,"ranges":[{"name":"k","values":{"gpu__time_duration.sum":5}}],"dropped":0,"replay":"user",)"
      R"("passes_run":2,"timing_s":{"create":0.1,"begin":0,"end":0.002,"prepare":0.004,"passes":0.02}})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->replay, "user");
  EXPECT_TRUE(p->replay_fallback.empty());
  EXPECT_NEAR(p->wall_s, 0.126, 1e-12);
  auto k = parse_range_profile(
      R"({"passes":2,"ranges":[],"dropped":0,"replay":"kernel","replay_fallback":"replay: pass 1 launched 1 kernels"})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->replay, "kernel");
  EXPECT_EQ(k->replay_fallback, "replay: pass 1 launched 1 kernels");
}

TEST(RangeProfile, TheSessionsCapacityAndItsGrowthAreRead) {
  // A worker whose session of 16 launches was too small for the call's 40: grown, collected again.
  auto p = parse_range_profile(
      R"({"passes":2,"ranges":[{"name":"k","values":{"gpu__time_duration.sum":5}}],"dropped":0,"replay":"user",)"
      R"("max_kernels":64,"counter_data_bytes":1048576,"capacity_grown_from":16})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->capacity, 64);
  EXPECT_EQ(p->capacity_grown_from, 16);
  EXPECT_EQ(p->unprofiled_launches, 0);
  auto q = parse_range_profile(R"({"passes":2,"ranges":[],"dropped":0,"max_kernels":16})");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->capacity_grown_from, 0);
}

TEST(RangeProfile, VectorFormGivesTheSameKernels) {
  auto k = parse_range_profile_json(kTwoRanges);
  ASSERT_TRUE(k.ok()) << k.error().message;
  ASSERT_EQ(k->size(), 2u);
  EXPECT_EQ((*k)[1].launch_index, 1);
}

TEST(RangeProfile, RangeNameWhenTheCallbackSawNoName) {
  auto k = parse_range_profile_json(
      R"({"passes":1,"ranges":[{"range":"0","name":"","values":{"gpu__time_duration.sum":5}}],"dropped":0})");
  ASSERT_TRUE(k.ok()) << k.error().message;
  ASSERT_EQ(k->size(), 1u);
  EXPECT_EQ((*k)[0].name, "0");
}

TEST(RangeProfile, NoKernelsIsAnEmptyProfile) {
  auto p = parse_range_profile(R"({"passes":2,"metrics":["a.sum"],"ranges":[],"launches":0,"dropped":0})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(p->kernels.empty());
}

TEST(RangeProfile, DroppedRangesLeaveTheFirstLaunchesAsASample) {
  auto p = parse_range_profile(
      R"({"passes":1,"ranges":[{"name":"k","values":{"a.sum":4}},{"name":"k","values":{"a.sum":5}}],"dropped":3})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->kernels.size(), 2u);
  EXPECT_EQ(p->kernels[1].get("a.sum"), 5);
  EXPECT_EQ(p->unprofiled_launches, 3);
  auto whole = parse_range_profile(R"({"passes":1,"ranges":[{"name":"k","values":{}}],"dropped":0})");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->unprofiled_launches, 0);
}

TEST(RangeProfile, MalformedResultsAreErrors) {
  for (const char* bad :
       {"", "not json", "[1,2]", "{}", R"({"ranges":5})", R"({"passes":1})", R"({"ranges":[{"name":"k"}]})",
        R"({"ranges":[{"name":"k","values":{"m":"high"}}]})", R"({"ranges":[7]})"}) {
    auto p = parse_range_profile(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_EQ(p.error().code, ErrorCode::kInvalidInput) << bad;
    }
  }
}

TEST(RangeProfile, FailureClassesFromTheLibraryTags) {
  EXPECT_EQ(range_prof_failure_of("privileges: cuptiProfilerGetCounterAvailability failed"),
            RangeProfFailure::kPrivileges);
  EXPECT_EQ(range_prof_failure_of("unknown-metric: not metrics of chip GH100: foo.sum"),
            RangeProfFailure::kUnknownMetric);
  EXPECT_EQ(range_prof_failure_of("dropped: 2 kernel launches"), RangeProfFailure::kDropped);
  EXPECT_FALSE(range_prof_failure_of("segfault").has_value());
  EXPECT_FALSE(range_prof_failure_of("weird: tag").has_value());
  for (auto f : {RangeProfFailure::kPrivileges, RangeProfFailure::kUnsupported, RangeProfFailure::kUnknownMetric,
                 RangeProfFailure::kNoContext, RangeProfFailure::kInvalidArgument, RangeProfFailure::kDropped,
                 RangeProfFailure::kCupti}) {
    EXPECT_EQ(range_prof_failure_from_string(to_string(f)), f) << to_string(f);
  }
}

TEST(RangeProfile, ErrorCodesFollowWhatTheCallerMustDo) {
  Error e = range_prof_error("privileges: counters restricted; run as root");
  EXPECT_EQ(e.code, ErrorCode::kUnavailable);
  EXPECT_NE(e.message.find("run as root"), std::string::npos);
  EXPECT_EQ(range_prof_error("unsupported: vGPU").code, ErrorCode::kUnavailable);
  EXPECT_EQ(range_prof_error("unknown-metric: x.sum").code, ErrorCode::kInvalidInput);
  EXPECT_EQ(range_prof_error("no-context: none").code, ErrorCode::kInternal);
  EXPECT_EQ(range_prof_error("cupti: cuptiRangeProfilerStart failed").code, ErrorCode::kTool);
  EXPECT_EQ(range_prof_error("untagged").code, ErrorCode::kTool);
}

// The probe's default list (tests/data/cupti/stage1_metrics.txt) is the stage-1 list.
TEST(RangeProfile, ProbeMetricFileIsTheStage1List) {
  auto text = read_file((testing::test_data_dir() / "cupti" / "stage1_metrics.txt").string());
  ASSERT_TRUE(text.ok()) << text.error().message;
  std::vector<std::string> names;
  for (const std::string& line : split(*text, '\n')) {
    std::string t(trim(line));
    if (!t.empty() && t[0] != '#') names.push_back(t);
  }
  EXPECT_EQ(names, stage1_metrics()) << "regenerate tests/data/cupti/stage1_metrics.txt from metric_lists.cc";
}

// tests/data/cupti/stage2_metrics.txt holds every stage-2 family's metrics, in order, so that
// the probe (--each) can check on a GPU that the Range Profiler accepts each of them.
TEST(RangeProfile, ProbeStage2FileHoldsEveryFamily) {
  auto text = read_file((testing::test_data_dir() / "cupti" / "stage2_metrics.txt").string());
  ASSERT_TRUE(text.ok()) << text.error().message;
  std::vector<std::string> names, want;
  for (const std::string& line : split(*text, '\n')) {
    std::string t(trim(line));
    if (!t.empty() && t[0] != '#') names.push_back(t);
  }
  for (const auto& f : stage2_families())
    for (const auto& m : stage2_metrics(f)) want.push_back(m);
  EXPECT_EQ(names, want) << "regenerate tests/data/cupti/stage2_metrics.txt from metric_lists.cc";
}

// Real output of kp_rangeprof_probe on the H200 (tests/data/cupti/run_probe.sh's probe.txt),
// when it has been captured: every session's result parses; the overflow session's is refused.
TEST(RangeProfile, ParsesTheProbeOutputCapturedOnTheH200) {
  std::filesystem::path capture = testing::test_data_dir() / "cupti" / "probe_h200.txt";
  if (!std::filesystem::exists(capture)) {
    GTEST_SKIP() << capture << " not captured yet: run tests/data/cupti/run_probe.sh on the GPU machine and copy "
                 << "its probe.txt there";
  }
  auto text = read_file(capture.string());
  ASSERT_TRUE(text.ok()) << text.error().message;
  int sessions = 0;
  for (const std::string& line : split_lines(*text)) {
    if (line.rfind("KP_RP_JSON ", 0) != 0) continue;
    size_t sp = line.find(' ', 11);
    ASSERT_NE(sp, std::string::npos) << line;
    std::string label = line.substr(11, sp - 11);
    auto p = parse_range_profile(line.substr(sp + 1));
    if (label == "overflow") {
      // Two launches into a session of one: the first is kept, the second counted as missing.
      ASSERT_TRUE(p.ok()) << p.error().message;
      EXPECT_EQ(p->kernels.size(), 1u);
      EXPECT_EQ(p->unprofiled_launches, 1) << "a result with dropped launches must not pass for a whole profile";
      continue;
    }
    ASSERT_TRUE(p.ok()) << label << ": " << p.error().message;
    ++sessions;
    EXPECT_GE(p->passes, 1) << label;
    ASSERT_FALSE(p->kernels.empty()) << label;
    for (const KernelMetrics& k : p->kernels) {
      EXPECT_FALSE(k.name.empty()) << label;
      EXPECT_GT(k.get_or("gpu__time_duration.sum", 0), 0) << label << " " << k.name;
    }
  }
  EXPECT_GE(sessions, 4) << "pair, pair_again, cache and one_ms";
}

}  // namespace
}  // namespace kp::profile
