// `kernelpro optimize TASK`: the search loop. Without a model configured it is the offline
// tuner (driver/optimize_session.h): the seed's KP_TUNE parameters, searched with MCTS (or
// greedy, beam), every verdict in RUN_DIR/store.db, the best in RUN_DIR/best.cu.
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <atomic>

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "driver/optimize_session.h"
#include "task/native_task_loader.h"

namespace kp::cli {

namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

Result<driver::OptimizeOptions> optimize_options(const OptimizeFlags& flags, const std::string& task_name) {
  driver::OptimizeOptions o;
  o.run_dir = flags.run_dir.empty() ? fs::path("runs") / (fs::path(task_name).stem().string() + "-optimize")
                                    : fs::path(flags.run_dir);
  o.resume = flags.resume;
  o.strategy = flags.search;
  o.max_evaluations = flags.budget;
  o.max_wall_s = flags.minutes * 60;
  o.max_gpu_s = flags.gpu_seconds;
  o.build_ahead = flags.build_ahead;
  o.feedback = flags.feedback;
  o.in_flight = flags.in_flight;
  o.memory = flags.memory.empty() ? data_dir() / "memory.db" : fs::path(flags.memory);
  KP_TRY(o.reward.objective, search::objective_from_string(flags.objective));
  KP_TRY(auto strategy, search::make_strategy(flags.search));
  (void)strategy;
  return o;
}

int run_optimize(const OptimizeFlags& flags, const CommonFlags& common) {
  if (!flags.provider.empty() || !flags.config.empty() || !flags.command.empty()) return run_model_optimize(flags, common);
  if (is_kernelbench_path(flags.task))
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("{}: a KernelBench problem has no seed to tune; name a model to optimize it "
                                           "(--provider openai|anthropic|command|manual, or --config FILE)",
                                           flags.task)));
  if (flags.feedback != "tools")
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               "--feedback is what the model sees; without a model (--provider) there is none to set"));
  auto task = task::load_native_task(flags.task);
  if (!task.ok()) return exit_for(task.error());
  auto opts = optimize_options(flags, task->name);
  if (!opts.ok()) return exit_for(opts.error());
  driver::OptimizeOptions o = *opts;

  auto scratch = make_scratch("kernelpro-optimize-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  // Points compiled ahead with a builder of their own over the same cache and flags as the judge's.
  auto bench = driver::JudgeBench::open_for_tuning(*task, loop_evaluator_options(common, flags.eval, false, scratch->path()),
                                                   build_options(common));
  bool tty = false;
  driver::LoopControls controls{progress_printer(common, &tty), [] { return g_interrupted.load(); }};

  g_interrupted = false;
  auto previous = std::signal(SIGINT, on_sigint);
  auto report = driver::run_optimize(*task, *bench, controls, o);
  std::signal(SIGINT, previous);
  if (tty) std::fprintf(stderr, "\n");
  if (!report.ok()) return exit_for(report.error());
  const auto& r = *report;
  const std::string resume = fmt::format("kernelpro optimize {} --run-dir {} --resume", flags.task, o.run_dir.string());
  if (common.json) {
    auto j = r.to_json();
    j["run_dir"] = o.run_dir.string();
    std::cout << j.dump(2) << "\n";
  } else if (r.stopped == "no_gpu") {
    std::cout << "No GPU here: the seed built; tuning needs its timings. Run the same command on a GPU machine.\n";
  } else if (r.stopped == "gpu_unavailable") {
    std::cout << gpu_held_note("the point in flight", resume);
  } else {
    std::cout << fmt::format(
        "{}: best {} at {:.4g} ms: {:.2f}x the seed ({:.4g} ms), {:.2f}x the reference ({:.4g} ms)\n", task->name,
        r.best_point, r.best_seconds * 1e3, r.seed_seconds / r.best_seconds, r.seed_seconds * 1e3,
        r.reference_seconds / r.best_seconds, r.reference_seconds * 1e3);
    std::cout << fmt::format("{} candidate(s) evaluated in this run, {} in the tree; stopped: {}; {}\n", r.evaluated,
                             r.nodes, r.stopped, r.best_source.string());
    std::cout << fmt::format(
        "time: {:.1f} s wall = {:.1f} s build + {:.1f} s GPU worker + {:.1f} s search and store; "
        "{} point(s) compiled ahead in {:.1f} s, beside the evaluations\n",
        r.wall_s, r.build_s, r.worker_s, r.wall_s - r.build_s - r.worker_s, r.built_ahead, r.ahead_s);
    if (r.stopped == "interrupted" || r.stopped == "budget")
      std::cout << "Continue it with: " << resume << "\n";
  }
  if (r.stopped == "no_gpu" || r.stopped == "gpu_unavailable") return kExitNotRun;
  return kExitOk;
}

}  // namespace kp::cli
