#include "eval/evaluator.h"

#include <chrono>

#include <fmt/format.h>

namespace kp::eval {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Evaluator::Evaluator(EvaluatorOptions options)
    : options_(std::move(options)), builder_(options_.build), worker_(options_.worker) {}

Evaluator::~Evaluator() = default;

Result<EvalResult> Evaluator::evaluate(const task::Task& task, const fs::path& candidate) {
  auto t0 = Clock::now();
  EvalResult r;
  r.task_name = task.name;
  r.candidate = candidate;
  if (!fs::is_regular_file(candidate))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no such candidate file (a .cu that exports kp_run)", candidate.string()));

  auto builds = builder_.build_all({build::BuildRequest{task.reference_path, task.reference_libraries, {}},
                                    build::BuildRequest{candidate, task.candidate_libraries, {}}});
  r.build_seconds = since(t0);
  if (!builds[0].ok()) return std::move(builds[0]).error().wrap("building the task's reference");
  if (!builds[1].ok()) return std::move(builds[1]).error().wrap("building the candidate");
  r.reference_build = *builds[0];
  r.candidate_build = *builds[1];
  if (!r.reference_build->ok)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("the task's reference {} does not compile; fix the task:\n{}", task.reference_path.string(),
                                  build::summarize_diagnostics(r.reference_build->diagnostics, 5)));
  if (!r.candidate_build->ok) {
    r.outcome = Outcome::kCompileError;
    r.reason = build::summarize_diagnostics(r.candidate_build->diagnostics, 5);
    r.total_seconds = since(t0);
    return r;
  }

  if (r.candidate_build->exports_kp_run == false) {
    r.outcome = Outcome::kLoadError;
    r.reason = fmt::format("{} does not export kp_run: define `KP_EXPORT int kp_run(kp_args* args)` "
                           "(include <kernelpro/kp_abi.h>)", candidate.string());
    r.total_seconds = since(t0);
    return r;
  }

  auto t1 = Clock::now();
  auto dev = worker_.device();
  r.worker_start_seconds = since(t1);
  if (!dev.ok()) {
    if (dev.error().code != ErrorCode::kUnavailable) return std::move(dev).error();
    r.outcome = Outcome::kNotRun;
    r.reason = dev.error().message;
    r.total_seconds = since(t0);
    return r;
  }
  r.device = *dev;
  auto t2 = Clock::now();
  KP_TRY(WorkerEvaluation ev, worker_.evaluate(task, r.reference_build->artifact, r.candidate_build->artifact, options_.eval));
  r.worker_seconds = since(t2);
  if (ev.report.reference_failed)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}; the task is at fault, not the candidate: make task.toml's shapes, dtypes and "
                                  "scalars match what {} accepts",
                                  ev.report.reason, task.reference_path.string()));
  r.outcome = ev.report.outcome;
  r.reason = ev.report.reason;
  r.candidate_stdout = std::move(ev.candidate_stdout);
  r.candidate_stderr = std::move(ev.candidate_stderr);
  if (ev.report.timing && !ev.report.timing->samples_s.empty()) {
    r.time = summarize(ev.report.timing->samples_s);
    r.reference_seconds = ev.report.reference_seconds;
    if (r.time.median > 0) {
      if (r.reference_seconds > 0) r.speedup_vs_reference = r.reference_seconds / r.time.median;
      r.achieved_bytes_per_s = task.ideal_bytes / r.time.median;
      r.achieved_flops_per_s = task.ideal_flops / r.time.median;
    }
  }
  r.report = std::move(ev.report);
  r.total_seconds = since(t0);
  return r;
}

}  // namespace kp::eval
