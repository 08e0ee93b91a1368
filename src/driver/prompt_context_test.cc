// What the planner, coder and debugger are told, from a tree and its nodes' facts: the feedback
// by mode, the history of a node, the lessons, and the facts kept in the store.
#include "driver/prompt_context.h"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "sys/temp_dir.h"

namespace kp::driver {
namespace {

TEST(PromptContext, FeedbackModesRoundTripAndAnyOtherNameIsRefused) {
  for (FeedbackMode m : {FeedbackMode::kTools, FeedbackMode::kRawMetrics, FeedbackMode::kNone}) {
    auto back = feedback_mode_from_string(to_string(m));
    ASSERT_TRUE(back.ok()) << to_string(m);
    EXPECT_EQ(*back, m);
  }
  // The --feedback flag's and best.json's names.
  EXPECT_STREQ(to_string(FeedbackMode::kRawMetrics), "raw-metrics");
  EXPECT_STREQ(to_string(FeedbackMode::kTools), "tools");
  EXPECT_STREQ(to_string(FeedbackMode::kNone), "none");
  auto bad = feedback_mode_from_string("raw_metrics");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(bad.error().message, "--feedback raw_metrics: expected tools, raw-metrics or none");
}

NodeFacts facts(std::string outcome, std::string feedback = "", std::string raw = "") {
  NodeFacts f;
  f.outcome = std::move(outcome);
  f.feedback = std::move(feedback);
  f.raw_metrics = std::move(raw);
  f.files = {"__global__ void k() {}\n", ""};
  return f;
}

// seed (2 ms) -> fuse (1 ms) -> {vectorize: incorrect, tile: in flight with its direction, one in
// flight not yet planned}
struct Landscape {
  search::Tree tree{{true, 2e-3, 0}, {true, 4e-3, 0}};
  int fuse = 0, vectorize = 0, tile = 0, unplanned = 0;
  Landscape() {
    fuse = tree.add(0, {search::EdgeKind::kIdea, "fuse the two kernels"});
    tree.measure(fuse, {true, 1e-3, 0});
    vectorize = tree.add(fuse, {search::EdgeKind::kIdea, "vectorize the loads"});
    tree.measure(vectorize, {false, 0, 0});
    tile = tree.add(fuse, {search::EdgeKind::kIdea, "tile in shared memory"});
    unplanned = tree.add(fuse, {search::EdgeKind::kIdea, ""});
  }
  PromptContext context(FeedbackMode mode, std::string memory = "") const {
    agent::TaskBrief brief;
    brief.name = "transpose";
    PromptContext c(brief, agent::TaskKind::kNative, mode, std::move(memory));
    c.add(facts("ok", "SEED FEEDBACK", "seed raw"));
    c.add(facts("ok", "FUSED FEEDBACK", "fused raw"));
    c.add(facts("incorrect"));
    c.grow(tree.size());
    return c;
  }
};

TEST(PromptContext, TheModeChoosesWhatOfTheProfileThePromptsGet) {
  Landscape l;
  EXPECT_EQ(l.context(FeedbackMode::kTools).feedback_for(l.fuse), "FUSED FEEDBACK");
  EXPECT_EQ(l.context(FeedbackMode::kRawMetrics).feedback_for(l.fuse), "fused raw");
  EXPECT_EQ(l.context(FeedbackMode::kNone).feedback_for(l.fuse), "");
  EXPECT_TRUE(l.context(FeedbackMode::kRawMetrics).profiles());
  EXPECT_FALSE(l.context(FeedbackMode::kNone).profiles()) << "nothing is profiled for no feedback";
}

TEST(PromptContext, TheHistoryIsThePathThenWhatWasTriedAndWhatIsInFlight) {
  Landscape l;
  const PromptContext c = l.context(FeedbackMode::kTools);
  EXPECT_EQ(c.history(l.tree, l.fuse),
            "- (how this candidate was made) fuse the two kernels: ok, 1 ms, 2.00x the seed\n"
            "- (tried from this candidate) vectorize the loads: incorrect\n"
            "- (being tried now from this candidate) tile in shared memory\n");
  EXPECT_EQ(c.history(l.tree, 0), "- (tried from this candidate) fuse the two kernels: ok, 1 ms, 2.00x the seed\n");
  EXPECT_EQ(c.repair_direction(l.tree, l.vectorize), "repair the incorrect of: vectorize the loads");
  const agent::TaskBrief b = c.brief_for(l.fuse);
  EXPECT_EQ(b.name, "transpose");
  EXPECT_NE(b.current.find("__global__ void k()"), std::string::npos) << b.current;
}

TEST(PromptContext, ThePlannerGetsTheRunsLatestLessonsThenTheMemorys) {
  Landscape l;
  std::vector<store::Lesson> all;
  for (int i = 0; i < 14; ++i)
    all.push_back({"", "", "memory-bound", fmt::format("idea {}", i), "", "ok", 2.0, 0, "1 ms -> 0.5 ms"});
  const std::string text = l.context(FeedbackMode::kTools, "- earlier\n").lessons(all);
  EXPECT_EQ(text.find("idea 1:"), std::string::npos) << "the oldest two are left out";
  EXPECT_EQ(text.rfind("- idea 2: ok, 0.50x the time of its parent (memory-bound); 1 ms -> 0.5 ms\n", 0), 0u) << text;
  EXPECT_NE(text.find("- idea 13:"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - std::string("From earlier runs:\n- earlier\n").size()),
            "From earlier runs:\n- earlier\n");
  EXPECT_EQ(l.context(FeedbackMode::kTools).lessons({}), "") << "no lessons, no memory: nothing";

  store::Lesson other{"softmax", "", "", "fuse", "", "incorrect", 0, 0.5, ""};
  EXPECT_EQ(lesson_line(other), "- [softmax] fuse: incorrect, 2.00x the energy (class unknown)");
}

TEST(PromptContext, TheFactsKeptInTheStoreComeBack) {
  NodeFacts f = facts("ok", "feedback text", "raw text");
  f.diagnostics = "none";
  f.bottleneck_class = "memory-bound";
  store::EvaluationRow row{7, "incorrect", "output 0 differs", 0, 0, 0, facts_json(f, R"({"speedup": 2})")};
  const auto j = nlohmann::json::parse(row.report_json);
  EXPECT_EQ(j["eval"]["speedup"], 2);
  NodeFacts back;
  read_facts(row, back);
  EXPECT_EQ(back.outcome, "incorrect");
  EXPECT_EQ(back.reason, "output 0 differs");
  EXPECT_EQ(back.feedback, "feedback text");
  EXPECT_EQ(back.raw_metrics, "raw text");
  EXPECT_EQ(back.diagnostics, "none");
  EXPECT_EQ(back.bottleneck_class, "memory-bound");
  EXPECT_EQ(nlohmann::json::parse(facts_json(f, ""))["eval"], nlohmann::json::object());

  NodeFacts kept = facts("ok", "still here");
  read_facts({1, "ok", "", 0, 0, 0, "not json"}, kept);
  EXPECT_EQ(kept.feedback, "still here") << "a report that is not JSON leaves the facts as they are";

  Analysis a{"FEEDBACK", {"roofline"}, "latency-bound", "RAW", {}};
  NodeFacts analyzed;
  analyzed.set_analysis(a);
  EXPECT_EQ(analyzed.feedback, "FEEDBACK");
  EXPECT_EQ(analyzed.raw_metrics, "RAW");
  EXPECT_EQ(analyzed.bottleneck_class, "latency-bound");
}

TEST(PromptContext, TheMemorysLessonsAreChosenByClassAndCategory) {
  auto dir = sys::TempDir::create("kp-prompt-memory-").value();
  const auto memory = dir.path() / "memory.db";
  std::vector<std::string> said;
  auto say = [&](const std::string& s) { said.push_back(s); };
  EXPECT_EQ(memory_lessons_text(memory, "memory-bound", "memory", 8, say), "") << "no memory yet";
  {
    auto mem = store::RunStore::open(memory).value();
    ASSERT_TRUE(mem.add_lesson({"softmax", "memory", "memory-bound", "vectorize", "", "ok", 1.5, 0, ""}).ok());
    ASSERT_TRUE(mem.add_lesson({"gemm", "compute", "compute-bound", "use tensor cores", "", "ok", 3, 0, ""}).ok());
  }
  const std::string one = memory_lessons_text(memory, "memory-bound", "memory", 1, say);
  EXPECT_EQ(one, "- [softmax] vectorize: ok, 0.67x the time of its parent (memory-bound)\n");
  EXPECT_EQ(memory_lessons_text(memory, "memory-bound", "memory", 0, say), "") << "a limit of 0: none";
  EXPECT_EQ(memory_lessons_text({}, "memory-bound", "memory", 8, say), "") << "no memory configured";
  EXPECT_TRUE(said.empty());
}

}  // namespace
}  // namespace kp::driver
