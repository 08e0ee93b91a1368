#include "analysis/registry.h"

#include <set>

#include <gtest/gtest.h>

#include "profile/metric_lists.h"

namespace kp::analysis {
namespace {

TEST(Registry, BuiltinsAreAtLeastTwentyWithUniqueNamesAndVerifiedMetrics) {
  ToolRegistry r = ToolRegistry::builtin();
  auto names = r.names();
  EXPECT_GE(names.size(), 20u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  // Stage 2 may only ask for metrics the Range Profiler accepted on the H200.
  std::set<std::string> verified(profile::stage1_metrics().begin(), profile::stage1_metrics().end());
  for (const auto& f : profile::stage2_families())
    for (const auto& m : profile::stage2_metrics(f)) verified.insert(m);
  for (const Tool* t : r.all()) {
    EXPECT_FALSE(t->spec().title.empty()) << t->spec().name;
    EXPECT_FALSE(t->spec().about.empty()) << t->spec().name;
    EXPECT_EQ(t->spec().about.find("placeholder"), std::string::npos) << t->spec().name << " is still a placeholder";
    for (const auto& m : t->spec().metrics) EXPECT_TRUE(verified.count(m)) << t->spec().name << " asks for " << m;
  }
}

class Fixed final : public Tool {
 public:
  explicit Fixed(ToolSpec s) : spec_(std::move(s)) {}
  const ToolSpec& spec() const override { return spec_; }
  std::vector<Finding> run(const Evidence&) const override {
    Finding f;
    f.title = "fired";
    return {f};
  }

 private:
  ToolSpec spec_;
};

std::unique_ptr<Tool> tool(std::string name, std::vector<BottleneckClass> classes, std::vector<std::string> metrics,
                           bool needs_trace = false) {
  ToolSpec s;
  s.name = std::move(name);
  s.title = s.name;
  s.classes = std::move(classes);
  s.metrics = std::move(metrics);
  s.needs_trace = needs_trace;
  return std::make_unique<Fixed>(s);
}

TEST(Registry, RejectsBadAndDuplicateNames) {
  ToolRegistry r;
  EXPECT_TRUE(r.add(tool("mine", {}, {})).ok());
  auto dup = r.add(tool("mine", {}, {}));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("already exists"), std::string::npos);
  auto bad = r.add(tool("Not-Snake", {}, {}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("snake_case"), std::string::npos);
}

TEST(Registry, StageTwoRunsOnlyTheToolsTheClassCallsForAndCollectsTheirUnion) {
  ToolRegistry r;
  ASSERT_TRUE(r.add(tool("mem_one", {BottleneckClass::kMemoryBound}, {"b.sum", "a.sum"})).ok());
  ASSERT_TRUE(r.add(tool("mem_two", {BottleneckClass::kMemoryBound}, {"a.sum", "c.sum"})).ok());
  ASSERT_TRUE(r.add(tool("compute", {BottleneckClass::kComputeBound}, {"d.sum"})).ok());
  ASSERT_TRUE(r.add(tool("any", {}, {})).ok());
  Evidence e;
  RooflineResult rr;
  rr.cls = BottleneckClass::kMemoryBound;
  e.roofline = rr;
  auto chosen = r.select(e);
  std::vector<std::string> names;
  for (const auto* t : chosen) names.push_back(t->spec().name);
  EXPECT_EQ(names, (std::vector<std::string>{"any", "mem_one", "mem_two"}));
  EXPECT_EQ(metrics_for(chosen), (std::vector<std::string>{"a.sum", "b.sum", "c.sum"}));
  EXPECT_EQ(metrics_for(chosen, {"a.sum"}), (std::vector<std::string>{"b.sum", "c.sum"}));  // stage 1 has it
}

TEST(Registry, ToolsByNameAndUnknownNames) {
  ToolRegistry r;
  ASSERT_TRUE(r.add(tool("one", {}, {})).ok());
  ASSERT_TRUE(r.add(tool("two", {}, {})).ok());
  auto got = r.by_name({"two", "one"});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0]->spec().name, "two");
  auto bad = r.by_name({"three"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("three"), std::string::npos);
  EXPECT_NE(bad.error().message.find("one, two"), std::string::npos);
}

TEST(Registry, ToolsWhoseEvidenceIsMissingFindNothing) {
  ToolRegistry r;
  ASSERT_TRUE(r.add(tool("traced", {}, {}, /*needs_trace=*/true)).ok());
  ASSERT_TRUE(r.add(tool("plain", {}, {})).ok());
  Evidence e;  // no trace
  auto fs = run_tools(r.all(), e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].tool, "plain");  // filled in from the spec
}

TEST(Registry, KnownActionsAreSortedAndChecked) {
  EXPECT_TRUE(is_known_action("coalesce"));
  EXPECT_TRUE(is_known_action("use_tensor_cores"));
  EXPECT_FALSE(is_known_action("make_it_fast"));
}

}  // namespace
}  // namespace kp::analysis
