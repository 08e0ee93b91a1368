// The subcommands of the kernelpro CLI. Each returns the process exit code (see main.cc).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/result.h"
#include "verdict/eval_options.h"

namespace kp::cli {

struct CommonFlags {
  std::string arch, nvcc = "nvcc", cache_dir, worker;
  std::string cutlass;  // --cutlass DIR (else CUTLASS_PATH, else the nvidia-cutlass package)
  bool json = false;
  bool keep_scratch = false;
};

struct EvalFlags {
  std::string task, candidate;
  std::string cu;      // KernelBench: the prebuilt form's .cu (default: <candidate stem>.cu when present)
  std::string python;  // KernelBench: the Python that runs the worker (default: $KERNELPRO_PYTHON, else python3)
  std::optional<uint64_t> seed;
  std::optional<int> trials;  // correctness trials; default 3 (native), 5 (KernelBench, as its scripts)
  // Watchdog seconds; default 120 (native), 600 (KernelBench: load_inline builds in the worker,
  // and level-1 inputs of several GB are drawn on the CPU by get_inputs()).
  std::optional<double> timeout_s;
  bool no_energy = false;
  eval::EvalOptions options;
};

struct BuildFlags {
  std::string task, candidate;
};

struct BaselineFlags {
  std::string suite, out, python;
  std::vector<int> levels = {1, 2, 3};
  std::vector<std::string> only;
  std::vector<std::string> modes = {"eager", "compile"};
  int warmup = 5, trials = 100;
  double timeout_s = 900;
  std::optional<double> time_budget_s;
  bool retry_failed = false;
  int prewarm_jobs = 0;
  bool keep_scratch = false;
};

struct ProfileFlags {
  EvalFlags eval;                   // task, candidate, --cu, --python, --seed, --timeout
  std::string collector = "cupti";  // who reads the counters: cupti (in the worker) or ncu
  std::string replay = "auto";      // --replay: cupti's pass replay (eval::ProfileRequest::replay)
  int stage = 1;                    // 2: add the stage-2 metric families the class calls for
  std::vector<std::string> families;  // --family: stage-2 families to collect instead
  std::vector<std::string> metrics;   // --metrics: extra metric names for stage 1
  std::string stage1_file;            // --stage1-metrics: a file of names replacing the stage-1 list
  bool no_trace = false, no_sass = false, compare_ncu = false;
  std::string ncu, cuobjdump;       // tool paths; empty: searched
  std::string calibration_dir;      // --calibration: where calibrated ceilings are stored
};

// `kernelpro analyze`: profile's flags, and which tools and rules.
struct AnalyzeFlags {
  ProfileFlags profile;
  std::vector<std::string> tools;  // --tool: run these (comma-separated) instead of choosing
  std::vector<std::string> rules;  // --rules: more rule-file folders
  bool no_rules = false;           // --no-rules: the built-in tools only
  bool no_stage2 = false;          // --no-stage2: tools on stage-1 evidence only
  bool list_tools = false;         // --list-tools: print the registry and exit
  int max_points = 6;              // --max-points
  bool stage2_all = false;         // --stage2-all: stage 2 collects every tool's metrics
  std::string save_evidence;       // --save-evidence FILE: the evidence, for --evidence later
  std::string evidence;            // --evidence FILE: analyze a saved file again, no GPU
};
int run_analyze(const AnalyzeFlags& flags, const CommonFlags& common);

// `kernelpro generate`: the model writes a candidate, kernelpro builds, evaluates, debugs and
// analyzes it (driver/generate_session.h). LLM settings come from the [llm] table of --config,
// then these flags; the API key from the environment variable the config names.
struct GenerateFlags {
  std::string task;
  std::string config;      // --config: a TOML file with an [llm] table
  std::string provider;    // --provider: openai, anthropic, command, manual
  std::string model;       // --model
  std::string base_url;    // --base-url
  std::string command;     // --command: the command provider's command line
  std::string run_dir;     // --run-dir (default runs/<task name>-generate)
  std::string direction;   // --direction: what to change
  bool resume = false;     // --resume: continue a run whose folder exists
  int max_debug = 3;       // --max-debug: debugger rounds
  bool no_tools = false;   // --no-tools: do not offer the coder tools
  std::string prompts;     // --prompts: the template folder (default: the source tree's prompts/)
  EvalFlags eval;          // --python, --seed, --timeout
};
int run_generate(const GenerateFlags& flags, const CommonFlags& common);

// `kernelpro optimize` (cli/optimize_command.cc): without a model, the offline tuner.
struct OptimizeFlags {
  std::string task;
  std::string run_dir;            // --run-dir (default runs/<task name>-optimize)
  bool resume = false;            // --resume
  int budget = 30;                // --budget: candidates evaluated by this run
  double minutes = 0;             // --minutes: wall-time limit (0: none)
  double gpu_seconds = 0;         // --gpu-seconds: the workers' time (0: none)
  std::string search = "mcts";    // --search: mcts, greedy, beam
  std::string objective = "time"; // --objective: time, energy, edp, energy-at-matched-time
  std::string memory;             // --memory: the lessons database (default <data dir>/memory.db)
  EvalFlags eval;                 // --seed, --timeout, --python
  int build_ahead = 2;            // --build-ahead: tuner points compiled while the GPU evaluates
  // With a model (--provider or --config): the closed loop (driver/model_search.h).
  std::string config, provider, model, base_url, prompts;  // as generate's
  std::string command;                                     // --command, as generate's
  bool no_tools = false;                                   // --no-tools
  std::string feedback = "tools";  // --feedback: tools, raw-metrics, none
  int in_flight = 2;               // --in-flight: children the model loop makes at once
  int64_t max_llm_calls = 0;       // --max-llm-calls (0: the config's budget)
  int64_t max_tokens = 0;          // --max-tokens
  double max_cost = 0;             // --max-cost: US dollars
};
int run_optimize(const OptimizeFlags& flags, const CommonFlags& common);

// `kernelpro cutlass index|search|show|ls`: the CUTLASS/CuTe code index (codesearch/).
struct CutlassFlags {
  std::string action;              // index, search, show, ls
  std::vector<std::string> words;  // search: the query; show: PATH:START-END; ls: a directory
  std::string db;                  // --db: the index file (default under the cache directory)
  int limit = 5;                   // --limit
  int per_file = 1;                // --per-file
};
int run_cutlass(const CutlassFlags& flags, const CommonFlags& common);
}  // namespace kp::cli
namespace kp::driver {
struct OptimizeOptions;
}
namespace kp::cli {
// The search's options from the flags (both kinds of optimize): run directory (default
// runs/<task stem>-optimize), budgets, strategy, objective, memory. An error names a bad value.
Result<driver::OptimizeOptions> optimize_options(const OptimizeFlags& flags, const std::string& task_name);
// The model-driven loop (cli/model_optimize_command.cc), which run_optimize calls when a model is configured.
int run_model_optimize(const OptimizeFlags& flags, const CommonFlags& common);

// `kernelpro calibrate` (cli/calibrate_command.cc).
struct CalibrateFlags {
  std::string store;       // --store: the calibration folder (default $XDG_DATA_HOME/kernelpro/calibration,
                           // else ~/.local/share/kernelpro/calibration)
  double timeout_s = 120;  // --timeout: seconds before the worker is killed
  bool quick = false;      // --quick: fewer repetitions per figure (tests)
};
int run_calibrate(const CalibrateFlags& flags, const CommonFlags& common);

struct ClassifyFlags {
  std::string csv;              // an ncu table: --csv --page raw --print-units base
  std::string gpu;              // the GPU's name when the table lacks device__attribute_display_name
  std::string calibration_dir;  // --calibration
};

int run_eval(const EvalFlags& flags, const CommonFlags& common);
int run_classify(const ClassifyFlags& flags, const CommonFlags& common);
int run_profile(const ProfileFlags& flags, const CommonFlags& common);
int run_build(const BuildFlags& flags, const CommonFlags& common);
int run_doctor(const CommonFlags& common);
int run_baseline(const BaselineFlags& flags);

// `kernelpro bench run|status|report CAMPAIGN` (cli/bench_command.cc): a campaign over a suite.
struct BenchFlags {
  std::string campaign;                // the campaign folder
  std::string suite;                   // --suite: what to run (first run only)
  std::vector<int> levels = {1, 2, 3};  // --levels (KernelBench)
  std::vector<std::string> only;       // --only: problem names
  std::vector<std::string> problems;   // --problem: run only these ids (a Slurm task's)
  std::string gpus = "all";            // --gpus: all, none, inherit, or a list of indices
  int jobs = 0;                        // --jobs: nvcc processes at once over every lane (0: the cores)
  bool retry_failed = false;           // --retry-failed
  bool no_baselines = false;           // --no-baselines
  // What every problem's `kernelpro optimize` gets.
  int budget = 12;
  double minutes = 0;
  int in_flight = 0;  // --in-flight: each problem's children at once (0: optimize's default)
  std::string feedback;  // --feedback: what the model sees of a profile (empty: optimize's default)
  std::string search, objective, provider, model, config, base_url, command;
  double max_cost = 0;
  double timeout_s = 0;
  std::string python;
  // --slurm [OPTIONS]: submit a job array instead of running here.
  std::string slurm;
  bool slurm_flag = false;
  int gpus_per_task = 1;
  std::string sbatch = "sbatch", squeue = "squeue", sacct = "sacct";
  // report
  std::string html, csv;
  std::vector<std::string> baselines;
};
int run_bench_run(const BenchFlags& flags, const CommonFlags& common);
int run_bench_status(const BenchFlags& flags, const CommonFlags& common);
int run_bench_report(const BenchFlags& flags, const CommonFlags& common);
// `kernelpro bench prompts C`: the manual provider's waiting prompts over the campaign.
int run_bench_prompts(const BenchFlags& flags, const CommonFlags& common);
// `kernelpro mcp` (cli/mcp_command.cc, mcp/server.h): the MCP server on stdin/stdout.
int run_mcp(const std::string& workspace, const std::vector<std::string>& allow);
// `kernelpro report RUN_DIR`: one run's page.
int run_run_report(const std::string& run_dir, const std::string& html, const CommonFlags& common);

}  // namespace kp::cli
