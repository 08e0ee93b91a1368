#include "driver/prompt_context.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(FeedbackMode m) {
  switch (m) {
    case FeedbackMode::kTools: return "tools";
    case FeedbackMode::kRawMetrics: return "raw-metrics";
    case FeedbackMode::kNone: return "none";
  }
  return "?";
}

Result<FeedbackMode> feedback_mode_from_string(std::string_view s) {
  for (FeedbackMode m : {FeedbackMode::kTools, FeedbackMode::kRawMetrics, FeedbackMode::kNone})
    if (s == to_string(m)) return m;
  return make_error(ErrorCode::kInvalidInput, fmt::format("--feedback {}: expected tools, raw-metrics or none", s));
}

void NodeFacts::set_analysis(const Analysis& a) {
  feedback = a.feedback;
  raw_metrics = a.raw_metrics;
  bottleneck_class = a.bottleneck_class;
}

std::string facts_json(const NodeFacts& f, const std::string& record) {
  json j = {{"eval", json::parse(record.empty() ? "{}" : record, nullptr, false)},
            {"diagnostics", f.diagnostics},
            {"feedback", f.feedback},
            {"raw_metrics", f.raw_metrics},
            {"bottleneck_class", f.bottleneck_class}};
  if (!f.unprofiled.empty()) j["unprofiled"] = f.unprofiled;
  return j.dump();
}

void read_facts(const store::EvaluationRow& row, NodeFacts& f) {
  f.outcome = row.outcome;
  f.reason = row.reason;
  const json j = json::parse(row.report_json, nullptr, false);
  if (!j.is_object()) return;
  f.diagnostics = j.value("diagnostics", "");
  f.feedback = j.value("feedback", "");
  f.raw_metrics = j.value("raw_metrics", "");
  f.bottleneck_class = j.value("bottleneck_class", "");
  f.unprofiled = j.value("unprofiled", "");
}

std::string lesson_line(const store::Lesson& l) {
  std::string result = l.outcome;
  if (l.time_ratio > 0) result += fmt::format(", {:.2f}x the time of its parent", 1.0 / l.time_ratio);
  if (l.energy_ratio > 0) result += fmt::format(", {:.2f}x the energy", 1.0 / l.energy_ratio);
  return fmt::format("- {}{}: {} ({}){}", l.task.empty() ? "" : "[" + l.task + "] ", l.direction, result,
                     l.bottleneck_class.empty() ? "class unknown" : l.bottleneck_class,
                     l.evidence.empty() ? "" : "; " + l.evidence);
}

std::string memory_lessons_text(const fs::path& memory, const std::string& bottleneck_class,
                                const std::string& task_category, int limit,
                                const std::function<void(const std::string&)>& say) {
  std::string out;
  std::error_code ec;
  if (memory.empty() || limit <= 0 || !fs::exists(memory, ec)) return out;
  if (auto mem = store::RunStore::open(memory, store::RunStore::Access::kReader)) {
    if (auto ls = mem->lessons(bottleneck_class, task_category, limit))
      for (const auto& l : *ls) out += lesson_line(l) + "\n";
  } else if (say) {
    say("memory: not read (" + mem.error().message + ")");
  }
  return out;
}

namespace {

std::string result_words(const search::Node& n, const search::Node& root, const std::string& outcome) {
  if (!n.measured) return "in flight";
  if (!n.measured->ok) return outcome;
  return fmt::format("ok, {:.4g} ms, {:.2f}x the seed", n.measured->seconds * 1e3,
                     root.measured->seconds / n.measured->seconds);
}

}  // namespace

PromptContext::PromptContext(agent::TaskBrief brief, agent::TaskKind kind, FeedbackMode mode,
                             std::string memory_lessons)
    : brief_(std::move(brief)), kind_(kind), mode_(mode), memory_lessons_(std::move(memory_lessons)) {}

agent::TaskBrief PromptContext::brief_for(int node) const {
  agent::TaskBrief b = brief_;
  b.current = agent::show_files(facts(node).files, kind_);
  return b;
}

std::string PromptContext::feedback_for(int node) const {
  const NodeFacts& f = facts(node);
  if (mode_ != FeedbackMode::kNone && f.feedback.empty() && !f.unprofiled.empty())
    return "No profile of this candidate: " + f.unprofiled +
           ". Plan from its code and its measured time; say in \"why\" what you expect the bottleneck to be.";
  switch (mode_) {
    case FeedbackMode::kTools: return f.feedback;
    case FeedbackMode::kRawMetrics: return f.raw_metrics;
    case FeedbackMode::kNone: return std::string();
  }
  return std::string();
}

std::string PromptContext::measured(const search::Tree& t, int node, double reference_s) {
  const search::Node& n = t.node(node);
  if (!n.measured || !n.measured->ok || n.measured->seconds <= 0) return "";
  std::string out = fmt::format("{:.4g} ms per call (the median of its timed calls, L2 flushed before each)",
                                n.measured->seconds * 1e3);
  if (reference_s > 0)
    out += fmt::format("; the reference takes {:.4g} ms: this candidate is {:.2f}x as fast", reference_s * 1e3,
                       reference_s / n.measured->seconds);
  const search::Node& root = t.node(0);
  if (node != 0 && root.measured && root.measured->ok && root.measured->seconds > 0)
    out += fmt::format(", {:.2f}x the seed", root.measured->seconds / n.measured->seconds);
  if (n.measured->joules > 0) out += fmt::format("; {:.3g} J per call", n.measured->joules);
  return out;
}

std::string PromptContext::history(const search::Tree& t, int id, bool in_flight, int measured_before) const {
  std::vector<int> path;
  for (int n = id; n > 0; n = t.node(n).parent) path.push_back(n);
  std::string out;
  for (auto it = path.rbegin(); it != path.rend(); ++it)
    out += fmt::format("- (how this candidate was made) {}: {}\n", t.node(*it).via.text,
                       result_words(t.node(*it), t.node(0), facts(*it).outcome));
  std::vector<int> children = t.node(id).children;
  if (!in_flight)  // waves: in the store's order, which a resumed run's tree has too
    std::stable_sort(children.begin(), children.end(),
                     [&](int a, int b) { return facts(a).db_id < facts(b).db_id; });
  for (int c : children) {
    const search::Node& ch = t.node(c);
    if (!ch.measured || c >= measured_before) {
      // In flight: its direction once the planner gave it, so that the next is another.
      if (in_flight && !ch.via.text.empty())
        out += fmt::format("- (being tried now from this candidate) {}\n", ch.via.text);
      continue;
    }
    out += fmt::format("- (tried from this candidate) {}: {}\n", ch.via.text,
                       result_words(ch, t.node(0), facts(c).outcome));
  }
  return out;
}

std::string PromptContext::lessons(const std::vector<store::Lesson>& all) const {
  std::string out;
  const size_t from = all.size() > kRunLessons ? all.size() - kRunLessons : 0;
  for (size_t i = from; i < all.size(); ++i) out += lesson_line(all[i]) + "\n";
  if (!memory_lessons_.empty()) out += "From earlier runs:\n" + memory_lessons_;
  return out;
}

std::string PromptContext::repair_direction(const search::Tree& t, int node) const {
  return "repair the " + facts(node).outcome + " of: " + t.node(node).via.text;
}

}  // namespace kp::driver
