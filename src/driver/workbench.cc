#include "driver/workbench.h"

#include <cstdlib>

#include <fmt/format.h>

#include "analysis/rule_tool.h"
#include "build/diagnostics.h"
#include "driver/analyze_session.h"
#include "util/strings.h"

namespace kp::driver {

namespace fs = std::filesystem;

Result<Analysis> Workbench::analyze(const CandidatePaths&, const std::vector<std::string>&) {
  return make_error(ErrorCode::kUnavailable, "this workbench gives no feedback");
}

JudgeBench::JudgeBench(const task::Task& task, std::unique_ptr<ProfileSetup> setup, JudgeBenchOptions options)
    : task_(task),
      setup_(std::move(setup)),
      options_(std::move(options)),
      ahead_(options_.build),
      drafts_(options_.build) {}

Result<std::unique_ptr<JudgeBench>> JudgeBench::open(const task::Task& task, std::unique_ptr<ProfileSetup> setup,
                                                     JudgeBenchOptions options) {
  std::unique_ptr<JudgeBench> b(new JudgeBench(task, std::move(setup), std::move(options)));
  // Every tool's metrics ride with stage 1: one warm session, one collection per candidate.
  // KP_LOOP_STAGE2_APART=1 keeps the two collections apart, as before: a switch for
  // bench/throughput.sh's model_apart row, which times both ways on one card in one run.
  const char* apart = std::getenv("KP_LOOP_STAGE2_APART");
  if (b->options_.feedback && !(apart && std::string(apart) == "1")) {
    KP_TRY(b->setup_->options.ahead_metrics, every_tool_metric(analysis::default_rule_dirs()));
  }
  const ProfileSessionOptions& po = b->setup_->options;
  b->judge_ = std::make_unique<Judge>(b->options_.feedback ? evaluator_options_for_profile(po) : po.evaluator);
  // The coder's drafts: nvcc on a draft in RUN_DIR/drafts, its errors or ptxas' report back.
  b->tools_ = b->options_.code_tools;
  auto count = std::make_shared<int>(0);
  JudgeBench* self = b.get();
  b->tools_.compile_check = [self, count](const std::string& source) {
    const fs::path draft = self->options_.run_dir / "drafts" / fmt::format("draft-{}.cu", ++*count);
    std::error_code ec;
    fs::create_directories(draft.parent_path(), ec);
    if (!write_file(draft.string(), source).ok()) return std::string("could not write the draft");
    auto r = self->drafts_.build(build::BuildRequest{draft, self->task_.candidate_libraries, {}});
    if (!r.ok()) return "not built: " + r.error().message;
    if (!r->ok) {
      const std::string summary = build::summarize_diagnostics(r->diagnostics, 5);
      return "compile errors:\n" + (summary.empty() ? r->log : summary);
    }
    return fmt::format("compiled. ptxas: {}", r->log.empty() ? "(no report)" : r->log);
  };
  return b;
}

std::unique_ptr<JudgeBench> JudgeBench::open_for_tuning(const task::Task& task, const eval::EvaluatorOptions& evaluator,
                                                        const build::BuildOptions& build) {
  JudgeBenchOptions o;
  o.feedback = false;
  o.build = build;
  o.offer_tools = false;
  std::unique_ptr<JudgeBench> b(new JudgeBench(task, nullptr, std::move(o)));
  b->judge_ = std::make_unique<Judge>(evaluator);
  return b;
}

// Builds a native candidate into the cache; with feedback on it also starts disassembling what
// it built (profile::Profiler::prefetch_sass, on a thread of its own), so that the analysis finds
// the SASS ready, or nearly, instead of waiting for cuobjdump after the counters.
double JudgeBench::build_and_prefetch(const fs::path& cu) {
  auto built = ahead_.build(build::BuildRequest{cu, task_.candidate_libraries, {}});
  if (options_.feedback && built.ok() && built->ok)
    profile::Profiler::prefetch_sass(setup_->options.profiler.sass, built->artifact);
  return built.ok() ? built->seconds : 0.0;
}

void JudgeBench::build_ahead(const fs::path& cu) { (void)build_and_prefetch(cu); }

Result<eval::EvalResult> JudgeBench::evaluate(const CandidatePaths& c) {
  if (task_.kind == task::TaskKind::kKernelBench) {
    std::optional<Judge::SeedScope> seed;
    if (c.root) seed.emplace(*judge_);
    return judge_->evaluate(task_, c.py, c.cu);
  }
  if (!c.root || !options_.feedback) return judge_->evaluate(task_, c.cu);
  // The seed, which no build stage sees, is built and prefetched the same way just before its
  // first evaluation (which then finds it built); its nvcc counts as its evaluation's.
  const double seed_build_s = build_and_prefetch(c.cu);
  auto r = judge_->evaluate(task_, c.cu);
  if (r.ok()) r->build_seconds += seed_build_s;
  return r;
}

Result<Analysis> JudgeBench::analyze(const CandidatePaths& c, const std::vector<std::string>& extra_tools) {
  if (!setup_) return Workbench::analyze(c, extra_tools);
  const bool kernelbench = task_.kind == task::TaskKind::kKernelBench;
  std::optional<Judge::SeedScope> seed;
  if (kernelbench && c.root) seed.emplace(*judge_);
  return analyze_feedback(*judge_, *setup_, kernelbench ? c.py : c.cu, kernelbench ? c.cu : fs::path(), extra_tools);
}

std::vector<agent::ToolOffer> JudgeBench::tool_offers() const {
  std::vector<agent::ToolOffer> offers;
  if (auto listed = list_tools(analysis::default_rule_dirs()); listed.ok())
    for (const auto& t : *listed) offers.push_back({t.value("name", ""), t.value("about", ""), false});
  return offers;
}

std::optional<std::string> JudgeBench::gpu_in_words() {
  auto dev = judge_->evaluator().device();
  if (!dev.ok()) return std::nullopt;
  return fmt::format("{} (sm_{}{}, {} SMs, {:.0f} GiB)", dev->name, dev->cc_major, dev->cc_minor, dev->sm_count,
                     dev->memory_bytes / 1073741824.0);
}

Result<Analysis> analyze_feedback(Judge& judge, const ProfileSetup& setup, const fs::path& candidate, const fs::path& cu,
                                  const std::vector<std::string>& extra_tools) {
  AnalyzeOptions ao;
  ao.rule_dirs = analysis::default_rule_dirs();
  ao.profile = setup.options;
  ao.profile.evaluator = judge.options();
  // The loop profiles every candidate: the system trace only where the counters leave part of the
  // call unexplained (counters_explain_call); `kernelpro analyze` always takes it.
  ao.profile.trace_unless_explained = true;
  ao.extra_tools = extra_tools;
  auto page = judge.analyze(setup.task, candidate, cu, ao);
  if (!page.ok()) return page.error();
  if (page->profile.eval.outcome != eval::Outcome::kOk)
    return make_error(ErrorCode::kInvalidInput, fmt::format("it did not pass the check ({}): {}",
                                                            eval::to_string(page->profile.eval.outcome),
                                                            page->profile.eval.reason));
  Analysis a{measured_summary(*page) + page->feedback.text, page->tools_run, "",
             measured_summary(*page) + raw_metrics_text(*page), {}};
  if (page->profile.roofline) a.bottleneck_class = analysis::to_string(page->profile.roofline->cls);
  a.seconds = page->profile.seconds;
  a.seconds.erase("eval");  // the verdict's, counted as the worker's time
  return a;
}

}  // namespace kp::driver
