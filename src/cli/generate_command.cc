// `kernelpro generate TASK`: the model writes a candidate, kernelpro builds, evaluates, debugs and
// analyzes it (driver/generate_session.h).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "driver/generate_session.h"
#include "task/kernelbench_loader.h"
#include "task/native_task_loader.h"

namespace kp::cli {

namespace fs = std::filesystem;

int run_generate(const GenerateFlags& flags, const CommonFlags& common) {
  const bool kernelbench = is_kernelbench_path(flags.task);
  auto task = kernelbench ? task::load_kernelbench_problem(flags.task) : task::load_native_task(flags.task);
  if (!task.ok()) return exit_for(task.error());
  const fs::path run_dir = flags.run_dir.empty() ? fs::path("runs") / (fs::path(task->name).stem().string() + "-generate")
                                                 : fs::path(flags.run_dir);
  std::error_code ec;
  if (fs::exists(run_dir / "generate.json", ec) && !flags.resume)
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("{} holds an earlier run: add --resume to continue it, or choose another "
                                           "--run-dir",
                                           run_dir.string())));
  std::string hint = fmt::format("kernelpro generate {} --run-dir {} --resume", flags.task, run_dir.string());
  if (!flags.direction.empty()) hint += " --direction '" + flags.direction + "'";
  fs::create_directories(run_dir, ec);
  auto setup = model_setup({flags.config, flags.provider, flags.model, flags.base_url, flags.prompts, flags.no_tools,
                            flags.command},
                           run_dir, hint, nullptr);
  if (!setup.ok()) return exit_for(setup.error());
  if (kernelbench && !task->seed_path)
    if (Status s = reference_as_seed(*task, run_dir); !s.ok()) return exit_for(s.error());
  llm::LlmClient& client = *(*setup)->client;
  agent::Agents& agents = *(*setup)->agents;
  const agent::AgentOptions& aopts = (*setup)->options;

  // One judge measures each candidate once; the analysis profiles it on the same worker.
  auto bench = open_loop_bench(*task, flags.task, true, aopts.tools, run_dir, common, flags.eval);
  if (!bench.ok()) return exit_for(bench.error());
  driver::LoopControls controls;
  controls.progress = [&](const std::string& line) {
    if (!common.json) std::fprintf(stderr, "kernelpro: %s\n", line.c_str());
  };
  driver::GenerateOptions go;
  go.run_dir = run_dir;
  if (auto words = (*bench)->gpu_in_words()) {
    go.gpu = *words;
  } else {
    const std::string arch = common.arch.empty() ? std::string("sm_90a") : common.arch;
    go.gpu = fmt::format("an NVIDIA GPU (none on this machine: the candidate is built for {} and not run)", arch);
    go.analyze_seed = false;
  }
  go.max_debug_rounds = flags.max_debug;
  go.direction = flags.direction;
  auto report = driver::run_generate(*task, agents, **bench, controls, go);

  write_call_log(client, run_dir / "llm_calls.jsonl");

  if (!report.ok()) {
    if (report.error().code == ErrorCode::kPending) {
      std::fprintf(stderr, "kernelpro: %s\n", report.error().message.c_str());
      return kExitPending;
    }
    return exit_for(report.error());
  }
  const auto& rep = *report;
  if (common.json) {
    nlohmann::json j = rep.to_json();
    j["run_dir"] = run_dir.string();
    j["llm"] = {{"calls", client.spent().calls}, {"tokens", client.spent().tokens}, {"cost_usd", client.spent().cost_usd}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{}: {} attempt(s) in {}\n", task->name, rep.attempts.size(), run_dir.string());
    for (size_t i = 0; i < rep.attempts.size(); ++i) {
      const auto& a = rep.attempts[i];
      std::cout << fmt::format("  {}. {:8} {:14} {}{}\n", i + 1, a.role, eval::to_string(a.outcome),
                               a.speedup > 0 ? fmt::format("{:.2f}x the reference  ", a.speedup) : "",
                               a.reason.substr(0, 160));
    }
    std::cout << fmt::format("LLM: {} call(s), {} tokens, ${:.4f}\n", client.spent().calls, client.spent().tokens,
                             client.spent().cost_usd);
    if (!rep.feedback.empty()) std::cout << "\n" << rep.feedback << "\n";
  }
  if (rep.outcome == eval::Outcome::kOk) return kExitOk;
  if (rep.outcome == eval::Outcome::kNotRun) {
    if (!common.json)
      std::cout << fmt::format("\nNo GPU here: {}. Run the same command with --resume on a GPU machine.\n",
                               rep.note.empty() ? "the candidate built; correctness and timing need an NVIDIA GPU" : rep.note);
    return kExitNotRun;
  }
  if (rep.outcome == eval::Outcome::kGpuUnavailable) {
    if (!common.json)
      std::cout << "\n" << gpu_held_note("the candidate", "the same command with --resume");
    return kExitNotRun;
  }
  return kExitFailed;
}

}  // namespace kp::cli
