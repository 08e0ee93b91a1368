// `kernelpro optimize` without a model: the offline tuner. The seed's KP_TUNE parameters span
// the space, a node is one point of it (a candidate file whose declarations default to the
// point), an edge changes one parameter by one step, and the search strategy (MCTS by default)
// chooses which node to expand. Every candidate and verdict goes to the run store
// (RUN_DIR/store.db) as it is made, so a run stopped in any way resumes with `resume` and
// evaluates nothing twice. The best candidate is written to RUN_DIR/best.cu with best.json.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "driver/workbench.h"
#include "eval/evaluator.h"
#include "search/strategy.h"
#include "task/task.h"

namespace kp::driver {

struct OptimizeOptions {
  std::filesystem::path run_dir;  // required
  std::string strategy = "mcts";  // mcts, greedy, beam
  search::SearchOptions search;
  search::RewardOptions reward;
  int max_evaluations = 30;  // candidates evaluated by this run (the seed included)
  double max_wall_s = 0;     // 0: no limit
  double max_gpu_s = 0;      // the workers' seconds, summed; 0: no limit
  bool resume = false;
  // The user's memory across runs (a run store used for its lessons); empty: none. Each
  // measured change leaves a lesson in the run's store, and the new ones are added here at the
  // end of the run.
  std::filesystem::path memory;
  // The offline tuner: points compiled ahead, on a thread of their own, while the GPU evaluates
  // the current one (the next untried neighbours of the node expanded, then of the point being
  // evaluated), so that their evaluations find them in the build cache. 0: none.
  int build_ahead = 2;
  // The model loop only (driver/model_search.h): what the planner and coder see of a node's
  // profile ("tools": the feedback operator's text; "raw-metrics": the measured lines and raw
  // counters; "none": nothing; a FeedbackMode by name, driver/prompt_context.h), the GPU in
  // words for the prompts, and how many lessons of earlier runs the planner gets.
  std::string feedback = "tools";
  int in_flight = 2;  // children the model loop makes at once (its pipeline); 1: one after another
  // Answers come in rounds (the manual provider, answered in bulk): the loop makes its in_flight
  // children as one wave from the tree as the store has it, renders every prompt of the wave
  // without what its siblings answered (so that a resumed run asks the same prompts, byte for
  // byte), parks each prompt left unanswered and stops once nothing else can move, and starts the
  // next wave only when this one is measured.
  bool waves = false;
  std::string gpu;
  int memory_lessons = 8;
};


struct OptimizeReport {
  std::string stopped;  // a StopReason by name (driver/run_ledger.h): "budget", "exhausted", ...
  int evaluated = 0;    // candidates evaluated by this run
  int nodes = 0;        // in the tree, over every run of it
  double seed_seconds = 0, best_seconds = 0, reference_seconds = 0;
  // The energy of the chosen candidate and the fastest one's time and energy (J per call, 0 when
  // not measured): under an energy objective the chosen one need not be the fastest.
  double best_joules = 0, fastest_seconds = 0, fastest_joules = 0;
  std::string best_point;  // "BLOCK=512"
  std::filesystem::path best_source;
  double build_s = 0, worker_s = 0, wall_s = 0;  // this run's time: nvcc, the GPU worker, everything
  double ahead_s = 0;  // nvcc's time compiling ahead, overlapped with the evaluations (not in wall_s's split)
  int built_ahead = 0;
  int lessons_shared = 0;                        // lessons added to the memory by this run
  // The model loop: seconds in LLM calls and in profiling for the feedback, candidates the
  // model wrote that were already evaluated (same files: measured once), the best node's
  // direction, and for stopped == "pending" the manual prompts waiting for their answers (one
  // line each).
  double llm_s = 0, analyze_s = 0;
  std::map<std::string, double> analyze_parts_s;  // analyze_s by part of the profile (Analysis::seconds)
  int duplicates = 0;
  // Passing candidates of this run the analysis could not profile, and why the first was not
  // (the model loop: their prompts said so).
  int unprofiled = 0;
  std::string unprofiled_why;
  std::string best_direction;
  std::string pending;
  nlohmann::json to_json() const;
};

// The run's store, budget and summary are the run ledger's (driver/run_ledger.h), shared with
// the model loop.
// `bench` evaluates each point and compiles the next ones ahead (JudgeBench::open_for_tuning).
Result<OptimizeReport> run_optimize(const task::Task& task, Workbench& bench, const LoopControls& controls,
                                    const OptimizeOptions& options);

}  // namespace kp::driver
