// The model loop's pipeline (driver/model_search.h, OptimizeOptions::in_flight): up to `width`
// children in the making at once, each a Job that passes through three stages,
//
//   kModel  the planner then the coder, or the debugger    (one LLM call sequence at a time)
//   kBuild  nvcc, into the build cache                      (native candidates, Workbench::build_ahead)
//   kGpu    evaluate, then analyze a passing candidate     (GPU work is never concurrent)
//
// A stage works on one job at a time, on a thread of its own; jobs enter each stage oldest first.
// The orchestrating thread alone adds, starts, takes back and drops jobs, and it alone touches
// the tree, the store and the prompts: a stage's work only fills the job's results. Nothing here
// knows what the work is; the loop decides it (model_search.cc).
#pragma once

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/agents.h"
#include "driver/generate_session.h"
#include "eval/evaluator.h"
#include "llm/client.h"
#include "search/tree.h"

namespace kp::driver {

// The stages, and a job's stage: the stage it waits for.
enum class Stage { kModel, kBuild, kGpu };

// What the model stage does next for a job: plan (a child of a passing node), write (once planned)
// or debug (a repair of a failing node).
enum class ModelStep { kPlan, kWrite, kDebug };

// One child in the making. The orchestrating thread sets the first group; a stage fills the
// results of its own step, which the orchestrating thread reads only after taking the job back.
struct Job {
  int child = 0, parent = 0;  // nodes in the tree: the child is unmeasured until recorded
  ModelStep step = ModelStep::kPlan;
  Stage stage = Stage::kModel;
  search::Direction dir;
  std::vector<std::string> actions;  // the planner's action tags
  agent::CandidateFiles files;
  int64_t cand = 0;  // the candidate in the store, once written
  std::filesystem::path cu, py;
  // Handed back by the stages.
  std::optional<Result<agent::Plan>> plan;
  std::optional<Result<agent::CoderResult>> written;
  std::optional<Result<eval::EvalResult>> result;
  std::optional<Result<Analysis>> analysis;
  double model_s = 0, build_s = 0, analyze_s = 0;
  // Parked (OptimizeOptions::waves): its model step waits for an answer; no stage takes it again
  // in this run.
  bool waiting = false;
  // Waves: this plan is proposal wave_k of wave_n made from the same parent in its wave (set when
  // the wave is made, so that its prompt does not change as the others move on). 0: none.
  int wave_k = 0, wave_n = 0;
};

// How many jobs the pipeline may hold. width: OptimizeOptions::in_flight (at least 1).
// max_children: children the strategy may be asked for in all; a duplicate costs no evaluation,
// so this bounds them apart from the evaluations.
struct PipelineLimits {
  int width = 1;
  int max_evaluations = 0;
  int max_children = 0;
};
PipelineLimits pipeline_limits(int in_flight, int max_evaluations);  // max_children = 4 x evaluations

// Whether the strategy may be asked for another child: fewer than `width` jobs in flight, the
// evaluations done and in flight below the budget (each job may cost one), and fewer than
// `max_children` children made by this run.
bool has_room(const PipelineLimits& limits, int in_flight, int evaluated, int made);

class Pipeline {
 public:
  explicit Pipeline(PipelineLimits limits) : limits_(limits) {}
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();  // waits for the work of every busy stage

  const PipelineLimits& limits() const { return limits_; }
  bool has_room(int evaluated) const { return driver::has_room(limits_, size(), evaluated, made_); }
  int size() const { return static_cast<int>(jobs_.size()); }
  bool empty() const { return jobs_.empty(); }

  // A new job, the newest; counts as a child made.
  Job& add(Job job);
  // The job removed; it must not be in a stage.
  void drop(Job& job);
  // The oldest job waiting for `stage`, not in it and not parked; null when none.
  Job* oldest_in(Stage stage);
  // Whether a job is parked (Job::waiting).
  bool any_parked() const;
  std::list<Job>& jobs() { return jobs_; }
  const std::list<Job>& jobs() const { return jobs_; }

  bool busy(Stage stage) const { return slot_(stage).job != nullptr; }
  bool idle() const { return !busy(Stage::kModel) && !busy(Stage::kBuild) && !busy(Stage::kGpu); }
  // Runs `work` for `job` on a thread of its own. The stage must be free; `work` must not throw,
  // and touches only the job and what is safe to share.
  void start(Stage stage, Job& job, std::function<void()> work);
  // Blocks until a stage has finished work not yet taken back. A busy stage is needed.
  void wait();
  // The job of a stage whose work has finished, the stage free again; null when the stage is idle
  // or still working.
  Job* take(Stage stage);

 private:
  struct Slot {
    Job* job = nullptr;
    std::future<void> work;
    bool done = false;  // the work has finished (under mu_)
  };
  Slot& slot_(Stage stage) { return slots_[static_cast<size_t>(stage)]; }
  const Slot& slot_(Stage stage) const { return slots_[static_cast<size_t>(stage)]; }

  PipelineLimits limits_;
  int made_ = 0;
  std::list<Job> jobs_;  // oldest first; a list, so that a stage's Job* stays valid
  std::mutex mu_;
  std::condition_variable done_cv_;
  int done_ = 0;  // stages finished and not yet taken back
  Slot slots_[3];
};

// What the LLM client has spent, as the orchestrating thread sees it: the client is used by the
// model stage only while it runs, which updates this after each of its steps. Thread-safe.
class SpendSnapshot {
 public:
  // Either function may be empty (then nothing is spent and the budget is never over).
  SpendSnapshot(std::function<llm::Spend()> spent, std::function<bool()> budget_spent);
  void update();  // reads the client: on the model stage, after a step
  llm::Spend spend() const;
  bool over() const;
  bool tracked() const { return static_cast<bool>(spent_); }

 private:
  std::function<llm::Spend()> spent_;
  std::function<bool()> budget_spent_;
  mutable std::mutex mu_;
  llm::Spend spend_;
  bool over_ = false;
};

}  // namespace kp::driver
