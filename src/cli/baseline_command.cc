// `kernelpro baseline`: times the KernelBench suite's references, eager and compiled
// (campaign/baseline.h), and prints the command that continues a run whose time budget ran out.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "campaign/baseline.h"
#include "util/strings.h"

namespace kp::cli {

namespace fs = std::filesystem;

int run_baseline(const BaselineFlags& flags) {
  auto scratch = make_scratch("kernelpro-baseline-", flags.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  campaign::BaselineOptions o;
  o.suite_dir = flags.suite;
  o.out_dir = flags.out;
  o.default_out_root = fs::path(KP_SOURCE_DIR) / "bench" / "baselines";
  o.levels = flags.levels;
  o.only = flags.only;
  o.modes = flags.modes;
  o.warmup = flags.warmup;
  o.trials = flags.trials;
  o.timeout_s = flags.timeout_s;
  o.time_budget_s = flags.time_budget_s;
  o.retry_failed = flags.retry_failed ? campaign::RetryFailed::kYes : campaign::RetryFailed::kNo;
  o.prewarm_jobs = flags.prewarm_jobs;
  o.worker = python_worker_options(resolve_python(flags.python), scratch->path());
  auto run = campaign::run_baseline(o, [](const std::string& line) { std::cout << line << std::endl; });
  if (!run.ok()) return exit_for(run.error());
  std::cout << fmt::format("\n{} problem(s) measured in this run ({} with a failure, recorded), {} already recorded; "
                           "results in {}\n",
                           run->attempted, run->failed, run->already_recorded, run->out_dir.string());
  for (const auto& s : run->summary) std::cout << campaign::format_level_summary(s) << "\n";
  if (run->budget_spent) {
    std::vector<std::string> cmd = {(self_dir() / "kernelpro").string(), "baseline", "--suite",
                                    fs::absolute(flags.suite).lexically_normal().string(), "--out", run->out_dir.string()};
    auto ints = [](const std::vector<int>& v) {
      std::vector<std::string> s;
      for (int i : v) s.push_back(std::to_string(i));
      return join(s, ",");
    };
    cmd.insert(cmd.end(), {"--levels", ints(flags.levels)});
    if (!flags.only.empty()) cmd.insert(cmd.end(), {"--only", join(flags.only, ",")});
    cmd.insert(cmd.end(), {"--modes", join(flags.modes, ","), "--warmup", std::to_string(flags.warmup), "--trials",
                           std::to_string(flags.trials), "--timeout", fmt::format("{:g}", flags.timeout_s)});
    cmd.insert(cmd.end(), {"--time-budget", fmt::format("{:g}", *flags.time_budget_s)});
    if (flags.retry_failed) cmd.push_back("--retry-failed");
    if (flags.prewarm_jobs > 0) {
      cmd.push_back("--prewarm-jobs");
      cmd.push_back(std::to_string(flags.prewarm_jobs));
    }
    if (!flags.python.empty()) cmd.insert(cmd.end(), {"--python", flags.python});
    std::vector<std::string> quoted;
    for (const auto& w : cmd) quoted.push_back(shell_quote(w));
    std::cout << fmt::format("\nTime budget of {:g} s spent: {} problem(s) remain. Continue with:\n  {}\n",
                             *flags.time_budget_s, run->remaining, join(quoted, " "));
  }
  return kExitOk;
}

}  // namespace kp::cli
