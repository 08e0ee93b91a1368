// What every subcommand of the CLI shares: exit codes, the mapping of errors to them, the
// options every stage takes from the common flags, and where kernelpro's own files live.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "build/builder.h"
#include "cli/commands.h"
#include "codesearch/index.h"
#include "eval/evaluator.h"
#include "eval/worker_client.h"
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
// A word as a POSIX shell reads it back: as is when it is plain, else in single quotes.
std::string shell_quote(const std::string& word);
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

}  // namespace kp::cli
