// One evaluation end to end, as `kernelpro eval` runs it: build the reference and the
// candidate (in parallel, cached), run them on a worker, and derive the verdict's figures.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "build/builder.h"
#include "eval/eval_options.h"
#include "eval/protocol.h"
#include "eval/statistics.h"
#include "eval/worker_client.h"
#include "task/task.h"

namespace kp::eval {

struct EvalResult {
  Outcome outcome = Outcome::kNotRun;
  std::string reason;
  std::string task_name;
  std::filesystem::path candidate;
  std::optional<build::BuildResult> candidate_build;
  std::optional<build::BuildResult> reference_build;
  std::optional<DeviceInfo> device;       // absent when no GPU
  std::optional<WorkerReport> report;     // the worker's findings
  std::string candidate_stdout, candidate_stderr;
  // Derived from report (when timed): median seconds per call and its spread.
  Summary time;
  double reference_seconds = 0;
  double speedup_vs_reference = 0;        // reference median / candidate median
  double achieved_bytes_per_s = 0;        // task ideal bytes / median
  double achieved_flops_per_s = 0;        // task ideal FLOPs / median
  // Where the wall time of this evaluation went, seconds.
  double build_seconds = 0, worker_start_seconds = 0, worker_seconds = 0, total_seconds = 0;
};

struct EvaluatorOptions {
  build::BuildOptions build;
  EvalOptions eval;
  WorkerOptions worker;
};

class Evaluator {
 public:
  explicit Evaluator(EvaluatorOptions options);
  ~Evaluator();

  // Evaluates candidate (a .cu file) on task. Every failure of the candidate is an outcome;
  // an Error means the evaluation could not be attempted: the candidate file is missing
  // (kNotFound), the task's own reference does not build or fails on the task's own shapes
  // (kInvalidInput, with the diagnostics or the reference's message), or nvcc is missing. Without a GPU the outcome is not_run, with both builds reported.
  Result<EvalResult> evaluate(const task::Task& task, const std::filesystem::path& candidate);

  // The worker's device; kUnavailable without a GPU.
  Result<DeviceInfo> device() { return worker_.device(); }
  build::Builder& builder() { return builder_; }

 private:
  EvaluatorOptions options_;
  build::Builder builder_;
  WorkerClient worker_;
};

}  // namespace kp::eval
