#include "driver/analyze_session.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "analysis/rule_tool.h"

namespace kp::driver {

namespace fs = std::filesystem;

analysis::Evidence evidence_of(const task::Task& task, const ProfilePage& page) {
  analysis::Evidence e;
  if (page.counters) e.kernels = page.counters->kernels;
  e.sass = page.sass;
  if (page.trace && !page.trace->calls.empty()) {
    // The median call by span, as the classifier takes it.
    std::vector<profile::TraceCall> calls = page.trace->calls;
    std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.span_s < b.span_s; });
    e.trace = calls[calls.size() / 2];
  }
  e.roofline = page.roofline;
  e.ceilings = page.ceilings;
  if (page.eval.device) e.device = *page.eval.device;
  e.call_seconds = page.eval.time.median;
  e.ideal_bytes = task.ideal_bytes;
  e.ideal_flops = task.ideal_flops;
  return e;
}

namespace {

Result<analysis::ToolRegistry> make_registry(const std::vector<fs::path>& rule_dirs) {
  analysis::ToolRegistry registry = analysis::ToolRegistry::builtin();
  for (const auto& dir : rule_dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    KP_TRY(auto tools, analysis::load_rule_tools(dir));
    for (auto& t : tools) {
      std::string name = t->spec().name;
      auto added = registry.add(std::move(t));
      if (!added.ok())
        return make_error(ErrorCode::kInvalidInput, fmt::format("rule files in {}: {}", dir.string(), added.error().message));
    }
  }
  return registry;
}

std::vector<std::string> names_of(const std::vector<const analysis::Tool*>& tools) {
  std::vector<std::string> out;
  for (const auto* t : tools) out.push_back(t->spec().name);
  return out;
}

}  // namespace

Result<nlohmann::json> list_tools(const std::vector<fs::path>& rule_dirs) {
  KP_TRY(analysis::ToolRegistry registry, make_registry(rule_dirs));
  nlohmann::json out = nlohmann::json::array();
  for (const auto* t : registry.all()) out.push_back(analysis::to_json(t->spec()));
  return out;
}

Result<AnalyzePage> run_analyze(const task::Task& task, const fs::path& candidate, const fs::path& library_source,
                                const AnalyzeOptions& options, const ProgressFn& progress) {
  KP_TRY(analysis::ToolRegistry registry, make_registry(options.rule_dirs));
  std::vector<const analysis::Tool*> named;
  if (!options.tools.empty()) {
    KP_TRY(named, registry.by_name(options.tools));
  }
  AnalyzePage page;
  std::vector<const analysis::Tool*> chosen;
  ProfileSessionOptions po = options.profile;
  po.stage = options.stage2 ? 2 : 1;
  // Stage 2: the tools the stage-1 evidence calls for, and only their metrics.
  po.stage2_metrics = [&](const ProfilePage& stage1) {
    analysis::Evidence e = evidence_of(task, stage1);
    chosen = named.empty() ? registry.select(e) : named;
    std::vector<std::string> have = stage1.counters ? stage1.counters->metrics : std::vector<std::string>{};
    page.stage2_metrics = analysis::metrics_for(chosen, have);
    if (progress)
      progress(fmt::format("stage 2: {} tool{} ({} metric{} more)", chosen.size(), chosen.size() == 1 ? "" : "s",
                           page.stage2_metrics.size(), page.stage2_metrics.size() == 1 ? "" : "s"));
    return page.stage2_metrics;
  };
  KP_TRY(page.profile, run_profile(task, candidate, library_source, po, progress));
  const auto outcome = page.profile.eval.outcome;
  if (outcome != eval::Outcome::kOk && outcome != eval::Outcome::kNotRun) return page;
  page.evidence = evidence_of(task, page.profile);
  // Without counters (no GPU, or stage 2 not reached) the tools still run on what there is.
  if (chosen.empty()) chosen = named.empty() ? registry.select(page.evidence) : named;
  page.tools_run = names_of(chosen);
  page.findings = analysis::run_tools(chosen, page.evidence);
  page.feedback = analysis::make_feedback(page.evidence, page.findings, options.feedback);
  return page;
}

}  // namespace kp::driver
