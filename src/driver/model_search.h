// `kernelpro optimize` with a model: the closed loop (DESIGN.md sections 2 and 7).
//
//   root: the seed (a KernelBench problem without one: its reference as a candidate), evaluated
//         and analyzed
//   loop: the strategy (MCTS, greedy, beam) picks a node to expand ->
//           passing node: the planner picks a direction from the node's feedback, this run's
//           lessons, the lessons of earlier runs and what was tried from there -> the coder
//           writes the child from the node's files
//           failing node: the debugger fixes it (a repair child)
//         -> evaluate (a candidate with the files of one already evaluated is measured once)
//         -> analyze it when it passed -> the measurement backs up the tree, a lesson is kept
//
// A pipeline: up to OptimizeOptions::in_flight children at once, the model writing one while the
// compiler builds another and the GPU measures a third (stages of one job each; GPU work is never
// concurrent, so timings do not disturb each other). A child in flight counts against its
// parent's widening, so the strategy spreads the next pick; the planner is told what is being
// tried from the node it plans for.
//
// Every candidate, verdict, feedback and lesson goes to RUN_DIR/store.db as it is made. Resuming
// is replaying: the tree is rebuilt from the store, the strategy picks the same node again, so
// the prompts are the same, and the LLM client's cache (or the manual provider's answers)
// replies to them (exactly so with one child in flight; with more, a prompt written while others
// were in flight can differ on resume, and is asked again); a run resumed on another machine (a prompt rendered on a
// CPU machine, evaluated on a GPU one) goes on from where the last stopped. The best candidate is written to
// RUN_DIR/best.cu (and best.py) with best.json.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "agent/agents.h"
#include "driver/generate_session.h"
#include "driver/optimize_session.h"
#include "driver/workbench.h"
#include "llm/client.h"

namespace kp::driver {


// stopped (a StopReason by name, driver/run_ledger.h): "budget", "exhausted", "interrupted",
// "no_gpu" (the step in flight needs a GPU to evaluate), or "pending" (a manual prompt waits for
// its answer; report.pending says where). The parts: driver/run_ledger.h (store, budget,
// best.json), driver/pipeline.h (the pipeline), driver/prompt_context.h (what the roles are told).
// `bench` evaluates, analyzes (when it analyzes()) and builds ahead; the LLM's spend and budget
// are read from the agents' client.
Result<OptimizeReport> run_model_optimize(const task::Task& task, agent::Agents& agents, Workbench& bench,
                                          const LoopControls& controls, const OptimizeOptions& options);

}  // namespace kp::driver
