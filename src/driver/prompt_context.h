// What the model loop's roles are told (driver/model_search.h): the planner gets a node's
// feedback, the path that made it and what was tried from it, this run's last lessons and those
// of earlier runs; the coder the node's files and feedback; the debugger a failure's
// diagnostics. All of it is built from the facts of the nodes, which are kept in the store
// (NodeFacts, in each evaluation's report_json), so that a resumed run prompts the same.
//
// Pure text: nothing here calls a model, evaluates or writes. Not thread-safe: the loop's
// orchestrating thread renders every prompt.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agents.h"
#include "driver/generate_session.h"
#include "search/tree.h"
#include "store/run_store.h"

namespace kp::driver {

// What the planner and coder see of a node's profile (--feedback, OptimizeOptions::feedback):
//   kTools       the feedback operator's text
//   kRawMetrics  the measured lines and every raw counter of the first kernels
//   kNone        nothing, and nothing is profiled for it
// The rest of the search is the same, so that the three can be compared.
enum class FeedbackMode { kTools, kRawMetrics, kNone };
const char* to_string(FeedbackMode m);  // "tools", "raw-metrics", "none"
// kInvalidInput "--feedback X: expected tools, raw-metrics or none" for any other name.
Result<FeedbackMode> feedback_mode_from_string(std::string_view s);

// What the loop knows of a node beyond its measurement: its files and what its evaluation and
// analysis said. Kept in the evaluation's report_json, so that a resumed run prompts the same.
struct NodeFacts {
  int64_t db_id = 0;  // the node in the store
  int64_t candidate = 0;
  agent::CandidateFiles files;
  std::string outcome = "ok";  // eval::Outcome by name
  std::string reason;
  std::string diagnostics;  // a failure's, for the debugger
  std::string feedback;     // analyze's text on a passing candidate
  std::string raw_metrics;  // its measured lines and raw counters
  std::string bottleneck_class;
  // A passing candidate the analysis could not profile: why (the run's log, the prompts and the
  // report say so, never an empty section that reads as "nothing to say").
  std::string unprofiled;

  void set_analysis(const Analysis& a);  // feedback, raw_metrics and bottleneck_class
};

// The evaluation's report_json: `record` (the verdict as JSON; empty: {}) under "eval", with the
// facts beside it.
std::string facts_json(const NodeFacts& facts, const std::string& record);
// The outcome and reason of `row`, and the facts its report_json keeps (left as they are when
// it is not a JSON object).
void read_facts(const store::EvaluationRow& row, NodeFacts& facts);

// "- [task] direction: outcome, 1.50x the time of its parent (class); evidence"
std::string lesson_line(const store::Lesson& lesson);

// The lessons of earlier runs for the planner, chosen by the seed's bottleneck class and the
// task's category from the memory store at `memory` (at most `limit`), one lesson_line each.
// Empty when there is no memory or limit is 0; a memory that cannot be read is said through
// `say` and gives none.
std::string memory_lessons_text(const std::filesystem::path& memory, const std::string& bottleneck_class,
                                const std::string& task_category, int limit,
                                const std::function<void(const std::string&)>& say);

class PromptContext {
 public:
  static constexpr size_t kRunLessons = 12;  // the run's lessons the planner gets, the latest

  // `brief`: the task's (task_brief); `memory_lessons`: memory_lessons_text, as kept at the start.
  PromptContext(agent::TaskBrief brief, agent::TaskKind kind, FeedbackMode mode, std::string memory_lessons);

  FeedbackMode mode() const { return mode_; }
  // Whether a passing candidate is profiled for the prompts.
  bool profiles() const { return mode_ != FeedbackMode::kNone; }

  // The facts by node id in the tree: a node added to the tree gets empty facts with grow().
  NodeFacts& facts(int node) { return facts_.at(static_cast<size_t>(node)); }
  const NodeFacts& facts(int node) const { return facts_.at(static_cast<size_t>(node)); }
  void add(NodeFacts f) { facts_.push_back(std::move(f)); }
  void grow(size_t nodes) { facts_.resize(std::max(nodes, facts_.size())); }

  // The brief with the node's files as the current candidate.
  agent::TaskBrief brief_for(int node) const;
  // The node's feedback as the mode shows it (empty with kNone); for a node the analysis could
  // not profile, that it has none and why.
  std::string feedback_for(int node) const;
  // The node's measured time for the planner: its median, against the reference and the seed.
  static std::string measured(const search::Tree& tree, int node, double reference_s);
  // What was tried on the way to `node` and from it, for the planner: the path from the seed,
  // its children measured with their results, and those in flight with their direction once the
  // planner gave it ("being tried now"), so that the next plan is another. In waves
  // (OptimizeOptions::waves) a prompt must not depend on how far its wave's other children got:
  // in_flight false leaves out the children in flight, and only children before node
  // `measured_before` (the wave's first) are shown measured.
  std::string history(const search::Tree& tree, int node, bool in_flight = true,
                      int measured_before = std::numeric_limits<int>::max()) const;
  // The run's latest kRunLessons lessons (`in_order`: all, as they were added), then the memory's.
  std::string lessons(const std::vector<store::Lesson>& in_order) const;
  // The direction of a repair child of the failing `node`.
  std::string repair_direction(const search::Tree& tree, int node) const;

 private:
  agent::TaskBrief brief_;
  agent::TaskKind kind_;
  FeedbackMode mode_;
  std::string memory_lessons_;
  std::vector<NodeFacts> facts_;
};

}  // namespace kp::driver
