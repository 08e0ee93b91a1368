// The judge: the one owner of a GPU's measurements. One judge per device holds one warm worker
// and takes each candidate through build, evaluation and, when asked, profiling and analysis on
// that same worker, measuring it once:
//   - each reference is timed once per run per (task, shapes, precision, GPU), alone, in a
//     worker that has never loaded a candidate (eval::Evaluator::time_reference), and that
//     measurement is the reference time of every verdict on that task;
//   - the verdict of a candidate is kept, so that profiling or analyzing it afterwards (the
//     model loop's feedback) collects counters only, and the MEASURED line a model reads is the
//     verdict's own numbers, not a second evaluation's.
// `kernelpro eval`, `profile`, `analyze`, `generate` and `optimize` (tuner and model loop) all go
// through a judge. A pool of GPUs (a later issue) is a pool of judges, one per device; a judge
// is not thread-safe (one request at a time, as its worker).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "driver/analyze_session.h"
#include "driver/profile_session.h"
#include "eval/evaluator.h"
#include "task/task.h"

namespace kp::driver {

// How the judge retries an evaluation the machine failed (eval::Outcome::kGpuUnavailable:
// another process holds the GPU's memory): `retries` more tries on a fresh worker, the first
// after `first_wait_s`, each later one after three times the wait before it.
struct GpuRetry {
  int retries = 2;
  double first_wait_s = 10;
};

struct JudgeStats {
  int evaluations = 0;           // candidates evaluated on the worker
  int gpu_retries = 0;           // evaluations tried again because the GPU was held elsewhere
  int reference_timings = 0;     // references timed alone
  int reference_reuses = 0;      // evaluations that reused a reference timed before
  int busy_references = 0;       // reference timings dropped: another process ran GPU work beside them
  int verdict_reuses = 0;        // profiles and analyses that reused a verdict instead of evaluating again
  double reference_seconds = 0;  // wall time of the reference timings
};

class Judge {
 public:
  explicit Judge(eval::EvaluatorOptions options, GpuRetry retry = {});
  ~Judge();
  Judge(const Judge&) = delete;
  Judge& operator=(const Judge&) = delete;

  // Evaluates a candidate (as eval::Evaluator::evaluate), with the task's reference timed once
  // for the run. Where the reference cannot be timed alone (a worker crash), the evaluation
  // times it itself, as before; a reference that does not build or fails is the task's error.
  Result<eval::EvalResult> evaluate(const task::Task& task, const std::filesystem::path& candidate,
                                    const std::filesystem::path& library_source = {});

  // Profiles a candidate on the judge's worker: the verdict of its last evaluation by this judge
  // when the files are unchanged (no second evaluation), else a new evaluation first.
  Result<ProfilePage> profile(const task::Task& task, const std::filesystem::path& candidate,
                              const std::filesystem::path& library_source, const ProfileSessionOptions& options,
                              const ProgressFn& progress = {});
  // The same for the whole analysis (driver/analyze_session.h).
  Result<AnalyzePage> analyze(const task::Task& task, const std::filesystem::path& candidate,
                              const std::filesystem::path& library_source, const AnalyzeOptions& options,
                              const ProgressFn& progress = {});

  // The verdict this judge last gave the candidate, when its files have not changed since.
  const eval::EvalResult* verdict_of(const std::filesystem::path& candidate,
                                     const std::filesystem::path& library_source = {}) const;

  // The reference timing the judge holds for this task on its GPU, when it has one.
  const eval::ReferenceTiming* reference_of(const task::Task& task) const;

  eval::Evaluator& evaluator() { return *evaluator_; }
  // A KernelBench reference seed (the problem's own PyTorch code, no kernel of its own) is judged
  // with library_only_ok while this lives, on this judge's worker: the loop has one worker, since
  // a second one's range profiler makes the other's collection fail (CUPTI_ERROR_HARDWARE_BUSY,
  // issue 42 on the H100).
  class SeedScope {
   public:
    explicit SeedScope(Judge& judge) : judge_(judge) { judge_.evaluator_->set_library_only_ok(true); }
    ~SeedScope() { judge_.evaluator_->set_library_only_ok(judge_.options_.eval.library_only_ok); }
    SeedScope(const SeedScope&) = delete;
    SeedScope& operator=(const SeedScope&) = delete;

   private:
    Judge& judge_;
  };
  const eval::EvaluatorOptions& options() const { return options_; }
  const JudgeStats& stats() const { return stats_; }

 private:
  // What identifies a reference measurement: the task's name, reference file (path and
  // contents), shapes, scalars and precision, and the GPU (name and PCI bus).
  std::string reference_key(const task::Task& task) const;
  std::string candidate_key(const std::filesystem::path& candidate, const std::filesystem::path& library_source) const;
  // Where a profile of the candidate runs: this judge's worker, with its kept verdict (else a new
  // evaluation by this judge).
  ProfileOn on_worker(const task::Task& task, const std::filesystem::path& candidate,
                      const std::filesystem::path& library_source);

  eval::EvaluatorOptions options_;
  GpuRetry retry_;
  std::unique_ptr<eval::Evaluator> evaluator_;
  std::map<std::string, eval::ReferenceTiming> references_;
  std::map<std::string, std::string> failed_references_;  // key -> why it could not be timed alone
  std::optional<eval::ReferenceTiming> busy_reference_;     // the last one timed beside foreign work
  std::map<std::string, eval::EvalResult> verdicts_;      // candidate_key -> its last verdict
  JudgeStats stats_;
};

}  // namespace kp::driver
