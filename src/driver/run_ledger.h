// The run ledger of `kernelpro optimize`: what a run has evaluated and spent, kept in its store
// (RUN_DIR/store.db) and summed up in RUN_DIR/best.json. Shared by the offline tuner
// (driver/optimize_session.h) and the model loop (driver/model_search.h):
//
//   open           RUN_DIR/store.db checked against the run (open_run_store), RUN_DIR/candidates
//   the seed       the root node, its verdict and the run's meta (task, mode, reference time)
//   resuming       the tree rebuilt by replaying the stored measurements (replay_tree)
//   spending       evaluations, nvcc and GPU worker seconds, wall time, against the budget
//                  (over_budget), and the status of the progress lines
//   the end        the report's totals from the tree, best.json, the lessons shared with the memory
//
// What each loop records per node differs (the tuner stores a node before evaluating it, the
// model loop with its verdict) and stays in the loop. `generate` keeps no store and no budget:
// what it shares with these is the writing of a candidate's files (write_candidate_files).
//
// Not thread-safe: the loop's orchestrating thread alone uses a ledger.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/reply_parse.h"
#include "driver/optimize_session.h"
#include "driver/workbench.h"
#include "search/tree.h"
#include "store/run_store.h"

namespace kp::driver {

// The kind of search a run directory belongs to (the store's meta "mode"): neither resumes the
// other's tree. A store without the meta is the tuner's (runs made before it was kept).
enum class RunMode { kTuner, kModel };
const char* to_string(RunMode m);  // "tuner", "model"
std::optional<RunMode> run_mode_from_string(std::string_view s);

// Why a run stopped: OptimizeReport::stopped holds its name.
//   kExhausted    the strategy has nothing left to expand
//   kBudget       --budget evaluations, --minutes, --gpu-seconds or the LLM budget spent
//   kInterrupted  Ctrl-C, after the step in flight
//   kNoGpu        the step in flight needs a GPU to evaluate (a candidate was only built)
//   kPending      a manual prompt waits for its answer (OptimizeReport::pending says where)
// kGpuUnavailable: the GPU is there but held by another process (eval::Outcome::kGpuUnavailable
// after the judge's retries); the run resumes once it is free.
enum class StopReason { kExhausted, kBudget, kInterrupted, kNoGpu, kPending, kGpuUnavailable };
// "exhausted", "budget", "interrupted", "no_gpu", "pending", "gpu_unavailable"
const char* to_string(StopReason r);
// The stop for a machine outcome (eval::is_machine_outcome): kNoGpu or kGpuUnavailable.
StopReason stop_for(eval::Outcome machine_outcome);
std::optional<StopReason> stop_reason_from_string(std::string_view s);

// Of two reasons to stop met at once (the model loop's stages), the one the user must act on
// first: kNoGpu (a GPU to evaluate on), then kPending (a prompt to answer), then kBudget; the
// others rank after these, and of two that rank the same `a` is kept.
StopReason first_to_act_on(StopReason a, StopReason b);

// What a run has spent, for over_budget.
struct Spent {
  int evaluated = 0;        // candidates evaluated by this run
  double wall_s = 0;        // since the run started
  double worker_s = 0;      // the GPU workers' seconds
  bool llm_over = false;    // the LLM client's budget is used up
};
// kBudget when `spent` reaches OptimizeOptions::max_evaluations, max_wall_s or max_gpu_s (0: no
// limit) or the LLM budget; else kInterrupted when `interrupted` (may be empty) says so, called
// only then; else nullopt.
std::optional<StopReason> over_budget(const Spent& spent, const OptimizeOptions& options,
                                      const std::function<bool()>& interrupted);

// What the search sees of a verdict: passed or not, the median time, the energy when measured.
search::Measurement measurement_of(const eval::EvalResult& result);

// A lesson's ratios of a measured change from `before` to `after`: time_ratio (before / after
// seconds) when both passed and were timed, energy_ratio when both have energy; 0 otherwise.
void set_change_ratios(store::Lesson& lesson, const search::Measurement& before, const search::Measurement& after);

// The progress line of a measured candidate: "TEXT: OUTCOME 0.5 ms, 2.00x the seed | STATUS", or
// for a failure "TEXT: OUTCOME (REASON, 120 characters at most) | STATUS".
std::string measured_line(const std::string& text, const std::string& outcome, const search::Measurement& m,
                          double seed_seconds, const std::string& reason, const std::string& status);

// Adds the run's lessons not yet shared to the memory store at `memory` (the count already
// shared is kept in the run's meta, so a resumed run adds only its new ones). Another run
// holding the memory is waited for a little; after that the lessons stay in the run and the
// next run shares them. Returns how many were added.
Result<int> share_lessons(store::RunStore& run, const std::filesystem::path& memory);

// The run's store at RUN_DIR/store.db, checked against this run: a store holding nodes needs
// options.resume, the same task, and the same kind of search.
Result<store::RunStore> open_run_store(const task::Task& task, const OptimizeOptions& options, RunMode mode);

// A candidate's files written as DIR/STEM.cu (when files.cuda is not empty) and DIR/STEM.py
// (when files.python is not); a path is empty for a file not written. DIR must exist.
Result<CandidatePaths> write_candidate_files(const agent::CandidateFiles& files, const std::filesystem::path& dir,
                                             const std::string& stem);

// The tree of a stored run, rebuilt by replaying its nodes in the order they were made: `rows`
// as RunStore::nodes() gives them, the root first. A node not measured (in flight when the run
// stopped) is dropped with everything under it, so that the strategy proposes it again; the
// closed and exhausted flags are restored. `kind_of` names the edge of a stored kind. `each` is
// called for every node kept, the root first, with its id in the tree (which are 0, 1, 2, ...
// in call order); an error from it is returned.
Result<search::Tree> replay_tree(const std::vector<store::NodeRow>& rows, const search::Measurement& reference,
                                 const search::RewardOptions& reward,
                                 const std::function<search::EdgeKind(const std::string& kind)>& kind_of,
                                 const std::function<Status(const store::NodeRow& row, int id)>& each);

// The verdicts of a run's measured candidates, by candidate id and by code key
// (util/source_text.h: the files without comments and free spacing). The model loop measures a
// candidate once: one with the files or the code of a measured one takes its verdict.
class KnownVerdicts {
 public:
  // The verdicts of a stored run; a candidate evaluated twice keeps its last. For a code key
  // shared by several candidates, the lowest id is found.
  static Result<KnownVerdicts> load(store::RunStore& store);
  // A verdict for `candidate`; with `files`, its code key finds it later for other candidates
  // (the first candidate recorded with a code key keeps it).
  void add(int64_t candidate, store::EvaluationRow row, const agent::CandidateFiles* files = nullptr);
  // The verdict of `candidate` if it has one, else of a candidate with the code of `files`;
  // null when there is none and the candidate must be measured.
  const store::EvaluationRow* find(int64_t candidate, const agent::CandidateFiles& files) const;
  const store::EvaluationRow* of(int64_t candidate) const;  // null when it has none
  // A verdict that find() never gives a child: a KernelBench seed's, the problem's own PyTorch
  // code judged with library_only_ok, which a child with that code must not inherit.
  void not_for_children(int64_t candidate) { not_for_children_.insert(candidate); }

 private:
  std::set<int64_t> not_for_children_;
  std::map<int64_t, store::EvaluationRow> by_candidate_;
  std::map<std::string, int64_t> by_code_;
};

class RunLedger {
 public:
  using Clock = std::chrono::steady_clock;

  // The run's store (open_run_store) and RUN_DIR/candidates, created. `options` must outlive
  // the ledger. The wall clock of the budget starts at `start`.
  static Result<RunLedger> open(const task::Task& task, const OptimizeOptions& options, RunMode mode,
                                Clock::time_point start);

  store::RunStore& store() { return store_; }
  // The report as far as it is known: the loops add their own times to it (llm_s, ahead_s, ...).
  OptimizeReport& report() { return report_; }

  // RUN_DIR/candidates/ID.cu and ID.py.
  Result<CandidatePaths> write_candidate(int64_t candidate, const agent::CandidateFiles& files);

  // An evaluation's nvcc and worker seconds, into the report; and the count of evaluations,
  // apart, since a step that needs a GPU (not_run) costs time but is not an evaluation in the
  // model loop.
  void add_times(const eval::EvalResult& result);
  void count_evaluation() { ++evaluated_; }
  int evaluated() const { return evaluated_; }
  double wall_s() const;

  std::optional<StopReason> over_budget(bool llm_over, const std::function<bool()>& interrupted) const;
  // "best 2.00x the seed | 3/30 evaluated, 12 s, GPU 4 s" and `suffix`; `just`: a measurement not
  // in the tree yet.
  std::string status(const search::Tree& tree, const search::Measurement* just = nullptr,
                     const std::string& suffix = "") const;

  // A run whose first step could not finish here (the seed needs a GPU): the report with
  // `why`, and what was evaluated.
  OptimizeReport stop_at_seed(StopReason why);

  // The start both optimize loops share. A fresh run (no node stored) measures its seed first
  // with `measure_seed`, the loop's own part: it evaluates the seed (and judges the verdict with gate_seed), analyzes
  // it as the loop does and stores it with record_root, or returns the report of a run that stops
  // at its seed. Then: the stored nodes in the order they were made, to replay; a resumed run
  // goes straight there. Exactly one of `rows` (not empty) and `stopped` is set.
  struct Start {
    std::vector<store::NodeRow> rows;
    std::optional<OptimizeReport> stopped;
  };
  Result<Start> start(const std::function<Result<std::optional<OptimizeReport>>()>& measure_seed);
  // The seed's verdict (counted already) as both loops take it: a machine's outcome (no
  // GPU, a GPU held elsewhere) stops the run at the seed (the report to return); a seed that fails
  // is the user's to fix (kInvalidInput, "the seed does not pass ...: fix it before `doing`");
  // nullopt when it passed.
  Result<std::optional<OptimizeReport>> gate_seed(const eval::EvalResult& seed, const std::string& doing);

  // The seed's root node with its verdict, and the run's meta: task, mode, the reference's time
  // from `seed`, and `meta` (key, value) besides. `report_json` is the evaluation's report.
  Status record_root(const task::Task& task, RunMode mode, int64_t candidate, const std::string& direction,
                     const eval::EvalResult& seed, const std::string& report_json,
                     const std::vector<std::pair<std::string, std::string>>& meta = {});
  // The reference's measurement kept by record_root (0 s when the store has none).
  search::Measurement reference();

  // The report's totals from the tree: why the run stopped, the nodes measured, what this run
  // evaluated, the seed's, the best's and the reference's times. Returns the best node.
  int settle(const search::Tree& tree, StopReason stopped);
  // RUN_DIR/best.json: the report (its wall time now), the task, strategy and objective, with
  // `extra`'s keys added, and the lessons shared with OptimizeOptions::memory when there is one.
  // Call after settle and after writing the best candidate. Returns the final report.
  Result<OptimizeReport> write_summary(const task::Task& task, const nlohmann::json& extra);

 private:
  RunLedger(store::RunStore store, const OptimizeOptions& options, Clock::time_point start)
      : store_(std::move(store)), options_(&options), start_(start) {}
  store::RunStore store_;
  const OptimizeOptions* options_;
  Clock::time_point start_;
  OptimizeReport report_;
  int evaluated_ = 0;
};

}  // namespace kp::driver
