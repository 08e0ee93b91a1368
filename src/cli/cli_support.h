// What every subcommand of the CLI shares: exit codes, the mapping of errors to them, the
// options every stage takes from the common flags, and where kernelpro's own files live; the
// setup `profile` and `analyze` share; and the model side that `generate` and `optimize` with a
// model share.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agents.h"
#include "build/builder.h"
#include "cli/commands.h"
#include "codesearch/index.h"
#include "driver/generate_session.h"
#include "driver/judge.h"
#include "driver/profile_session.h"
#include "driver/workbench.h"
#include "verdict/eval_options.h"
#include "eval/evaluator.h"
#include "eval/worker_client.h"
#include "llm/llm_config.h"
#include "profile/calibration.h"
#include "sys/temp_dir.h"
#include "task/task.h"
#include "util/result.h"
#include "verdict/eval_options.h"

namespace kp::cli {

// Exit codes (ARCHITECTURE.md, "Decisions").
constexpr int kExitOk = 0, kExitFailed = 1, kExitBadInput = 2, kExitNotRun = 3, kExitInternal = 4;
// generate with the manual provider: a prompt waits for its answer; run again with --resume.
constexpr int kExitPending = 5;

// Prints "kernelpro: MESSAGE" on stderr and returns the exit code of the error's class.
int exit_for(const Error& e);
// The directory of the running kernelpro binary (kp-worker and the profiling libraries lie beside it).
std::filesystem::path self_dir();
// $XDG_CACHE_HOME/kernelpro/build, else ~/.cache/kernelpro/build.
std::filesystem::path default_cache_dir();
build::BuildOptions build_options(const CommonFlags& c);
// CUTLASS for CuTe candidates and the code index: --cutlass, CUTLASS_PATH, or the nvidia-cutlass
// package (scripts/setup.sh's copy in .kp-tools/python first, then python3's).
Result<codesearch::Cutlass> locate_cutlass(const CommonFlags& c);
// The code index of `cutlass`: `flag` when given, else under the cache directory, one per root.
std::filesystem::path cutlass_index_path(const codesearch::Cutlass& cutlass, const std::string& flag);
// kernelpro's data folder: $XDG_DATA_HOME/kernelpro, else ~/.local/share/kernelpro.
std::filesystem::path data_dir();
// Where `kernelpro calibrate` stores ceilings: the flag (--store, --calibration) when given,
// else $XDG_DATA_HOME/kernelpro/calibration, else ~/.local/share/kernelpro/calibration.
std::filesystem::path calibration_dir(const std::string& flag);
// A scratch directory for workers; kept (and named on stderr) when asked.
Result<sys::TempDir> make_scratch(const char* prefix, bool keep);
// The candidate named on the command line, else the task's seed.cu.
Result<std::filesystem::path> candidate_path(const task::Task& t, const std::string& given);
bool is_kernelbench_path(const std::string& path);
// The Python interpreter for the KernelBench worker: --python, else $KERNELPRO_PYTHON, else python3.
std::string resolve_python(const std::string& flag);
// `python -m kernelpro_torch.worker` with the source tree's python/ first on PYTHONPATH.
eval::WorkerOptions python_worker_options(const std::string& python, const std::filesystem::path& scratch);
// The options both kinds of evaluation take from the flags; trials and timeout by task kind.
eval::EvalOptions eval_options(const EvalFlags& flags, int default_trials, double default_timeout_s);
// The evaluator of a loop that evaluates many candidates (generate, optimize): build options from
// the common flags, 3 trials and a 120 s watchdog for a native task, 5 and 600 s with the Python
// worker for a KernelBench problem, workers in `scratch`.
eval::EvaluatorOptions loop_evaluator_options(const CommonFlags& common, const EvalFlags& eval, bool kernelbench,
                                              const std::filesystem::path& scratch);
// Progress lines on stderr: on a terminal each overwrites the live line, in a log each is its
// own line; nothing with --json. `live` says whether the line is live (end it with a newline).
std::function<void(const std::string&)> progress_printer(const CommonFlags& common, bool* live = nullptr);
// Prints the verdict (JSON or text, with `not_run_note` after a not-run text verdict) and
// returns the exit code.
int print_verdict(const task::Task& task, const eval::EvalResult& result, bool json, const std::string& not_run_note);

// The line a run prints when it stopped on gpu_unavailable: what was left unrecorded (`what`)
// and how to go on (`resume`, a command).
std::string gpu_held_note(const std::string& what, const std::string& resume);

using driver::ProfileSetup;  // what `profile` and `analyze` share (driver/workbench.h)
// The task (native or KernelBench), the candidate, a scratch folder and the profile session's
// options from `flags`; `command` names the subcommand in messages and in the scratch folder's
// name. Errors (a task that does not load, no candidate for a KernelBench problem, a bad
// --collector, --stage or --stage1-metrics) are returned for exit_for.
Result<std::unique_ptr<ProfileSetup>> profile_setup(const ProfileFlags& flags, const CommonFlags& common,
                                                    const char* command);

// ---- the model side of generate and optimize ---------------------------------------------------

// The workbench of a model run (generate, optimize with a model): one judge that measures every
// candidate once and profiles it for the feedback on the same worker, a KernelBench problem's own
// PyTorch reference as its seed too; the analysis options made once for the run from the flags;
// the coder's tools (drafts into RUN_DIR/drafts, CUTLASS search when a CUTLASS is found).
Result<std::unique_ptr<driver::JudgeBench>> open_loop_bench(const task::Task& task, const std::string& task_path,
                                                            bool feedback, bool offer_tools,
                                                            const std::filesystem::path& run_dir,
                                                            const CommonFlags& common, const EvalFlags& eval);

// The model side of a run: provider, client (its cache and call log in RUN_DIR), prompts and
// the roles. `resume_hint`: the command that continues the run, for the manual provider's note.
struct ModelSetup {
  llm::LlmConfig config;
  std::unique_ptr<llm::HttpTransport> transport;
  std::unique_ptr<llm::Provider> provider;
  std::unique_ptr<llm::LlmClient> client;
  std::optional<agent::PromptLibrary> prompts;
  agent::AgentOptions options;
  std::unique_ptr<agent::Agents> agents;
  std::string resume_hint;  // the command that continues the run, with the model's flags
};

struct ModelFlags {
  std::string config, provider, model, base_url, prompts;
  bool no_tools = false;
  std::string command;  // --command: the command provider's command line, split at spaces
};

// The provider, client, prompts and roles of `flags` for a run in `run_dir`; `budget`, when given,
// overrides the config's LLM budget where its fields are positive. An error names a bad provider,
// a missing model or API key, or a config or prompt folder that cannot be read.
Result<std::unique_ptr<ModelSetup>> model_setup(const ModelFlags& flags, const std::filesystem::path& run_dir,
                                                const std::string& resume_hint, const llm::Budget* budget);
// Every LLM call, for the record (no credentials: they are not in the records).
void write_call_log(const llm::LlmClient& client, const std::filesystem::path& file);
// A KernelBench problem has no seed: its reference, as a candidate, is profiled in its place, so
// that the analyst, planner and coder see which kernels torch runs for it and what bounds them.
// Writes RUN_DIR/reference_as_candidate.py and sets task.seed_path to it.
Status reference_as_seed(task::Task& task, const std::filesystem::path& run_dir);

}  // namespace kp::cli
