#include "driver/analyze_session.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "analysis/evidence_json.h"
#include "analysis/rule_tool.h"
#include "profile/metric_lists.h"

namespace kp::driver {

namespace fs = std::filesystem;

analysis::Evidence evidence_of(const task::Task& task, const ProfilePage& page) {
  analysis::Evidence e;
  if (page.counters) {
    e.kernels = page.counters->kernels;
    e.unprofiled_launches = page.counters->unprofiled_launches;
  }
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
  // A KernelBench problem gives no [cost]: its ideal traffic is what its worker counted, each
  // input, output and parameter once.
  e.ideal_bytes = task.ideal_bytes > 0 ? task.ideal_bytes : page.eval.report ? page.eval.report->io_bytes : 0;
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
        return make_error(ErrorCode::kInvalidInput,
                          fmt::format("rule files in {}: {}", dir.string(), added.error().message));
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

Result<std::vector<std::string>> every_tool_metric(const std::vector<fs::path>& rule_dirs) {
  KP_TRY(analysis::ToolRegistry registry, make_registry(rule_dirs));
  return analysis::metrics_for(registry.all(), profile::stage1_metrics());
}

std::string raw_metrics_text(const AnalyzePage& page) {
  std::string out;
  const auto& kernels = page.evidence.kernels;
  for (size_t i = 0; i < std::min<size_t>(kernels.size(), 4); ++i) {
    const auto& k = kernels[i];
    out += fmt::format("kernel {}: {}\n", i, k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name);
    for (const auto& [metric, value] : k.values) {
      auto unit = k.units.find(metric);
      out += fmt::format("  {} = {:.6g}{}\n", metric, value,
                         unit == k.units.end() || unit->second.empty() ? "" : " " + unit->second);
    }
  }
  if (kernels.size() > 4) out += fmt::format("({} more kernels not shown)\n", kernels.size() - 4);
  return out;
}

std::string measured_summary(const AnalyzePage& page) {
  const eval::EvalResult& r = page.profile.eval;
  const analysis::Evidence& e = page.evidence;
  if (r.time.median <= 0) return "";
  auto ms = [](double s) { return fmt::format("{:.4g} ms", s * 1e3); };
  std::string out = fmt::format("MEASURED  {} per call (median of {})", ms(r.time.median), r.time.count);
  if (r.reference_seconds > 0)
    out += fmt::format("; the reference {} ({:.2f}x)", ms(r.reference_seconds), r.speedup_vs_reference);
  out += "\n";
  if (e.ideal_bytes > 0 && e.ceilings.dram_bytes_per_s > 0) {
    const double floor_s = e.ideal_bytes / e.ceilings.dram_bytes_per_s;
    out +=
        fmt::format("  ideal traffic {:.4g} MB: {} at the {} DRAM roof of {:.3g} TB/s, {:.0f}% of this call's time\n",
                    e.ideal_bytes / 1e6, ms(floor_s),
                    e.ceilings.source == profile::CeilingSource::kDatasheet ? "datasheet" : "calibrated",
                    e.ceilings.dram_bytes_per_s / 1e12, 100.0 * floor_s / r.time.median);
  }
  double read = 0, written = 0;
  for (const auto& k : e.kernels) {
    read += k.get_or("dram__bytes_read.sum", 0);
    written += k.get_or("dram__bytes_write.sum", 0);
  }
  if (read + written > 0)
    out += fmt::format("  DRAM traffic of the profiled kernels: {:.4g} MB read, {:.4g} MB written{}\n", read / 1e6,
                       written / 1e6,
                       e.ideal_bytes > 0 ? fmt::format(" ({:.2f}x the ideal)", (read + written) / e.ideal_bytes) : "");
  const size_t shown = std::min<size_t>(e.kernels.size(), 6);
  for (size_t i = 0; i < shown; ++i) {
    const auto& k = e.kernels[i];
    std::string name = k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name;
    const int64_t blocks = e.grid_blocks(i), threads = e.block_threads(i);
    out += fmt::format("  kernel {}: {}{}{}\n", i + 1, name,
                       blocks > 0 ? fmt::format(", {} blocks of {} threads", blocks, threads) : "",
                       k.get("gpu__time_duration.sum") ? ", " + ms(*k.get("gpu__time_duration.sum") * 1e-9) : "");
  }
  if (e.kernels.size() > shown) out += fmt::format("  ... and {} more kernels\n", e.kernels.size() - shown);
  return out;
}

Result<AnalyzePage> run_analyze(const task::Task& task, const fs::path& candidate, const fs::path& library_source,
                                const AnalyzeOptions& options, const ProgressFn& progress, const ProfileOn& on) {
  KP_TRY(analysis::ToolRegistry registry, make_registry(options.rule_dirs));
  std::vector<const analysis::Tool*> named, extra;
  if (!options.tools.empty()) {
    KP_TRY(named, registry.by_name(options.tools));
  }
  if (!options.extra_tools.empty()) {
    KP_TRY(extra, registry.by_name(options.extra_tools));
  }
  // The named tools, else those the evidence calls for; then the extra ones not among them.
  auto choose = [&](const analysis::Evidence& e) {
    std::vector<const analysis::Tool*> c = named.empty() ? registry.select(e) : named;
    for (const auto* t : extra)
      if (std::find(c.begin(), c.end(), t) == c.end()) c.push_back(t);
    return c;
  };
  AnalyzePage page;
  std::vector<const analysis::Tool*> chosen;
  ProfileSessionOptions po = options.profile;
  po.stage = options.stage2 ? 2 : 1;
  // Stage 2: the tools the stage-1 evidence calls for, and only their metrics.
  po.stage2_metrics = [&](const ProfilePage& stage1) {
    analysis::Evidence e = evidence_of(task, stage1);
    chosen = choose(e);
    std::vector<std::string> have = stage1.counters ? stage1.counters->metrics : std::vector<std::string>{};
    page.stage1_metrics = have;
    page.stage2_metrics = analysis::metrics_for(options.stage2_all ? registry.all() : chosen, have);
    if (progress)
      progress(fmt::format("stage 2: {} tool{} ({} metric{} more)", chosen.size(), chosen.size() == 1 ? "" : "s",
                           page.stage2_metrics.size(), page.stage2_metrics.size() == 1 ? "" : "s"));
    return page.stage2_metrics;
  };
  KP_TRY(page.profile, run_profile(task, candidate, library_source, po, progress, on));
  const auto outcome = page.profile.eval.outcome;
  if (outcome != eval::Outcome::kOk && outcome != eval::Outcome::kNotRun) return page;
  page.evidence = evidence_of(task, page.profile);
  // Without counters (no GPU, or stage 2 not reached) the tools still run on what there is.
  if (chosen.empty()) chosen = choose(page.evidence);
  page.tools_run = names_of(chosen);
  page.findings = analysis::run_tools(chosen, page.evidence);
  page.feedback = analysis::make_feedback(page.evidence, page.findings, options.feedback);
  return page;
}

nlohmann::json evidence_file(const task::Task& task, const AnalyzePage& page) {
  return {{"format", "kernelpro-evidence"},
          {"version", 1},
          {"task", {{"name", task.name}, {"ideal_bytes", task.ideal_bytes}, {"ideal_flops", task.ideal_flops}}},
          {"candidate", page.profile.eval.candidate.string()},
          {"recorded_on", page.evidence.device.name},
          {"speedup_vs_reference", page.profile.eval.speedup_vs_reference},
          {"stage1_metrics", page.stage1_metrics},
          {"tools_run", page.tools_run},
          {"evidence", analysis::evidence_to_json(page.evidence)}};
}

namespace {

analysis::RooflineResult classify_evidence(const analysis::Evidence& e) {
  analysis::RooflineInput in;
  in.kernels = e.kernels;
  in.ceilings = e.ceilings;
  in.trace = e.trace;
  in.call_seconds = e.call_seconds;
  return analysis::classify(in);
}

}  // namespace

Result<AnalyzePage> replay_analyze(const nlohmann::json& file, const AnalyzeOptions& options, task::Task* task) {
  if (!file.is_object() || file.value("format", std::string()) != "kernelpro-evidence")
    return make_error(ErrorCode::kInvalidInput,
                      "not a kernelpro evidence file (no \"format\": \"kernelpro-evidence\"); write one with "
                      "`kernelpro analyze TASK CANDIDATE --save-evidence FILE`");
  if (file.value("version", 0) != 1)
    return make_error(ErrorCode::kInvalidInput, fmt::format("evidence file version {}: this kernelpro reads version 1",
                                                            file.value("version", 0)));
  KP_TRY(analysis::Evidence evidence, analysis::evidence_from_json(file.value("evidence", nlohmann::json())));
  KP_TRY(analysis::ToolRegistry registry, make_registry(options.rule_dirs));
  const nlohmann::json t = file.value("task", nlohmann::json::object());
  task->name = t.value("name", std::string());
  task->ideal_bytes = evidence.ideal_bytes;
  task->ideal_flops = evidence.ideal_flops;

  AnalyzePage page;
  page.stage1_metrics = file.value("stage1_metrics", std::vector<std::string>{});
  std::vector<const analysis::Tool*> chosen;
  if (!options.tools.empty()) {
    KP_TRY(chosen, registry.by_name(options.tools));
  } else {
    // The tools are chosen on what stage 1 had, as in run_analyze.
    analysis::Evidence stage1 = evidence;
    if (!page.stage1_metrics.empty()) {
      for (auto& k : stage1.kernels)
        std::erase_if(k.values, [&](const auto& kv) {
          return std::find(page.stage1_metrics.begin(), page.stage1_metrics.end(), kv.first) ==
                 page.stage1_metrics.end();
        });
    }
    if (!stage1.kernels.empty()) stage1.roofline = classify_evidence(stage1);
    chosen = registry.select(stage1);
  }
  if (!evidence.kernels.empty()) evidence.roofline = classify_evidence(evidence);

  ProfilePage& p = page.profile;
  p.eval.outcome = eval::Outcome::kOk;
  p.eval.task_name = task->name;
  p.eval.candidate = file.value("candidate", std::string());
  p.eval.device = evidence.device;
  p.eval.time.median = evidence.call_seconds;
  p.eval.speedup_vs_reference = file.value("speedup_vs_reference", 0.0);
  profile::KernelProfile counters;
  counters.kernels = evidence.kernels;
  std::set<std::string> names;
  for (const auto& k : evidence.kernels)
    for (const auto& kv : k.values) names.insert(kv.first);
  counters.metrics.assign(names.begin(), names.end());
  counters.unprofiled_launches = evidence.unprofiled_launches;
  p.counters = std::move(counters);
  p.sass = evidence.sass;
  if (evidence.trace) {
    p.trace.emplace();
    p.trace->calls.push_back(*evidence.trace);
    p.trace->finished = true;
  }
  p.roofline = evidence.roofline;
  p.ceilings = evidence.ceilings;

  page.tools_run = names_of(chosen);
  page.stage2_metrics = analysis::metrics_for(chosen, page.stage1_metrics);
  page.findings = analysis::run_tools(chosen, evidence);
  page.feedback = analysis::make_feedback(evidence, page.findings, options.feedback);
  page.evidence = std::move(evidence);
  return page;
}

}  // namespace kp::driver
