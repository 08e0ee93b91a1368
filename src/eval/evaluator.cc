#include "eval/evaluator.h"

#include <chrono>

#include <fmt/format.h>

#include "eval/library_policy.h"

namespace kp::eval {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

const char* to_string(CandidateForm f) {
  switch (f) {
    case CandidateForm::kNative: return "native";
    case CandidateForm::kLoadInline: return "load_inline";
    case CandidateForm::kPrebuilt: return "prebuilt";
  }
  return "native";
}

Evaluator::Evaluator(EvaluatorOptions options)
    : options_(std::move(options)), builder_(options_.build), worker_(options_.worker) {}

Evaluator::~Evaluator() = default;

Result<EvalResult> Evaluator::evaluate(const task::Task& task, const fs::path& candidate,
                                       const fs::path& library_source, const ReferenceSource& reference) {
  if (task.kind == task::TaskKind::kKernelBench)
    return evaluate_kernelbench(task, candidate, library_source, reference);
  auto t0 = Clock::now();
  EvalResult r;
  r.task_name = task.name;
  r.candidate = candidate;
  if (!library_source.empty())
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: a separate .cu applies to KernelBench problems only; a "
                                  "native task's candidate is itself the .cu",
                                  library_source.string()));
  if (!fs::is_regular_file(candidate))
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no such candidate file (a .cu that exports kp_run)", candidate.string()));

  // The worker's CUDA start-up (and its Range Profiler prewarm) overlaps the build.
  worker_.launch();
  auto builds = builder_.build_all({build::BuildRequest{task.reference_path, task.reference_libraries, {}},
                                    build::BuildRequest{candidate, task.candidate_libraries, {}}});
  r.build_seconds = since(t0);
  if (!builds[0].ok()) return std::move(builds[0]).error().wrap("building the task's reference");
  if (!builds[1].ok()) return std::move(builds[1]).error().wrap("building the candidate");
  r.reference_build = *builds[0];
  r.candidate_build = *builds[1];
  if (!r.reference_build->ok)
    return make_error(
        ErrorCode::kInvalidInput,
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
    r.reason = fmt::format(
        "{} does not export kp_run: define `KP_EXPORT int kp_run(kp_args* args)` "
        "(include <kernelpro/kp_abi.h>)",
        candidate.string());
    r.total_seconds = since(t0);
    return r;
  }
  // Decided from the build alone, before any GPU time is spent: a forbidden library would do
  // the work that is being measured.
  if (auto v = find_forbidden_library(*r.candidate_build, task.candidate_libraries)) {
    r.outcome = Outcome::kRejected;
    r.cheat = "forbidden_library";
    r.reason = v->reason;
    r.total_seconds = since(t0);
    return r;
  }
  KP_TRY_STATUS(run_on_worker(task, r, r.reference_build->artifact, r.candidate_build->artifact, nullptr, reference));
  r.total_seconds = since(t0);
  return r;
}

Result<EvalResult> Evaluator::evaluate_kernelbench(const task::Task& task, const fs::path& candidate,
                                                   fs::path library_source, const ReferenceSource& reference) {
  auto t0 = Clock::now();
  EvalResult r;
  r.task_name = task.name;
  r.candidate = candidate;
  if (!fs::is_regular_file(candidate))
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no such candidate file (a .py defining ModelNew)", candidate.string()));
  if (candidate.extension() != ".py")
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: a KernelBench candidate is a .py defining ModelNew; a .cu that the .py loads "
                                  "goes beside it with the same stem, or is named with --cu",
                                  candidate.string()));
  if (!library_source.empty()) {
    if (!fs::is_regular_file(library_source))
      return make_error(ErrorCode::kNotFound, fmt::format("{}: no such .cu file (--cu)", library_source.string()));
  } else if (fs::path beside = fs::path(candidate).replace_extension(".cu"); fs::is_regular_file(beside)) {
    library_source = beside;
  }

  KernelBenchFiles files;
  if (!library_source.empty()) {
    r.form = CandidateForm::kPrebuilt;
    r.library_source = library_source;
    // The prebuilt form's .cu is a library the .py loads, not a kp_run candidate: no export check.
    auto built = builder_.build(build::BuildRequest{library_source, {}, {}});
    r.build_seconds = since(t0);
    if (!built.ok()) return std::move(built).error().wrap("building the candidate's .cu");
    r.candidate_build = *built;
    if (!r.candidate_build->ok) {
      r.outcome = Outcome::kCompileError;
      r.reason = build::summarize_diagnostics(r.candidate_build->diagnostics, 5);
      r.total_seconds = since(t0);
      return r;
    }
    files.library = r.candidate_build->artifact;
    files.library_source = fs::absolute(library_source);
  } else {
    r.form = CandidateForm::kLoadInline;
    files.build_dir = options_.build.cache_dir / "torch_extensions";
    std::error_code ec;
    fs::create_directories(files.build_dir, ec);
  }
  KP_TRY_STATUS(run_on_worker(task, r, task.reference_path, candidate, &files, reference));
  r.total_seconds = since(t0);
  return r;
}

Status Evaluator::run_on_worker(const task::Task& task, EvalResult& r, const fs::path& reference,
                                const fs::path& candidate, const KernelBenchFiles* files,
                                const ReferenceSource& reference_time) {
  auto t1 = Clock::now();
  auto dev = worker_.device();
  r.worker_start_seconds = since(t1);
  if (!dev.ok()) {
    if (dev.error().code != ErrorCode::kUnavailable) return std::move(dev).error();
    // A busy GPU is the machine's failure for now (the judge retries it); a missing one, for good.
    r.outcome = worker_.start_was_busy() ? Outcome::kGpuUnavailable : Outcome::kNotRun;
    r.reason = dev.error().message;
    return ok_status();
  }
  r.device = *dev;
  const ReferenceTiming* reference_timing = reference_time ? reference_time() : nullptr;
  if (reference_timing && !reference_timing->machine_busy.empty()) {
    // The machine's failure, not the candidate's: nothing of it is run against that time.
    r.outcome = Outcome::kGpuUnavailable;
    r.reason = reference_timing->machine_busy;
    return ok_status();
  }
  auto t2 = Clock::now();
  EvalOptions options = options_.eval;
  if (reference_timing) options.time_reference = false;  // the judge's measurement stands for it
  KP_TRY(WorkerEvaluation ev, files ? worker_.evaluate(task, reference, candidate, options, *files)
                                    : worker_.evaluate(task, reference, candidate, options));
  r.worker_seconds = since(t2);
  if (ev.report.reference_failed) {
    if (task.kind == task::TaskKind::kKernelBench)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("{}; the problem is at fault, not the candidate: {}'s Model must run on the "
                                    "inputs its get_inputs() makes",
                                    ev.report.reason, task.reference_path.string()));
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}; the task is at fault, not the candidate: make task.toml's shapes, dtypes and "
                                  "scalars match what {} accepts",
                                  ev.report.reason, task.reference_path.string()));
  }
  r.outcome = ev.report.outcome;
  r.reason = ev.report.reason;
  r.cheat = ev.report.cheat;
  r.candidate_stdout = std::move(ev.candidate_stdout);
  r.candidate_stderr = std::move(ev.candidate_stderr);
  if (ev.report.timing && !ev.report.timing->samples_s.empty()) {
    r.time = summarize(ev.report.timing->samples_s);
    r.reference_seconds = reference_timing ? reference_timing->seconds : ev.report.reference_seconds;
    if (reference_timing) {
      ev.report.reference_seconds = reference_timing->seconds;
      r.reference_gpu_check = reference_timing->gpu_check;
    }
    if (r.time.median > 0) {
      if (r.reference_seconds > 0) r.speedup_vs_reference = r.reference_seconds / r.time.median;
      r.achieved_bytes_per_s = task.ideal_bytes / r.time.median;
      r.achieved_flops_per_s = task.ideal_flops / r.time.median;
    }
  }
  r.report = std::move(ev.report);
  return ok_status();
}

Result<ReferenceTiming> Evaluator::time_reference(const task::Task& task) {
  fs::path reference = task.reference_path;
  if (task.kind != task::TaskKind::kKernelBench) {
    worker_.launch();
    auto built = builder_.build(build::BuildRequest{task.reference_path, task.reference_libraries, {}});
    if (!built.ok()) return std::move(built).error().wrap("building the task's reference");
    if (!built->ok)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("the task's reference {} does not compile; fix the task:\n{}",
                                    task.reference_path.string(), build::summarize_diagnostics(built->diagnostics, 5)));
    reference = built->artifact;
  }
  EvalOptions options = options_.eval;
  options.reference_only = true;
  options.time_reference = true;
  // A worker that has never loaded a candidate: this evaluator's, or one of its own. The
  // candidates' worker is stopped first, with its process group: a thread or a process a
  // candidate left running there could load the GPU while the reference is timed and inflate
  // every later speedup (issue 28, item 4). The next candidate gets a fresh worker.
  std::unique_ptr<WorkerClient> own;
  WorkerClient* worker = &worker_;
  if (worker_.has_loaded_candidate()) {
    worker_.stop();
    WorkerOptions wo = options_.worker;
    wo.prewarm_metrics.clear();
    wo.scratch_dir = options_.worker.scratch_dir / "reference-worker";
    own = std::make_unique<WorkerClient>(wo);
    worker = own.get();
  }
  auto t0 = Clock::now();
  // Who holds the GPU before the request goes out, for the foreign-work check after it.
  KP_TRY(DeviceInfo device, worker->device());
  GpuWatch* watch = options_.foreign_work_check ? nullptr : gpu_watch(device.pci_bus_id);
  std::vector<GpuProcess> census_before;
  if (watch)
    if (auto c = watch->compute_processes(); c.ok()) census_before = std::move(*c);
  const uint64_t window_from = epoch_us();
  const KernelBenchFiles none;
  KP_TRY(WorkerEvaluation ev, task.kind == task::TaskKind::kKernelBench
                                  ? worker->evaluate(task, reference, fs::path(), options, none)
                                  : worker->evaluate(task, reference, fs::path(), options));
  ReferenceTiming t;
  t.worker_seconds = since(t0);
  t.own_worker = own != nullptr;
  // The worker sits idle now and still holds its context: the census sees it as ours.
  auto t1 = Clock::now();
  if ((watch || options_.foreign_work_check) && ev.report.outcome == Outcome::kOk) {
    ForeignWork fw = options_.foreign_work_check ? options_.foreign_work_check(worker->pid())
                                                 : check_foreign_work(*watch, worker->pid(), census_before, window_from);
    t.gpu_check = fw.checked ? fw.note : "not checked: " + fw.note;
    if (fw.busy) t.machine_busy = fw.note + "; the reference's time would be inflated, so the evaluation waits and is retried";
  } else if (!watch) {
    t.gpu_check = "not checked: " + gpu_watch_error_.value_or("NVML is not there");
  }
  // What the check cost, in the words the report carries: a millisecond alone on the GPU, up to
  // an idle window of 2.5 s when others hold contexts.
  if (!t.gpu_check.empty()) t.gpu_check += fmt::format(" (checked in {:.3g} s)", since(t1));
  if (own) own->stop();
  if (ev.report.reference_failed)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}; the task is at fault, not a candidate: {} must run on the task's own inputs",
                                  ev.report.reason, task.reference_path.string()));
  if (ev.report.outcome != Outcome::kOk || !ev.report.reference_timing || ev.report.reference_timing->samples_s.empty())
    return make_error(ErrorCode::kTool,
                      fmt::format("timing the reference alone: {} ({})", to_string(ev.report.outcome),
                                  ev.report.reason.empty() ? "no timing in the reply" : ev.report.reason));
  t.timing = *ev.report.reference_timing;
  t.seconds = summarize(t.timing.samples_s).median;
  return t;
}

GpuWatch* Evaluator::gpu_watch(const std::string& pci_bus_id) {
  if (!gpu_watch_ && !gpu_watch_error_) {
    auto w = GpuWatch::open(pci_bus_id);
    if (w.ok())
      gpu_watch_ = std::move(*w);
    else
      gpu_watch_error_ = w.error().message;
  }
  return gpu_watch_.get();
}

}  // namespace kp::eval
