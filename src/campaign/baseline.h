// `kernelpro baseline`: PyTorch's own times (eager and torch.compile) for every problem of a
// KernelBench suite, measured by the Python worker, recorded after each problem so that a run
// can stop at any point (a time budget, a lost machine) and the next run resumes.
//
// Files in the output folder, each rewritten whole (temp file + rename) after every problem:
//   kernelpro_baseline.json   everything: per problem and mode ok/error, mean/std/min/max/median
//                             ms, num_trials, warmup_s, date; hardware, device, torch_version
//   baseline_time_torch.json                          KernelBench's format, eager mode
//   baseline_time_torch_compile_inductor_default.json KernelBench's format, compile mode
// KernelBench's format: {"level1":{"23_Softmax.py":{"mean":..,"std":..,"min":..,"max":..,
// "num_trials":100,"hardware":..,"device":"cuda:0"}}}, milliseconds to 3 significant digits,
// failed measurements left out.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/worker_client.h"
#include "util/result.h"
#include "verdict/protocol.h"

namespace kp::campaign {

inline constexpr const char* kBaselineFile = "kernelpro_baseline.json";
inline constexpr const char* kEagerTimingFile = "baseline_time_torch.json";
inline constexpr const char* kCompileTimingFile = "baseline_time_torch_compile_inductor_default.json";

// One problem of a suite.
struct SuiteProblem {
  int level = 0;               // N of the levelN folder
  int problem_id = 0;          // the number before the first '_' of the file name
  std::string name;            // the file name, "23_Softmax.py"
  std::filesystem::path path;  // absolute
};

struct SuiteListing {
  std::vector<SuiteProblem> problems;  // by level, then problem id, then name
  std::vector<std::string> skipped;    // .py files that are not problems: "path: why"
};

// Lists suite_dir/levelN/*.py for each N in levels (a missing level folder lists nothing),
// keeping the files that load_kernelbench_problem accepts. only: file names ("23_Softmax.py")
// or stems ("23_Softmax") to keep; empty keeps all. Errors: kNotFound when suite_dir is not a
// folder; kInvalidInput when a name in only matches no problem, or no problem is found at all.
Result<SuiteListing> list_suite(const std::filesystem::path& suite_dir, const std::vector<int>& levels,
                                const std::vector<std::string>& only);

// "level1" for 1.
std::string level_key(int level);

// x rounded to `digits` significant digits (0 stays 0): 1.23456 -> 1.23, 12345 -> 12300.
double round_significant(double x, int digits);

// A folder name for a GPU: lowercase, runs of other characters than [a-z0-9] become one '-',
// no leading or trailing '-': "NVIDIA H200" -> "nvidia-h200". "unknown-gpu" when empty.
std::string gpu_slug(std::string_view name);

// An empty baseline document ({"format":"kernelpro-baseline","version":1,"problems":{}}).
nlohmann::json empty_baseline_doc();

// Reads kernelpro_baseline.json: an empty document when the file does not exist. kInvalidInput
// when it is not JSON or not a baseline document (the message names the file and says to fix
// or move it).
Result<nlohmann::json> load_baseline_doc(const std::filesystem::path& file);

enum class RetryFailed { kNo, kYes };

// The modes of `requested` that problem p still needs according to doc: those not recorded,
// and, with RetryFailed::kYes, those recorded as failed. Empty: nothing to do for p.
std::vector<std::string> modes_to_run(const nlohmann::json& doc, const SuiteProblem& p,
                                      const std::vector<std::string>& requested, RetryFailed retry);

// What record_baseline stores beside the reply.
struct BaselineRecordInfo {
  int warmup = 0, trials = 0;  // as requested
  std::string date;            // ISO 8601 UTC, e.g. "2025-06-01T12:00:00Z"
  double wall_s = 0;           // wall time of the request
};

// Records the reply's results for `modes` (only those) under doc.problems.levelN.NAME.results,
// replacing earlier results of the same modes and keeping the others; sets the problem's and the
// document's hardware, device and torch_version from the reply when it names them.
void record_baseline(nlohmann::json& doc, const SuiteProblem& p, const std::vector<std::string>& modes,
                     const eval::BaselineReply& reply, const BaselineRecordInfo& info);

// KernelBench's timing format for one mode ("eager" or "compile") from doc; see the top.
nlohmann::json kernelbench_timing_json(const nlohmann::json& doc, std::string_view mode);

// Writes the three files into out_dir (created when missing), each through a temp file and a
// rename. kIo with the path on failure.
Status write_baseline_files(const std::filesystem::path& out_dir, const nlohmann::json& doc);

// What the document says about one level.
struct LevelSummary {
  int level = 0;
  int recorded = 0;                       // problems with at least one recorded mode
  int measured = 0;                       // ... whose recorded modes all succeeded
  int failed = 0;                         // ... with at least one failed mode
  int both = 0;                           // problems with eager and compile both measured
  int compile_faster = 0;                 // of those, compile mean < eager mean
  int compile_faster_5pct = 0;            // of those, eager mean / compile mean > 1.05
  double geomean_eager_over_compile = 0;  // over `both` problems (mean of logs); 0 when none
};
// One entry per level in doc, by level.
std::vector<LevelSummary> summarize_baselines(const nlohmann::json& doc);
// "level1: 98 measured, 2 failed; torch.compile beats eager on 40 of 95 (31 by >5%); geomean
// eager/compile 1.07x"
std::string format_level_summary(const LevelSummary& s);

struct BaselineOptions {
  std::filesystem::path suite_dir;  // KernelBench's folder holding level1/, level2/, level3/
  // Output folder. Empty: default_out_root / gpu_slug(the worker's GPU name).
  std::filesystem::path out_dir;
  std::filesystem::path default_out_root;
  std::vector<int> levels = {1, 2, 3};
  std::vector<std::string> only;  // file names or stems; empty: every problem
  std::vector<std::string> modes = {"eager", "compile"};
  int warmup = 5;                       // untimed calls per mode
  int trials = 100;                     // timed calls per mode
  double timeout_s = 900;               // per problem; past it the worker is killed, the problem failed
  std::optional<double> time_budget_s;  // no new problem starts after this many seconds
  RetryFailed retry_failed = RetryFailed::kNo;
  // Before timing, this many extra Python workers compile the problems still to measure with
  // torch.compile in parallel (nothing is timed meanwhile), so that inductor's on-disk caches
  // are warm and the serial timing pass does not wait for compilation. 0: off. The prewarm
  // phase stops taking new problems after half the time budget.
  int prewarm_jobs = 0;
  eval::WorkerOptions worker;  // the Python worker
};

struct BaselineRun {
  std::filesystem::path out_dir;  // resolved
  int listed = 0;                 // problems selected in the suite
  int already_recorded = 0;       // skipped: nothing left to measure
  int attempted = 0;              // problems sent to the worker in this run
  int failed = 0;                 // of attempted, with at least one failed mode
  int remaining = 0;              // not attempted because the time budget was spent
  int prewarmed = 0, prewarm_failed = 0;  // torch.compile warm-ups done before timing
  double prewarm_s = 0;
  bool budget_spent = false;
  std::vector<LevelSummary> summary;  // of the whole document after the run
};

// Runs the loop: list, load the document, skip what is recorded, measure the rest one problem at
// a time on the worker, recording and writing the files after each. progress receives one line
// per problem and a few notes. A failed measurement (an error of PyTorch, a crash or a hang of
// the worker) is recorded data, not an Error. Errors: those of list_suite and load_baseline_doc;
// kUnavailable when the worker finds no GPU or no torch; kInvalidInput when the document was
// measured on other hardware than the worker's; kIo when a file cannot be written.
Result<BaselineRun> run_baseline(const BaselineOptions& options,
                                 const std::function<void(const std::string&)>& progress);

}  // namespace kp::campaign
