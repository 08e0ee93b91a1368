// The workbench of one run of a loop (generate, the model loop, the tuner): everything the loop
// does to a candidate besides choosing it, as plain calls:
//
//   build_ahead(cu)        nvcc into the build cache the evaluator reads, while the GPU measures
//                          another candidate (native candidates)
//   evaluate(candidate)    the verdict: Judge::evaluate -> eval::Evaluator -> the worker
//   analyze(candidate)     the feedback on a passing candidate, profiled on the judge's worker
//   coder_tools()          what the coder may call: compile a draft, search CUTLASS
//
// and the verdict goes to the store as eval::result_to_json (eval/result_json.h) makes it. One
// JudgeBench per run owns the judge, the builders, the analysis set-up and the coder's tools;
// the CLI makes it from its flags (cli::open_loop_bench) and passes it to the loop. A test gives the
// loop a Workbench of its own, a subclass, in its place.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agents.h"
#include "build/builder.h"
#include "driver/judge.h"
#include "driver/profile_session.h"
#include "eval/evaluator.h"
#include "profile/calibration.h"
#include "sys/temp_dir.h"
#include "task/task.h"
#include "util/result.h"

namespace kp::driver {

// What a loop learns from analyzing a candidate.
struct Analysis {
  std::string feedback;                // the feedback operator's text
  std::vector<std::string> tools_run;  // the tools that made it
  std::string bottleneck_class;        // the roofline class ("memory-bound", ...); empty if unknown
  // The measured lines and the raw counter values, without the tools' findings: what the
  // search's "raw-metrics" feedback ablation gives the model instead of `feedback`.
  std::string raw_metrics;
  // Where the analysis's time went, seconds, by part of the profile ("sass", "counters",
  // "trace", "stage2"; the verdict it reuses is not among them). "sass" runs alongside the
  // counters; "sass_wait" is what it added to the analysis's wall time.
  std::map<std::string, double> seconds;
};

// A candidate's files. Native: cu. KernelBench: py, and cu when the candidate has one.
struct CandidatePaths {
  std::filesystem::path cu, py;
  // The run's seed: for a KernelBench problem without one, its reference, which may call only
  // library code (Judge::SeedScope).
  bool root = false;
};

// What a loop is told by the one who runs it: progress lines and Ctrl-C.
struct LoopControls {
  std::function<void(const std::string&)> progress;  // one line per step; may be empty
  std::function<bool()> interrupted;                 // stop after the step in flight; may be empty
  void say(const std::string& line) const {
    if (progress) progress(line);
  }
  bool stop() const { return interrupted && interrupted(); }
};

class Workbench {
 public:
  virtual ~Workbench() = default;
  virtual Result<eval::EvalResult> evaluate(const CandidatePaths& candidate) = 0;
  // Whether analyze gives feedback (false with --feedback none: the loops then never call it).
  virtual bool analyzes() const { return false; }
  // The feedback on a passing candidate, with `extra_tools` run beside those its evidence calls
  // for; an error when it did not pass or could not be profiled.
  virtual Result<Analysis> analyze(const CandidatePaths& candidate, const std::vector<std::string>& extra_tools);
  // Whether build_ahead compiles anything (native tasks); when false the loops skip the step.
  virtual bool builds_ahead() const { return false; }
  // Called on another thread than the rest (the pipeline's build stage, the tuner's ahead
  // thread), one call at a time.
  virtual void build_ahead(const std::filesystem::path& cu) { (void)cu; }
  virtual const agent::CoderTools* coder_tools() const { return nullptr; }  // null: none offered
  // The analysis tools generate's analyst may ask for (all of analyze's); none: it is not asked.
  virtual std::vector<agent::ToolOffer> tool_offers() const { return {}; }
};

// What `profile` and `analyze` share, and a loop's analyses: the task, the candidate, the
// scratch folder and the profile session's options.
struct ProfileSetup {
  task::Task task;
  std::filesystem::path candidate;
  std::optional<sys::TempDir> scratch;
  std::unique_ptr<profile::CalibrationStore> store;
  ProfileSessionOptions options;
};

struct JudgeBenchOptions {
  // Analyze passing candidates (a loop's --feedback other than none; generate always). With it the
  // worker prewarms the stage-1 counters and every tool's metrics ride with them, one collection
  // per candidate (KP_LOOP_STAGE2_APART=1 keeps the two apart, for bench/throughput.sh).
  bool feedback = true;
  build::BuildOptions build;  // the builders' (ahead, drafts), over the evaluator's cache and flags
  // The coder's CUTLASS tools (search, read, list), made by the caller; the bench adds
  // compile_check, which builds drafts into RUN_DIR/drafts.
  agent::CoderTools code_tools;
  bool offer_tools = true;           // offer coder_tools at all (a provider without tool calling: no)
  std::filesystem::path run_dir;     // where drafts go
};

// The workbench of a real run: one judge (one worker: the seed, the children, their analyses),
// profiling on that worker, the build-ahead and draft builders.
class JudgeBench final : public Workbench {
 public:
  static Result<std::unique_ptr<JudgeBench>> open(const task::Task& task, std::unique_ptr<ProfileSetup> setup,
                                                  JudgeBenchOptions options);
  // The tuner's: a judge with `evaluator`'s options, no analysis, no coder; build_ahead compiles
  // with `build` (the evaluator's cache and flags).
  static std::unique_ptr<JudgeBench> open_for_tuning(const task::Task& task, const eval::EvaluatorOptions& evaluator,
                                                     const build::BuildOptions& build);

  Result<eval::EvalResult> evaluate(const CandidatePaths& candidate) override;
  bool analyzes() const override { return options_.feedback; }
  Result<Analysis> analyze(const CandidatePaths& candidate, const std::vector<std::string>& extra_tools) override;
  bool builds_ahead() const override { return task_.kind == task::TaskKind::kNative; }
  void build_ahead(const std::filesystem::path& cu) override;
  const agent::CoderTools* coder_tools() const override { return options_.offer_tools ? &tools_ : nullptr; }
  std::vector<agent::ToolOffer> tool_offers() const override;

  // The GPU in words for the prompts ("NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 80 GiB)"), or
  // nullopt without a GPU.
  std::optional<std::string> gpu_in_words();
  Judge& judge() { return *judge_; }

 private:
  JudgeBench(const task::Task& task, std::unique_ptr<ProfileSetup> setup, JudgeBenchOptions options);
  double build_and_prefetch(const std::filesystem::path& cu);

  task::Task task_;
  std::unique_ptr<ProfileSetup> setup_;  // null for the tuner's
  JudgeBenchOptions options_;
  std::unique_ptr<Judge> judge_;
  build::Builder ahead_;   // build_ahead (the build stage's or the tuner's ahead thread) and the seed
  build::Builder drafts_;  // the coder's compile_check, on the thread that asks the coder
  agent::CoderTools tools_;
};

// A candidate's analysis as the prompts get it: the measured lines (the verdict's own: the judge
// profiles the candidate it judged, without evaluating it again), then the feedback text of
// `kernelpro analyze` (with `extra_tools` run too), and the tools that made it. An error when it
// did not pass the check.
Result<Analysis> analyze_feedback(Judge& judge, const ProfileSetup& setup, const std::filesystem::path& candidate,
                                  const std::filesystem::path& cu, const std::vector<std::string>& extra_tools);

}  // namespace kp::driver
