#include "report/analyze_report.h"

#include <fmt/format.h>

#include "report/profile_report.h"

namespace kp::report {

namespace {

std::string verdict_line(const task::Task& task, const analysis::AnalyzePage& page) {
  const auto& e = page.profile.eval;
  std::string gpu = e.device ? e.device->name : "no GPU";
  std::string line = fmt::format("kernelpro analyze: {} / {} on {}\n", task.name,
                                 e.candidate.filename().string(), gpu);
  line += fmt::format("verdict   {}", eval::to_string(e.outcome));
  if (e.outcome == eval::Outcome::kOk) line += fmt::format(", median {:.1f} us per call", e.time.median * 1e6);
  else if (!e.reason.empty()) line += ": " + e.reason;
  return line + "\n";
}

}  // namespace

std::string format_analyze_text(const task::Task& task, const analysis::AnalyzePage& page) {
  std::string out = verdict_line(task, page);
  const auto outcome = page.profile.eval.outcome;
  if (outcome != eval::Outcome::kOk && outcome != eval::Outcome::kNotRun) return out;
  out += "\n" + page.feedback.text;
  out += fmt::format("\ntools     {} run: {}\n", page.tools_run.size(), fmt::join(page.tools_run, ", "));
  if (!page.stage2_metrics.empty()) {
    auto it = page.profile.seconds.find("stage2");
    out += fmt::format("stage 2   {} metrics{}\n", page.stage2_metrics.size(),
                       it != page.profile.seconds.end() ? fmt::format(", {:.2f} s", it->second) : std::string());
  }
  for (const auto& n : page.profile.notes) out += "note      " + n + "\n";
  return out;
}

std::string format_tool_list(const nlohmann::json& tools) {
  std::string out;
  for (const auto& t : tools) {
    std::string classes;
    for (const auto& c : t["classes"]) classes += (classes.empty() ? "" : ",") + c.get<std::string>();
    out += fmt::format("{:<22} {:<40} [{}]{}\n    {}\n", t["name"].get<std::string>(), t["title"].get<std::string>(),
                       classes.empty() ? "any class" : classes,
                       t["metrics"].empty() ? std::string() : fmt::format(" +{} metrics", t["metrics"].size()),
                       t["about"].get<std::string>());
  }
  return out;
}

nlohmann::json analyze_to_json(const task::Task& task, const analysis::AnalyzePage& page) {
  nlohmann::json raw = nlohmann::json::array();
  for (const auto& f : page.findings) raw.push_back(analysis::to_json(f));
  nlohmann::json fb = analysis::to_json(page.feedback);
  nlohmann::json j = {{"task", task.name},
                      {"candidate", page.profile.eval.candidate.string()},
                      {"outcome", eval::to_string(page.profile.eval.outcome)},
                      {"reason", page.profile.eval.reason},
                      {"class", page.profile.roofline ? nlohmann::json(analysis::to_string(page.profile.roofline->cls))
                                                      : nlohmann::json(nullptr)},
                      {"headline", fb["headline"]},
                      {"feedback", fb["text"]},
                      {"findings", fb["findings"]},
                      {"raw_findings", raw},
                      {"tools_run", page.tools_run},
                      {"stage2_metrics", page.stage2_metrics},
                      {"seconds", page.profile.seconds},
                      {"notes", page.profile.notes}};
  j["profile"] = profile_to_json(task, page.profile);
  return j;
}

}  // namespace kp::report
