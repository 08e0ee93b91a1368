// One evaluation end to end, as `kernelpro eval` runs it: build the reference and the
// candidate (in parallel, cached), run them on a worker, and derive the verdict's figures.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "build/builder.h"
#include "eval/gpu_census.h"
#include "eval/worker_client.h"
#include "task/task.h"
#include "verdict/eval_options.h"
#include "verdict/protocol.h"
#include "verdict/statistics.h"

namespace kp::eval {

// How a candidate reaches the GPU. Native: a .cu exporting kp_run. KernelBench: a .py defining
// ModelNew, either with its CUDA inline (torch.utils.cpp_extension.load_inline, built by the
// Python worker) or with a .cu beside it that kernelpro builds with nvcc and the .py loads.
enum class CandidateForm { kNative, kLoadInline, kPrebuilt };
// "native", "load_inline", "prebuilt".
const char* to_string(CandidateForm form);

struct EvalResult {
  Outcome outcome = Outcome::kNotRun;
  std::string reason;
  // The anti-cheat rule behind a rejected or incorrect outcome (WorkerReport::cheat lists the
  // tags), or "forbidden_library", decided from the build (eval/library_policy.h). Empty otherwise.
  std::string cheat;
  std::string task_name;
  std::filesystem::path candidate;
  CandidateForm form = CandidateForm::kNative;
  std::filesystem::path library_source;               // prebuilt form: the .cu built into candidate_build
  std::optional<build::BuildResult> candidate_build;  // native, and the prebuilt form's .cu
  std::optional<build::BuildResult> reference_build;
  std::optional<DeviceInfo> device;    // absent when no GPU
  std::optional<WorkerReport> report;  // the worker's findings
  std::string candidate_stdout, candidate_stderr;
  // Derived from report (when timed): median seconds per call and its spread.
  Summary time;
  double reference_seconds = 0;
  std::string reference_gpu_check;  // what ReferenceTiming::gpu_check found when that time was taken
  double speedup_vs_reference = 0;  // reference median / candidate median
  double achieved_bytes_per_s = 0;  // task ideal bytes / median
  double achieved_flops_per_s = 0;  // task ideal FLOPs / median
  // Where the wall time of this evaluation went, seconds.
  double build_seconds = 0, worker_start_seconds = 0, worker_seconds = 0, total_seconds = 0;
};

// A reference's time on one GPU, measured alone (EvalOptions::reference_only) in a worker that
// has never loaded a candidate. The judge (driver/judge.h) keeps one per task, shapes and GPU for
// a run and hands it to every evaluation of that task.
struct ReferenceTiming {
  double seconds = 0;         // median per call
  TimingReport timing;        // its samples, method and why sampling stopped
  double worker_seconds = 0;  // the request's wall time
  bool own_worker = false;    // timed in a worker started for it (the evaluator's had run a candidate)
  // What the check for other processes' work found (eval/gpu_census.h): "no other process held
  // the GPU", what others held and whether they ran work, or why it could not be checked; and
  // what the check cost ("(checked in 0.0012 s)").
  std::string gpu_check;
  // Non-empty: another process ran work on the GPU while the reference was timed, so `seconds`
  // is not to be trusted. An evaluation handed such a timing ends as the machine's failure
  // (Outcome::kGpuUnavailable, with this reason) without running; the judge keeps no such timing.
  std::string machine_busy;
};

// Where an evaluation gets the reference's time when it does not time the reference itself:
// called once the candidate has built and a GPU is there (so a candidate that does not compile
// costs no reference timing); nullptr from it means "time it in this evaluation".
using ReferenceSource = std::function<const ReferenceTiming*()>;

struct EvaluatorOptions {
  build::BuildOptions build;
  EvalOptions eval;
  WorkerOptions worker;
  // Replaces NVML's foreign-work check after a reference timing (check_foreign_work), given the
  // worker's pid: for tests on machines where NVML cannot run. Unset: NVML.
  std::function<ForeignWork(int worker_pid)> foreign_work_check;
};

class Evaluator {
 public:
  explicit Evaluator(EvaluatorOptions options);
  ~Evaluator();

  // Evaluates candidate (a .cu file) on task. Every failure of the candidate is an outcome;
  // an Error means the evaluation could not be attempted: the candidate file is missing
  // (kNotFound), the task's own reference does not build or fails on the task's own shapes
  // (kInvalidInput, with the diagnostics or the reference's message), or nvcc is missing. Without a GPU the outcome is
  // not_run, with both builds reported.
  //
  // KernelBench task (the worker must then be the Python worker): candidate is a .py. The
  // prebuilt form is taken when library_source names a .cu, or, when it is empty, when a .cu
  // with the candidate's stem lies beside it: that .cu is built here (compile_error as for
  // native; no kp_run is needed) and the worker gets library and library_source. Otherwise the
  // worker builds the candidate itself, in <cache_dir>/torch_extensions. Errors: kNotFound for
  // a missing candidate or .cu, kInvalidInput when the candidate is not a .py or the problem's
  // Model fails on its own inputs.
  //
  // `reference`: where the reference's time comes from (the judge's run-wide measurement, see
  // ReferenceSource); when it gives one, the worker does not time the reference (it still runs
  // it for the expected outputs) and the verdict's reference_seconds and speedup are that
  // measurement's. Errors it returns through `reference_error` end the evaluation (the task's).
  Result<EvalResult> evaluate(const task::Task& task, const std::filesystem::path& candidate,
                              const std::filesystem::path& library_source = {}, const ReferenceSource& reference = {});

  // Times the task's reference alone, in this evaluator's worker when it has never loaded a
  // candidate (the first request of a run), else in a worker started for this and stopped
  // after. kUnavailable without a GPU; kInvalidInput when the reference does not build or fails
  // on its own shapes; kTool when the worker crashed or hung.
  // After the timing, while the worker is idle, it checks that no other process ran GPU work
  // meanwhile (eval/gpu_census.h); one that did is named in ReferenceTiming::machine_busy.
  Result<ReferenceTiming> time_reference(const task::Task& task);

  // Whether the evaluations from now on accept a candidate that runs no kernel of its own
  // (EvalOptions::library_only_ok): the model loop's KernelBench seed, the problem's own PyTorch
  // code, is judged so on the one worker its children use.
  void set_library_only_ok(bool on) { options_.eval.library_only_ok = on; }

  // The worker's device; kUnavailable without a GPU.
  Result<DeviceInfo> device() { return worker_.device(); }
  build::Builder& builder() { return builder_; }
  // The worker this evaluator runs on, kept warm for further requests on the same candidate
  // (kernelpro profile sends its "profile" requests here).
  WorkerClient& worker() { return worker_; }

 private:
  Result<EvalResult> evaluate_kernelbench(const task::Task& task, const std::filesystem::path& candidate,
                                          std::filesystem::path library_source, const ReferenceSource& reference);
  // Runs the worker part shared by both task kinds and fills r from its report.
  Status run_on_worker(const task::Task& task, EvalResult& r, const std::filesystem::path& reference,
                       const std::filesystem::path& candidate, const KernelBenchFiles* files,
                       const ReferenceSource& reference_time);

  // NVML for the foreign-work check, opened at the first reference timing; null where NVML is
  // not there (gpu_watch_error says why).
  GpuWatch* gpu_watch(const std::string& pci_bus_id);

  EvaluatorOptions options_;
  build::Builder builder_;
  WorkerClient worker_;
  std::unique_ptr<GpuWatch> gpu_watch_;
  std::optional<std::string> gpu_watch_error_;
};

}  // namespace kp::eval
