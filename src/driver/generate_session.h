// `kernelpro generate`: one candidate written by the model and carried to a verdict.
//
//   (on a GPU, with a seed) analyze the seed -> the analyst names extra tools, which run on it
//   -> (with the feedback, no --direction) the planner picks a direction ->
//   coder writes the candidate -> evaluate (build, correctness, timing)
//     -> compile_error / load_error / runtime_error / crash / timeout / incorrect: the debugger
//        gets the failure and its diagnostics, writes a fix, evaluate again (max_debug_rounds)
//     -> ok: analyze it (when a GPU ran it), the feedback kept for the next step
//     -> not_run (no GPU): the candidate built; stop and say so
//
// Every attempt's files are kept in RUN_DIR/attempt-N/ (candidate.cu, and candidate.py for
// KernelBench) with its verdict beside them (verdict.json, keyed by the files' hash) and in
// RUN_DIR/generate.json. Resuming is replaying: RUN_DIR/session.json keeps what the prompts were
// written from (the GPU in words, the seed's analysis), so the questions are the same; the
// caller's LLM client answers those it has seen from its cache, the manual provider finds the
// answers written since, and kept verdicts stand in for evaluations (except "not_run", which a
// GPU machine evaluates), so running the same command again reaches the step where the last run
// stopped, here or on another machine, and goes on from there.
//
// A call to the model that fails stops the session with that error (kPending for a manual
// prompt still unanswered: the caller prints where it is and exits cleanly).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agents.h"
#include "driver/workbench.h"
#include "eval/evaluator.h"
#include "task/task.h"

namespace kp::driver {

struct GenerateOptions {
  std::filesystem::path run_dir;  // required
  int max_debug_rounds = 3;       // debugger turns after the coder's candidate
  std::string direction;          // what to change (empty: the coder chooses)
  std::string feedback;           // the analysis of the current best, when known
  std::string gpu;                // the GPU in words, for the prompts
  // With a seed and no feedback: analyze the seed first (bench.analyze), so the coder starts
  // from its numbers. Needs a GPU; skipped when the analysis fails.
  bool analyze_seed = true;
  // With feedback and no direction: the planner picks the direction first.
  bool plan = true;
};



struct GenerateAttempt {
  std::string role;  // "coder" or "debugger"
  std::filesystem::path dir;
  eval::Outcome outcome = eval::Outcome::kNotRun;
  std::string reason;
  double speedup = 0;  // over the task's reference, when timed
  int repairs = 0;     // repair prompts the reply needed
  int tool_calls = 0;
};

struct GenerateReport {
  std::string direction;  // the coder's direction: the caller's, the planner's, or empty
  std::vector<GenerateAttempt> attempts;
  eval::Outcome outcome = eval::Outcome::kNotRun;  // the last attempt's
  std::string feedback;                             // analyze's text on the final candidate, if run
  std::string note;  // why the session stopped before a candidate (outcome not_run), else empty
  nlohmann::json to_json() const;
};

// The brief the roles get: the task's description, interface (task.toml or the problem .py),
// reference source and seed, and the GPU in words.
Result<agent::TaskBrief> task_brief(const task::Task& task, const std::string& gpu);

// The diagnostics the debugger gets for a failed evaluation: the build log for build failures,
// else the reason, the worker's stderr tail and the check's numbers.
std::string failure_diagnostics(const eval::EvalResult& result);

// `bench` evaluates, analyzes and offers the coder's tools and the analyst's (driver/workbench.h).
Result<GenerateReport> run_generate(const task::Task& task, agent::Agents& agents, Workbench& bench,
                                    const LoopControls& controls, const GenerateOptions& options);

}  // namespace kp::driver
