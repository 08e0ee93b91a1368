// `kernelpro profile TASK CANDIDATE`: the evidence at three levels and the roofline class for
// one candidate (DESIGN.md section 6). Evaluate first (correctness and the median call time,
// on the warm worker), then stage 1: counters (CUPTI in the worker, or ncu), SASS and ptxas,
// the system trace, and the class; then, when asked, stage 2: the metric families the class
// calls for (analysis/stage_two.h), collected the same way, and the class again.
// Deciding, doing and showing are apart: this collects and classifies; report/ prints.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/profile_page.h"
#include "analysis/roofline.h"
#include "eval/evaluator.h"
#include "profile/ceilings.h"
#include "profile/kernel_metrics.h"
#include "profile/profiler.h"
#include "profile/trace/trace.h"
#include "task/task.h"

namespace kp::driver {

// The page and its parts live in analysis/ (below report/, which prints them).
using MetricAgreement = analysis::MetricAgreement;
using ProfilePage = analysis::ProfilePage;

struct ProfileSessionOptions {
  eval::EvaluatorOptions evaluator;  // build, eval and the warm worker
  profile::ProfilerOptions profiler;
  profile::Collector collector = profile::Collector::kCupti;  // who reads the counters
  // 1: stage-1 metrics only. 2: then the stage-2 families (`families`, or when empty the ones the
  // class calls for). Default 1.
  int stage = 1;
  std::vector<std::string> families;
  std::vector<std::string> extra_metrics;  // added to stage 1 (--metrics)
  // Collected with stage 1 in the same collection, so that stage 2 finds its metrics there and
  // collects nothing more. The model loop passes every analysis tool's metrics: one Range
  // Profiler session with one metric list serves every candidate of the run, kept warm on the
  // worker, where stage 1 and a stage 2 chosen per candidate made and dropped a session each
  // (bench/results/h100-2026-12-06-evening: 1.9 s of counters a candidate). On GH100 the 25
  // stage-1 metrics take 15 passes and the 58 with every tool's 19. When the chip refuses the
  // longer list, stage 1 is collected alone and stage 2 as usual (a note says so).
  std::vector<std::string> ahead_metrics;
  // Replaces the stage-1 list when not empty (--stage1-metrics FILE): for measuring what a
  // metric costs in counter passes. The class needs the default list's metrics; without them
  // the roofline reports what it could not place.
  std::vector<std::string> stage1_override;
  bool trace = true;                       // the system-level trace (one-shot worker)
  // With trace: skip it when the stage-1 counters already explain the call
  // (counters_explain_call). The model loop's analysis sets this: for a call that is one kernel
  // the trace costs a process start and shows nothing the counters do not.
  bool trace_unless_explained = false;
  bool sass = true;                        // cuobjdump of the built candidate
  // Also collect the same counters with ncu and report how far the two collectors differ
  // (the check of the in-process path). Default off: it costs an ncu run (~3 s).
  bool compare_ncu = false;
  // Stage 2 chosen by the caller instead of by metric families (when stage >= 2): from the
  // classified stage-1 page, the extra metrics to collect, in one more collection. `kernelpro
  // analyze` passes the union of the chosen tools' metrics. Empty result: no stage 2.
  std::function<std::vector<std::string>(const ProfilePage&)> stage2_metrics;
  // This GPU's ceilings once its device is known (calibrated, or the datasheet's with a warning
  // written to *warning). Required.
  std::function<profile::Ceilings(const eval::DeviceInfo&, std::string* warning)> ceilings_for;
};

// Progress lines ("stage 1: counters (cupti)..."), for the CLI to print.
using ProgressFn = std::function<void(const std::string&)>;

// Where a profile is taken (driver/judge.h sets it): the evaluator whose warm worker collects
// the counters and, when given, how the candidate's verdict is had (the judge's kept verdict,
// or its evaluation with the run's reference time). Default: an evaluator of its own from
// options.evaluator and a new evaluation on it.
struct ProfileOn {
  eval::Evaluator* evaluator = nullptr;
  std::function<Result<eval::EvalResult>()> verdict;
};

// Evaluates and profiles. The evaluation's failure is the page's answer (eval.outcome not ok,
// nothing collected): a wrong or slow-to-build candidate is reported, not profiled. An Error only
// when the evaluation could not be attempted (as Evaluator::evaluate). Failures of single
// collectors are notes, except counters under an explicit --collector, which are errors.
Result<ProfilePage> run_profile(const task::Task& task, const std::filesystem::path& candidate,
                                const std::filesystem::path& library_source, const ProfileSessionOptions& options,
                                const ProgressFn& progress = {}, const ProfileOn& on = {});

// The metrics of the first collection: stage 1 (or its override), --metrics, and with_ahead the
// ahead_metrics, in that order without repeats. The worker's prewarmed session is made for it.
std::vector<std::string> stage1_request(const ProfileSessionOptions& options, bool with_ahead = true);

// The worker options a profile wants from the evaluator it runs on: the stage-1 Range Profiler
// session prewarmed while the candidate builds (collector cupti, replay not "kernel"). An
// evaluator (or judge) that will profile is made with these.
eval::EvaluatorOptions evaluator_options_for_profile(const ProfileSessionOptions& options);

// Why the counters already explain a call whose verdict median is `call_median_s`, or "" when
// they do not: the call launched one kernel, it was profiled, and its duration is at least
// `share` of the median. Then a trace could show at most 1 - share of the call as gaps or copies.
std::string counters_explain_call(const profile::KernelProfile& counters, double call_median_s, double share = 0.9);

// Names the kernels the counters know only by CUPTI's range number ("0", "1": the Range
// Profiler beside another CUPTI client, PyTorch in the KernelBench worker) from the names the
// worker traced for one call (`traced`, in launch order): by position when both list the same
// number of launches, else the one name when every traced launch has the same. With neither, a
// numbered kernel says its name is unknown rather than printing a bare number.
void name_numbered_kernels(profile::KernelProfile& counters, const std::vector<std::string>& traced);

// The agreement of two collections of the same metrics: for each kernel present in both (matched
// by launch order) and each metric both report, the relative difference.
std::vector<MetricAgreement> compare_collectors(const profile::KernelProfile& cupti, const profile::KernelProfile& ncu);

}  // namespace kp::driver
