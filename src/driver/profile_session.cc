#include "driver/profile_session.h"

#include <algorithm>
#include <memory>
#include <chrono>
#include <cmath>
#include <future>
#include <set>

#include <fmt/format.h>

#include "analysis/stage_two.h"
#include "profile/metric_lists.h"

namespace kp::driver {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

profile::ProfileTarget target_of(const task::Task& task, const eval::EvalResult& r, const ProfileSessionOptions& o) {
  profile::ProfileTarget t;
  t.task = task;
  t.options = o.evaluator.eval;
  if (task.kind == task::TaskKind::kKernelBench) {
    t.reference = task.reference_path;
    t.candidate = r.candidate;
    if (r.form == eval::CandidateForm::kPrebuilt && r.candidate_build) {
      t.files.library = r.candidate_build->artifact;
      t.files.library_source = r.library_source;
    } else {
      t.files.build_dir = o.evaluator.build.cache_dir / "torch_extensions";
    }
  } else {
    t.reference = r.reference_build->artifact;
    t.candidate = r.candidate_build->artifact;
  }
  return t;
}

// "sm_90a" -> 9, 0.
void arch_numbers(const std::string& arch, int* major, int* minor) {
  int n = 0;
  for (char c : arch)
    if (c >= '0' && c <= '9') n = n * 10 + (c - '0');
  if (n >= 10) {
    *major = n / 10;
    *minor = n % 10;
  }
}

// A kernel the Range Profiler knows only by its range number ("0", "1").
bool numbered(const std::string& name) {
  return name.empty() || name.find_first_not_of("0123456789") == std::string::npos;
}

// The Range Profiler reports no launch shape (and, beside another CUPTI client, no kernel name);
// the trace does, for the same kernels in the same order.
void fill_launch_shapes(ProfilePage& page) {
  if (!page.trace || page.trace->calls.empty() || !page.counters) return;
  const auto& traced = page.trace->calls.front().kernels;
  auto& kernels = page.counters->kernels;
  // The profiled kernels are the call's first launches (all of them, or a sample of the first
  // ones when the call launched more than the session holds).
  if (traced.size() != kernels.size() + static_cast<size_t>(page.counters->unprofiled_launches)) return;
  for (size_t i = 0; i < kernels.size(); ++i) {
    // Where another CUPTI client holds the process (PyTorch in the KernelBench worker), the
    // Range Profiler's ranges keep CUPTI's numbers ("0", "1") for names.
    if (numbered(kernels[i].name)) kernels[i].name = traced[i].name;
    if (kernels[i].grid[0] != 0) continue;
    kernels[i].grid = traced[i].grid;
    kernels[i].block = traced[i].block;
  }
}

}  // namespace

void name_numbered_kernels(profile::KernelProfile& counters, const std::vector<std::string>& traced) {
  const std::set<std::string> distinct(traced.begin(), traced.end());
  for (size_t i = 0; i < counters.kernels.size(); ++i) {
    std::string& name = counters.kernels[i].name;
    if (!numbered(name)) continue;
    if (traced.size() == counters.kernels.size())
      name = traced[i];
    else if (distinct.size() == 1)
      name = *distinct.begin();
    else
      name = fmt::format("launch {} (name not traced)", i + 1);
  }
}

namespace {

void classify_into(ProfilePage& page) {
  analysis::RooflineInput in;
  in.kernels = page.counters->kernels;
  in.ceilings = page.ceilings;
  if (page.trace && !page.trace->calls.empty()) {
    // The median call by span: one representative call.
    std::vector<profile::TraceCall> calls = page.trace->calls;
    std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.span_s < b.span_s; });
    in.trace = calls[calls.size() / 2];
  }
  in.call_seconds = page.eval.time.median;
  page.roofline = analysis::classify(in);
}

}  // namespace

std::vector<MetricAgreement> compare_collectors(const profile::KernelProfile& cupti, const profile::KernelProfile& ncu) {
  std::vector<MetricAgreement> out;
  size_t n = std::min(cupti.kernels.size(), ncu.kernels.size());
  for (size_t k = 0; k < n; ++k) {
    const auto& a = cupti.kernels[k];
    const auto& b = ncu.kernels[k];
    for (const auto& [metric, va] : a.values) {
      auto vb = b.get(metric);
      if (!vb) continue;
      MetricAgreement m{b.name.empty() ? a.name : b.name, metric, va, *vb, 0};
      double scale = std::max(std::fabs(*vb), 1e-12);
      m.relative_difference = (va == *vb) ? 0 : std::fabs(va - *vb) / scale;
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::string counters_explain_call(const profile::KernelProfile& counters, double call_median_s, double share) {
  if (counters.kernels.size() != 1 || counters.unprofiled_launches > 0 || call_median_s <= 0) return "";
  const auto ns = counters.kernels.front().get("gpu__time_duration.sum");
  if (!ns || *ns <= 0) return "";
  const double part = *ns * 1e-9 / call_median_s;
  if (part < share) return "";
  return fmt::format("the call is one kernel, {:.0f}% of its median time, and the counters have it", 100.0 * std::min(part, 1.0));
}

std::vector<std::string> stage1_request(const ProfileSessionOptions& options, bool with_ahead) {
  std::vector<std::string> metrics = profile::merge_metric_lists(
      options.stage1_override.empty() ? profile::stage1_metrics() : options.stage1_override, options.extra_metrics);
  if (with_ahead) metrics = profile::merge_metric_lists(metrics, options.ahead_metrics);
  return metrics;
}

eval::EvaluatorOptions evaluator_options_for_profile(const ProfileSessionOptions& options) {
  eval::EvaluatorOptions evaluator_options = options.evaluator;
  // The worker (kp-worker or the KernelBench worker) sets up the stage-1 session while the
  // candidate builds (eval/worker_client.h).
  if (options.collector == profile::Collector::kCupti && options.profiler.replay != "kernel") {
    evaluator_options.worker.prewarm_metrics = stage1_request(options);
    evaluator_options.worker.rangeprof_library = options.profiler.rangeprof_library;
  }
  return evaluator_options;
}

namespace {

void say(const ProgressFn& progress, const std::string& s) {
  if (progress) progress(s);
}

// The candidate's SASS, disassembled on the CPU alongside the counters.
struct SassJob {
  std::future<Result<std::vector<profile::KernelSass>>> result;  // not valid when none was started
  Clock::time_point t0;
};

// Instruction level: no GPU needed, the built object and ptxas' report; without a GPU it is
// the whole page. cuobjdump runs on the CPU alongside the counters (it took 1.1 s of each
// candidate's analysis on the H100, bench/results/h100-2026-12-06-throughput), and its page
// part is joined in (join_sass) before the page is returned, whichever way it returns.
SassJob start_sass(ProfilePage& page, profile::Profiler& profiler, const eval::DeviceInfo& dev,
                   const ProfileSessionOptions& options, const ProgressFn& progress) {
  SassJob job;
  if (options.sass && page.eval.candidate_build && page.eval.candidate_build->ok) {
    say(progress, "stage 1: SASS of the candidate (cuobjdump, alongside the counters)");
    int major = dev.cc_major, minor = dev.cc_minor;
    const auto& kernels = page.eval.candidate_build->resources.kernels;
    if (major == 0 && !kernels.empty()) arch_numbers(kernels.front().arch, &major, &minor);
    job.t0 = Clock::now();
    job.result = std::async(std::launch::async, [&profiler, &build = *page.eval.candidate_build, major, minor] {
      return profiler.sass(build.artifact, build.resources, major, minor);
    });
  } else if (options.sass) {
    page.notes.push_back("SASS: the candidate was built inside the worker (load_inline); use the fast form (.py + .cu) "
                         "for its SASS and ptxas report");
  }
  return job;
}

// Every return with the page joins the SASS first; an error return leaves the future's
// destructor to wait for it.
ProfilePage& join_sass(ProfilePage& page, SassJob& sass) {
  if (sass.result.valid()) {
    auto waited = Clock::now();
    auto s = sass.result.get();
    page.seconds["sass"] = since(sass.t0);
    page.seconds["sass_wait"] = since(waited);  // what the SASS added to the page's wall time
    if (s.ok()) page.sass = std::move(*s);
    else page.notes.push_back("SASS: " + s.error().message);
  }
  return page;
}

// Kernel level: the stage-1 counters (with every analysis tool's when asked) into the page.
Status collect_counters(ProfilePage& page, profile::Profiler& profiler, const profile::ProfileTarget& target,
                        const std::vector<std::string>& metrics, const ProfileSessionOptions& options,
                        const ProgressFn& progress) {
  if (options.ahead_metrics.empty())
    say(progress, fmt::format("stage 1: {} counters ({})", metrics.size(), profile::to_string(options.collector)));
  else
    say(progress, fmt::format("stage 1: {} counters with every analysis tool's, in one collection ({})",
                              metrics.size(), profile::to_string(options.collector)));
  const auto t0 = Clock::now();
  auto counters = profiler.counters(target, metrics, options.collector);
  if (!counters.ok() && !options.ahead_metrics.empty()) {
    // The longer list is an optimisation: stage 1 alone, and stage 2 collects what it needs.
    page.notes.push_back(fmt::format("counters: the {} metrics of stage 1 and every tool in one collection failed ({}); "
                                     "stage 1 was collected alone",
                                     metrics.size(), counters.error().message));
    counters = profiler.counters(target, stage1_request(options, false), options.collector);
  }
  page.seconds["counters"] = since(t0);
  if (!counters.ok()) return counters.error();
  page.counters = std::move(*counters);
  if (page.counters->capacity_grown_from > 0)
    page.notes.push_back(fmt::format(
        "counters: the call launched more kernels than the worker's Range Profiler session held ({}); the session "
        "grew to {} and the call was collected again",
        page.counters->capacity_grown_from, page.counters->capacity));
  if (page.counters->unprofiled_launches > 0)
    page.notes.push_back(fmt::format(
        "counters: the call launched {} kernels; the first {} were profiled (as many as the session holds), so the "
        "counters are a sample: rates and shares hold, call totals (bytes, FLOP) do not",
        page.counters->kernels.size() + page.counters->unprofiled_launches, page.counters->kernels.size()));
  return ok_status();
}

// System level, in a process of its own (one CUPTI subscriber per process).
void take_trace(ProfilePage& page, profile::Profiler& profiler, const profile::ProfileTarget& target,
                const ProfileSessionOptions& options, const ProgressFn& progress) {
  const std::string explained =
      options.trace && options.trace_unless_explained ? counters_explain_call(*page.counters, page.eval.time.median) : "";
  if (!explained.empty()) {
    page.notes.push_back("trace: not taken, " + explained);
  } else if (options.trace) {
    say(progress, fmt::format("stage 1: system trace of {} calls (libkp_trace.so)", options.profiler.trace_calls));
    const auto t0 = Clock::now();
    auto tr = profiler.trace(target);
    page.seconds["trace"] = since(t0);
    if (tr.ok()) page.trace = std::move(*tr);
    else page.notes.push_back("trace: " + tr.error().message);
  }
}

// Stage 2: the metrics the chosen tools (or the class's families) add, in one more collection,
// and the class again. Errors only for an unknown family.
Status collect_stage2(ProfilePage& page, profile::Profiler& profiler, const profile::ProfileTarget& target,
                      const ProfileSessionOptions& options, const ProgressFn& progress) {
  std::vector<std::string> extra;
  std::string what;
  if (options.stage2_metrics) {
    for (const auto& m : options.stage2_metrics(page))
      if (std::find(page.counters->metrics.begin(), page.counters->metrics.end(), m) == page.counters->metrics.end())
        extra = profile::merge_metric_lists(extra, {m});
    what = "the chosen tools";
  } else {
    page.stage2_families = options.families.empty() ? analysis::stage2_families_for(*page.roofline) : options.families;
    for (const auto& f : page.stage2_families) {
      const auto& list = profile::stage2_metrics(f);
      if (list.empty()) return make_error(ErrorCode::kInvalidInput, fmt::format("unknown stage-2 family \"{}\" (memory, latency, compute, shared)", f));
      extra = profile::merge_metric_lists(extra, list);
    }
    what = fmt::format("{}", fmt::join(page.stage2_families, ", "));
  }
  if (extra.empty()) return ok_status();
  say(progress, fmt::format("stage 2: {} counters for {}", extra.size(), what));
  const auto t0 = Clock::now();
  auto more = profiler.counters(target, extra, options.collector);
  page.seconds["stage2"] = since(t0);
  if (more.ok()) {
    for (size_t k = 0; k < page.counters->kernels.size() && k < more->kernels.size(); ++k)
      for (const auto& [m, v] : more->kernels[k].values) page.counters->kernels[k].values[m] = v;
    page.counters->metrics = profile::merge_metric_lists(page.counters->metrics, extra);
    classify_into(page);
  } else {
    page.notes.push_back(fmt::format("stage 2 ({}): {}", what, more.error().message));
    page.stage2_families.clear();
  }
  return ok_status();
}

void compare_with_ncu(ProfilePage& page, profile::Profiler& profiler, const profile::ProfileTarget& target,
                      const ProfileSessionOptions& options, const ProgressFn& progress) {
  say(progress, "checking the in-process counters against ncu");
  const auto t0 = Clock::now();
  // Like for like: kernel replay in process leaves L2 as the previous pass (and CUPTI's memory
  // restore) left it, so ncu runs without its cache flush here.
  profile::NcuOptions like = options.profiler.ncu;
  like.cache_control = profile::NcuOptions::CacheControl::kNone;
  auto ncu = profiler.counters(target, page.counters->metrics, profile::Collector::kNcu, &like);
  page.seconds["ncu"] = since(t0);
  if (ncu.ok()) {
    page.agreement = compare_collectors(*page.counters, *ncu);
    page.ncu_counters = std::move(*ncu);
  } else {
    page.notes.push_back("ncu comparison: " + ncu.error().message);
  }
}

}  // namespace

Result<ProfilePage> run_profile(const task::Task& task, const fs::path& candidate, const fs::path& library_source,
                                const ProfileSessionOptions& options, const ProgressFn& progress, const ProfileOn& on) {
  ProfilePage page;
  const std::vector<std::string> metrics = stage1_request(options);
  std::unique_ptr<eval::Evaluator> own;
  if (!on.evaluator) own = std::make_unique<eval::Evaluator>(evaluator_options_for_profile(options));
  eval::Evaluator& evaluator = on.evaluator ? *on.evaluator : *own;
  say(progress, on.verdict ? "the verdict (build, correctness, timing)" : "evaluating (build, correctness, timing)");
  auto t0 = Clock::now();
  if (on.verdict) {
    KP_TRY(page.eval, on.verdict());
  } else {
    KP_TRY(page.eval, evaluator.evaluate(task, candidate, library_source));
  }
  page.seconds["eval"] = since(t0);
  const bool not_run = page.eval.outcome == eval::Outcome::kNotRun;
  if (page.eval.outcome != eval::Outcome::kOk && !not_run) return page;

  // The evaluation has just shown this build correct on this worker: the profile requests skip
  // their own correctness trial.
  profile::ProfilerOptions profiler_options = options.profiler;
  profiler_options.check = false;
  profile::Profiler profiler(profiler_options, evaluator.worker());
  const eval::DeviceInfo dev = page.eval.device.value_or(eval::DeviceInfo{});

  SassJob sass = start_sass(page, profiler, dev, options, progress);
  if (not_run) return std::move(join_sass(page, sass));
  if (options.ceilings_for) page.ceilings = options.ceilings_for(dev, &page.ceilings_warning);
  profile::ProfileTarget target = target_of(task, page.eval, options);

  KP_TRY_STATUS(collect_counters(page, profiler, target, metrics, options, progress));
  take_trace(page, profiler, target, options, progress);
  fill_launch_shapes(page);
  if (page.counters) name_numbered_kernels(*page.counters, page.eval.report ? page.eval.report->kernels
                                                                            : std::vector<std::string>{});
  classify_into(page);

  if (options.stage >= 2) KP_TRY_STATUS(collect_stage2(page, profiler, target, options, progress));
  if (options.compare_ncu && options.collector != profile::Collector::kNcu)
    compare_with_ncu(page, profiler, target, options, progress);
  return std::move(join_sass(page, sass));
}

}  // namespace kp::driver
