// `kernelpro optimize TASK` with a model configured (--provider or --config): the closed loop of
// driver/model_search.h. run_optimize (cli/optimize_command.cc) calls it.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "driver/model_search.h"
#include "task/kernelbench_loader.h"
#include "task/native_task_loader.h"

namespace kp::cli {

namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_model_interrupted{false};

extern "C" void on_model_sigint(int) { g_model_interrupted.store(true); }

// Prints the search's report (JSON, or what it found and what it cost) and how to go on from
// where it stopped; returns the exit code.
int print_model_report(const driver::OptimizeReport& r, const std::string& task_name,
                       const driver::OptimizeOptions& o, const llm::LlmClient& client, const std::string& hint,
                       const CommonFlags& common) {
  if (common.json) {
    auto j = r.to_json();
    j["run_dir"] = o.run_dir.string();
    j["llm"] = {{"calls", client.spent().calls}, {"tokens", client.spent().tokens}, {"cost_usd", client.spent().cost_usd}};
    std::cout << j.dump(2) << "\n";
  } else if (r.nodes == 0) {
    std::cout << "No GPU here: the seed built; the search needs its timing. Run the same command on a GPU machine.\n";
  } else {
    std::cout << fmt::format("{}: best {:.4g} ms: {:.2f}x the seed ({:.4g} ms), {:.2f}x the reference ({:.4g} ms)\n",
                             task_name, r.best_seconds * 1e3, r.seed_seconds / r.best_seconds, r.seed_seconds * 1e3,
                             r.reference_seconds / r.best_seconds, r.reference_seconds * 1e3);
    std::cout << fmt::format("  by: {}\n", r.best_direction);
    std::cout << fmt::format("{} candidate(s) evaluated in this run ({} duplicate(s) measured once), {} in the tree; "
                             "stopped: {}; {}\n",
                             r.evaluated, r.duplicates, r.nodes, r.stopped, r.best_source.string());
    if (r.unprofiled > 0)
      std::cout << fmt::format("NOT PROFILED: {} passing candidate(s) of this run, so their prompts had no profile "
                               "(they said so); the first: {}\n",
                               r.unprofiled, r.unprofiled_why);
    // The stages overlap: their busy time can add up to more than the wall time.
    const double busy = r.llm_s + r.ahead_s + r.build_s + r.worker_s + r.analyze_s;
    std::cout << fmt::format("time: {:.1f} s wall; busy {:.1f} s = {:.1f} s LLM + {:.1f} s compiled ahead + {:.1f} s "
                             "build + {:.1f} s GPU worker + {:.1f} s analysis ({:.2f}x overlap, {} in flight)\n",
                             r.wall_s, busy, r.llm_s, r.ahead_s, r.build_s, r.worker_s, r.analyze_s,
                             r.wall_s > 0 ? busy / r.wall_s : 0.0, o.in_flight);
    std::cout << fmt::format("LLM: {} call(s), {} tokens, ${:.4f}\n", client.spent().calls, client.spent().tokens,
                             client.spent().cost_usd);
  }
  if (r.stopped == "pending") {
    std::fprintf(stderr, "kernelpro: %s\n", r.pending.c_str());
    return kExitPending;
  }
  if (r.stopped == "gpu_unavailable") {
    if (!common.json)
      std::cout << gpu_held_note("the candidate in flight", hint);
    return kExitNotRun;
  }
  if (r.stopped == "no_gpu") {
    if (!common.json && r.nodes > 0)
      std::cout << fmt::format("No GPU here: the next candidate is written and built; its evaluation needs a GPU. "
                               "Continue with: {}\n",
                               hint);
    return kExitNotRun;
  }
  if ((r.stopped == "interrupted" || r.stopped == "budget") && !common.json)
    std::cout << fmt::format("Continue it with: {}\n", hint);
  return kExitOk;
}

}  // namespace

int run_model_optimize(const OptimizeFlags& flags, const CommonFlags& common) {
  const bool kernelbench = is_kernelbench_path(flags.task);
  auto task = kernelbench ? task::load_kernelbench_problem(flags.task) : task::load_native_task(flags.task);
  if (!task.ok()) return exit_for(task.error());
  auto opts = optimize_options(flags, task->name);
  if (!opts.ok()) return exit_for(opts.error());
  driver::OptimizeOptions o = *opts;
  std::error_code ec;
  fs::create_directories(o.run_dir, ec);
  std::string hint =
      fmt::format("kernelpro optimize {} --run-dir {} --resume --budget {} --search {} --feedback {} --in-flight {}",
                  flags.task, o.run_dir.string(), flags.budget, flags.search, flags.feedback, flags.in_flight);
  const llm::Budget budget{flags.max_llm_calls, flags.max_tokens, flags.max_cost};
  auto setup = model_setup({flags.config, flags.provider, flags.model, flags.base_url, flags.prompts, flags.no_tools,
                            flags.command},
                           o.run_dir, hint, &budget);
  if (!setup.ok()) return exit_for(setup.error());
  if (kernelbench && !task->seed_path)
    if (Status s = reference_as_seed(*task, o.run_dir); !s.ok()) return exit_for(s.error());
  llm::LlmClient& client = *(*setup)->client;
  hint = (*setup)->resume_hint;
  // A person or a helper answers the manual provider's prompts in rounds: the loop asks its
  // in-flight children's prompts at once and a resume asks the same ones (OptimizeOptions::waves).
  o.waves = (*setup)->provider->kind() == "manual";

  // One judge measures each candidate once; the feedback profiles it on the same worker.
  auto bench = open_loop_bench(*task, flags.task, flags.feedback != "none", (*setup)->options.tools, o.run_dir, common,
                               flags.eval);
  if (!bench.ok()) return exit_for(bench.error());
  bool tty = false;
  driver::LoopControls controls{progress_printer(common, &tty), [] { return g_model_interrupted.load(); }};
  if (auto words = (*bench)->gpu_in_words()) {
    o.gpu = *words;
  } else {
    const std::string arch = common.arch.empty() ? std::string("sm_90a") : common.arch;
    o.gpu = fmt::format("an NVIDIA GPU (none on this machine: candidates are built for {} and not run)", arch);
  }
  g_model_interrupted = false;
  auto previous = std::signal(SIGINT, on_model_sigint);
  auto report = driver::run_model_optimize(*task, *(*setup)->agents, **bench, controls, o);
  std::signal(SIGINT, previous);
  if (tty) std::fprintf(stderr, "\n");
  write_call_log(client, o.run_dir / "llm_calls.jsonl");
  if (!report.ok()) return exit_for(report.error());
  return print_model_report(*report, task->name, o, client, hint, common);
}

}  // namespace kp::cli
