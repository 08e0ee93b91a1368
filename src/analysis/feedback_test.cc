#include "analysis/feedback.h"

#include <gtest/gtest.h>

namespace kp::analysis {
namespace {

Finding finding(std::string tool, std::string kernel, Severity s, double gain, std::vector<std::string> actions) {
  Finding f;
  f.tool = std::move(tool);
  f.kernel = std::move(kernel);
  f.severity = s;
  f.estimated_gain = gain;
  f.title = f.tool + " on " + f.kernel;
  f.evidence = {evidence(f.tool + ".metric", gain * 10, ">", 5)};
  f.guidance = "change " + f.tool;
  f.actions = std::move(actions);
  return f;
}

Evidence memory_bound() {
  Evidence e;
  RooflineResult r;
  r.cls = BottleneckClass::kMemoryBound;
  r.limiter = "DRAM";
  r.sol_fraction = 0.42;
  r.headroom = 1 / 0.42;
  e.roofline = r;
  return e;
}

TEST(Feedback, MainBottleneckFirstThenBySeverityAndGain) {
  std::vector<Finding> fs = {finding("narrow_loads", "k", Severity::kWarning, 1.3, {"vectorize_loads"}),
                             finding("uncoalesced_access", "k", Severity::kCritical, 2.0, {"coalesce"}),
                             finding("dram_over_ideal", "k", Severity::kWarning, 1.8, {"fuse"})};
  Feedback fb = make_feedback(memory_bound(), fs);
  ASSERT_EQ(fb.ranked.size(), 3u);
  EXPECT_EQ(fb.ranked[0].tool, "uncoalesced_access");
  EXPECT_EQ(fb.ranked[1].tool, "dram_over_ideal");  // same severity: the larger gain first
  EXPECT_EQ(fb.ranked[2].tool, "narrow_loads");
  EXPECT_EQ(fb.text.rfind("MAIN BOTTLENECK  memory-bound: DRAM at 42% of its ceiling", 0), 0u) << fb.text;
  EXPECT_LT(fb.text.find("uncoalesced_access on k"), fb.text.find("dram_over_ideal on k"));
  EXPECT_NE(fb.text.find("evidence: uncoalesced_access.metric = 20.0 > 5.00"), std::string::npos) << fb.text;
  EXPECT_NE(fb.text.find("actions: coalesce"), std::string::npos);
}

TEST(Feedback, OneToolOnOneKernelIsOnePoint) {
  std::vector<Finding> fs = {finding("register_spills", "k", Severity::kInfo, 1.1, {"reduce_registers"}),
                             finding("register_spills", "k", Severity::kWarning, 1.4, {"reduce_registers"})};
  Feedback fb = make_feedback(memory_bound(), fs);
  ASSERT_EQ(fb.ranked.size(), 1u);
  EXPECT_EQ(fb.ranked[0].severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(fb.ranked[0].estimated_gain, 1.4);
  EXPECT_EQ(fb.ranked[0].evidence.size(), 2u);  // both values kept
}

TEST(Feedback, ToolsAskingForTheSameChangeOnOneKernelAreFolded) {
  std::vector<Finding> fs = {finding("uncoalesced_access", "k", Severity::kCritical, 2.0, {"coalesce"}),
                             finding("low_l2_hit_rate", "k", Severity::kWarning, 1.2, {"coalesce", "tile_for_l2"}),
                             finding("low_l2_hit_rate", "other", Severity::kWarning, 1.2, {"coalesce"})};
  Feedback fb = make_feedback(memory_bound(), fs);
  ASSERT_EQ(fb.ranked.size(), 2u);  // the one on "other" stays its own point
  EXPECT_EQ(fb.ranked[0].tool, "uncoalesced_access");
  bool also = false;
  for (const auto& e : fb.ranked[0].evidence) also |= e.metric == "also low_l2_hit_rate";
  EXPECT_TRUE(also);
  EXPECT_EQ(fb.ranked[0].actions, (std::vector<std::string>{"coalesce", "tile_for_l2"}));
}

TEST(Feedback, DeterministicWhateverTheInputOrder) {
  std::vector<Finding> fs = {finding("a_tool", "k1", Severity::kWarning, 1.5, {"fuse"}),
                             finding("b_tool", "k2", Severity::kWarning, 1.5, {"coalesce"}),
                             finding("c_tool", "k1", Severity::kCritical, 1.1, {"avoid_fp64"})};
  std::vector<Finding> reversed(fs.rbegin(), fs.rend());
  EXPECT_EQ(make_feedback(memory_bound(), fs).text, make_feedback(memory_bound(), reversed).text);
}

TEST(Feedback, InfoAndOverflowAreCountedNotShown) {
  std::vector<Finding> fs;
  for (int i = 0; i < 8; ++i)
    fs.push_back(finding("tool_" + std::to_string(i), "k", Severity::kWarning, 1 + i * 0.1, {}));
  fs.push_back(finding("quiet_tool", "k", Severity::kInfo, 1, {}));
  FeedbackOptions o;
  o.max_points = 3;
  Feedback fb = make_feedback(memory_bound(), fs, o);
  EXPECT_EQ(fb.ranked.size(), 9u);
  EXPECT_NE(fb.text.find("3. [warning]"), std::string::npos);
  EXPECT_EQ(fb.text.find("4. [warning]"), std::string::npos);
  EXPECT_NE(fb.text.find("(6 more findings of lower rank"), std::string::npos) << fb.text;
}

TEST(Feedback, NothingFoundSaysSo) {
  Feedback fb = make_feedback(memory_bound(), {});
  EXPECT_NE(fb.text.find("No tool found"), std::string::npos);
}

}  // namespace
}  // namespace kp::analysis
