// kernelpro: the orchestrator's command line. Fills the options structs, runs a command, prints
// the result. Exit codes: 0 verdict ok (or check passed), 1 the candidate failed (an outcome
// other than ok), 2 bad input or usage, 3 not run (no GPU on this machine), 4 internal or tool
// failure.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <chrono>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "verdict/protocol.h"

namespace {

// A problem's `kernelpro optimize` under `kernelpro bench run` (KP_CAMPAIGN_PID) stops as after
// Ctrl-C (the evaluation in flight finishes, the store stays resumable) when the campaign's
// process is gone, however it ended: a campaign killed with SIGKILL leaves no lane running.
void stop_with_campaign() {
  const char* pid_text = std::getenv("KP_CAMPAIGN_PID");
  if (!pid_text || !*pid_text) return;
  const int pid = std::atoi(pid_text);
  if (pid <= 0) return;
  std::thread([pid] {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      while (poll(&p, 1, -1) < 0) {
      }
    } else {
      while (kill(pid, 0) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    kill(getpid(), SIGINT);
  }).detach();
}

// The command line: every subcommand's flags, which CLI11 binds to its options (so a Commands
// stays where it is while `app` lives), and the subcommands, so that run() can tell which one
// was named. The add_ functions register the subcommands in the order the help lists them.
struct Commands {
  void add_to(CLI::App& app);
  void add_common(CLI::App* sub);
  void add_eval(CLI::App& app);
  void add_profile(CLI::App& app);
  void add_analyze(CLI::App& app);
  void add_optimize(CLI::App& app);
  void add_generate(CLI::App& app);
  void add_classify(CLI::App& app);
  void add_build(CLI::App& app);
  void add_baseline(CLI::App& app);
  void add_calibrate(CLI::App& app);
  void add_cutlass(CLI::App& app);
  void add_bench(CLI::App& app);
  void add_report(CLI::App& app);
  void add_mcp(CLI::App& app);
  void add_doctor(CLI::App& app);
  // The exit code of the named subcommand (2: none was, or its arguments do not go together).
  int run();

  kp::cli::CommonFlags common;
  kp::cli::EvalFlags eval_flags;
  kp::cli::ProfileFlags profile_flags;
  kp::cli::AnalyzeFlags analyze_flags;
  kp::cli::OptimizeFlags optimize_flags;
  kp::cli::GenerateFlags generate_flags;
  kp::cli::ClassifyFlags classify_flags;
  kp::cli::BuildFlags build_flags;
  kp::cli::BaselineFlags baseline_flags;
  kp::cli::CalibrateFlags calibrate_flags;
  kp::cli::CutlassFlags cutlass_flags;
  kp::cli::BenchFlags bench_flags;
  std::string report_dir, report_html;
  std::string mcp_workspace;
  std::vector<std::string> mcp_allow;

  CLI::App* eval = nullptr;
  CLI::App* profile = nullptr;
  CLI::App* analyze = nullptr;
  CLI::App* optimize = nullptr;
  CLI::App* generate = nullptr;
  CLI::App* classify = nullptr;
  CLI::App* build = nullptr;
  CLI::App* baseline = nullptr;
  CLI::App* calibrate = nullptr;
  CLI::App* cutlass = nullptr;
  CLI::App* bench_run = nullptr;
  CLI::App* bench_status = nullptr;
  CLI::App* bench_report = nullptr;
  CLI::App* bench_prompts = nullptr;
  CLI::App* report = nullptr;
  CLI::App* mcp = nullptr;
  CLI::App* doctor = nullptr;
};

void Commands::add_to(CLI::App& app) {
  add_eval(app);
  add_profile(app);
  add_analyze(app);
  add_optimize(app);
  add_generate(app);
  add_classify(app);
  add_build(app);
  add_baseline(app);
  add_calibrate(app);
  add_cutlass(app);
  add_bench(app);
  add_report(app);
  add_mcp(app);
  add_doctor(app);
}

void Commands::add_common(CLI::App* sub) {
  sub->add_option("--arch", common.arch, "target architecture, e.g. sm_90a (default: the GPU's)");
  sub->add_option("--nvcc", common.nvcc, "nvcc to use")->default_val("nvcc");
  sub->add_option("--cache-dir", common.cache_dir, "build cache (default ~/.cache/kernelpro/build)");
  sub->add_option("--worker", common.worker, "kp-worker binary (default: beside kernelpro)");
  sub->add_flag("--json", common.json, "print JSON instead of a table");
  sub->add_flag("--keep-scratch", common.keep_scratch, "keep the worker's scratch directory (logs)");
  sub->add_option("--cutlass", common.cutlass, "CUTLASS checkout for CuTe candidates (default: $CUTLASS_PATH, else the nvidia-cutlass package)");
}

void Commands::add_eval(CLI::App& app) {
  eval = app.add_subcommand("eval", "evaluate a candidate: build, verify, time, energy");
  eval->add_option("task", eval_flags.task, "task folder (task.toml, reference.cu), or a KernelBench problem .py")->required();
  eval->add_option("candidate", eval_flags.candidate,
                   "candidate .cu (default: the task's seed.cu); for a KernelBench problem, a .py defining ModelNew");
  eval->add_option("--cu", eval_flags.cu, "KernelBench: a .cu that kernelpro builds and the candidate .py loads (default: <candidate stem>.cu when it exists)");
  eval->add_option("--python", eval_flags.python, "KernelBench: Python with PyTorch for the worker (default: $KERNELPRO_PYTHON, else python3)");
  eval->add_option("--precision-policy", eval_flags.options.precision_policy,
                   "KernelBench: kernelbench (the problem's dtype and KernelBench's tolerance) or fp64 (also against a float64 reference)")
      ->check(CLI::IsMember({"kernelbench", "fp64"}))
      ->default_val("kernelbench");
  eval->add_option("--precision", eval_flags.options.precision, "KernelBench: cast the model and floating inputs to fp32, fp16 or bf16")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
      ->default_val("fp32");
  eval->add_flag("--strict-kernels", eval_flags.options.strict_kernels,
                 "KernelBench: reject a candidate that launches kernels it did not build (PyTorch, cuBLAS, cuDNN)");
  eval->add_option("--trials", eval_flags.trials, "correctness trials with fresh inputs (default: 3; 5 for KernelBench problems, as its scripts)")
      ->check(CLI::PositiveNumber);
  eval->add_option("--seed", eval_flags.seed, "input seed, to reproduce an evaluation (default: private, random)");
  eval->add_option("--timing-budget", eval_flags.options.timing_budget_s,
                   "most seconds of wall time for the timed calls, each counted whole (flush, poisoning, syncs, check)")
      ->default_val(kp::eval::EvalOptions{}.timing_budget_s);
  eval->add_option("--median-ci", eval_flags.options.median_ci,
                   "stop timing once the median's 95% interval is within this fraction of it (0: use the budget)")
      ->default_val(kp::eval::EvalOptions{}.median_ci);
  eval->add_option("--energy-window", eval_flags.options.energy_window_s, "seconds of calls for the energy reading")->default_val(0.5);
  eval->add_flag("--no-energy", eval_flags.no_energy, "skip the energy measurement");
  eval->add_option("--timeout", eval_flags.timeout_s, "seconds before a hanging evaluation is killed (default: 120; 600 for KernelBench problems)")
      ->check(CLI::PositiveNumber);
  add_common(eval);
}

void Commands::add_profile(CLI::App& app) {
  profile = app.add_subcommand("profile", "the evidence at three levels (counters, SASS, trace) and the roofline class of a candidate");
  profile->add_option("task", profile_flags.eval.task, "task folder, or a KernelBench problem .py")->required();
  profile->add_option("candidate", profile_flags.eval.candidate, "candidate .cu (default: the task's seed.cu); for a KernelBench problem, a .py defining ModelNew");
  profile->add_option("--cu", profile_flags.eval.cu, "KernelBench: the .cu the candidate .py loads (default: <candidate stem>.cu when it exists)");
  profile->add_option("--python", profile_flags.eval.python, "KernelBench: Python with PyTorch for the worker (default: $KERNELPRO_PYTHON, else python3)");
  profile->add_option("--collector", profile_flags.collector, "who reads the counters: cupti (in the worker, fast) or ncu (Nsight Compute, the reference)")
      ->check(CLI::IsMember({"cupti", "ncu"}))
      ->default_val("cupti");
  profile->add_option("--replay", profile_flags.replay,
                      "cupti: user (the worker reruns the candidate per counter pass from restored inputs), kernel (CUPTI "
                      "saves and restores all device memory per pass; slow), auto (user, else kernel)")
      ->check(CLI::IsMember({"auto", "user", "kernel"}))
      ->default_val("auto");
  profile->add_option("--stage", profile_flags.stage, "1: stage-1 metrics; 2: also the stage-2 families the class calls for")->default_val(1)->check(CLI::Range(1, 2));
  profile->add_option("--family", profile_flags.families, "stage-2 families to collect (memory, latency, compute, shared); implies --stage 2")
      ->delimiter(',')
      ->check(CLI::IsMember({"memory", "latency", "compute", "shared"}));
  profile->add_option("--metrics", profile_flags.metrics, "extra metric names for stage 1, comma-separated")->delimiter(',');
  profile->add_option("--stage1-metrics", profile_flags.stage1_file,
                      "a file of metric names, one a line (# comments), replacing the stage-1 list (to measure what "
                      "metrics cost in counter passes)")
      ->check(CLI::ExistingFile);
  profile->add_flag("--no-trace", profile_flags.no_trace, "skip the system-level trace");
  profile->add_flag("--no-sass", profile_flags.no_sass, "skip the SASS listing");
  profile->add_flag("--compare-ncu", profile_flags.compare_ncu, "also collect the counters with ncu and report how far they differ");
  profile->add_option("--ncu", profile_flags.ncu, "ncu binary (default: searched in PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)");
  profile->add_option("--cuobjdump", profile_flags.cuobjdump, "cuobjdump binary (default: the toolkit's, or the nvidia-cuda-cuobjdump wheel)");
  profile->add_option("--calibration", profile_flags.calibration_dir, "where `kernelpro calibrate` stored this GPU's ceilings (default ~/.local/share/kernelpro/calibration)");
  profile->add_option("--seed", profile_flags.eval.seed, "input seed (default: private, random)");
  profile->add_option("--timeout", profile_flags.eval.timeout_s, "seconds before a hanging run is killed (default: 120; 600 for KernelBench problems)")
      ->check(CLI::PositiveNumber);
  add_common(profile);
}

void Commands::add_analyze(CLI::App& app) {
  analyze = app.add_subcommand("analyze", "the diagnosis of a candidate: its main bottleneck and what to change, with the numbers");
  {
    kp::cli::ProfileFlags& pf = analyze_flags.profile;
    analyze->add_option("task", pf.eval.task, "task folder, or a KernelBench problem .py");
    analyze->add_option("candidate", pf.eval.candidate, "candidate .cu (default: the task's seed.cu); for a KernelBench problem, a .py defining ModelNew");
    analyze->add_option("--cu", pf.eval.cu, "KernelBench: the .cu the candidate .py loads");
    analyze->add_option("--python", pf.eval.python, "KernelBench: Python with PyTorch for the worker");
    analyze->add_option("--collector", pf.collector, "who reads the counters: cupti (in the worker) or ncu")
        ->check(CLI::IsMember({"cupti", "ncu"}))
        ->default_val("cupti");
    analyze->add_option("--replay", pf.replay, "cupti's counter-pass replay: auto, user, kernel")
        ->check(CLI::IsMember({"auto", "user", "kernel"}))
        ->default_val("auto");
    analyze->add_option("--tool", analyze_flags.tools, "run these tools (comma-separated) instead of the ones the evidence calls for")->delimiter(',');
    analyze->add_option("--rules", analyze_flags.rules, "another folder of rule files (TOML), besides rules/ and ~/.config/kernelpro/rules");
    analyze->add_flag("--no-rules", analyze_flags.no_rules, "built-in tools only");
    analyze->add_flag("--no-stage2", analyze_flags.no_stage2, "run the tools on the stage-1 evidence only (no second collection)");
    analyze->add_flag("--list-tools", analyze_flags.list_tools, "list every tool (built-in and rule files) and exit");
    analyze->add_flag("--stage2-all", analyze_flags.stage2_all,
                      "stage 2 collects every tool's metrics (the same tools run): evidence to save and analyze again");
    analyze->add_option("--save-evidence", analyze_flags.save_evidence,
                        "write the evidence the tools read to FILE (JSON), to analyze again later with --evidence");
    analyze->add_option("--evidence", analyze_flags.evidence,
                        "analyze a file written by --save-evidence again, without a GPU (no TASK or CANDIDATE)");
    analyze->add_option("--max-points", analyze_flags.max_points, "points in the feedback text (default 6)")->check(CLI::PositiveNumber);
    analyze->add_flag("--no-trace", pf.no_trace, "skip the system-level trace");
    analyze->add_option("--ncu", pf.ncu, "ncu binary");
    analyze->add_option("--cuobjdump", pf.cuobjdump, "cuobjdump binary");
    analyze->add_option("--calibration", pf.calibration_dir, "where `kernelpro calibrate` stored this GPU's ceilings");
    analyze->add_option("--seed", pf.eval.seed, "input seed (default: private, random)");
    analyze->add_option("--timeout", pf.eval.timeout_s, "seconds before a hanging run is killed")->check(CLI::PositiveNumber);
  }
  add_common(analyze);
}

void Commands::add_optimize(CLI::App& app) {
  optimize = app.add_subcommand("optimize", "search for a faster kernel: the model writes candidates (--provider), or without one the seed's KP_TUNE parameters are tuned");
  {
    optimize->add_option("task", optimize_flags.task, "task folder with a seed.cu, or (with a model) a KernelBench problem .py")->required();
    optimize->add_option("--run-dir", optimize_flags.run_dir, "where the run store, candidates and best.cu go (default runs/<task>-optimize)");
    optimize->add_flag("--resume", optimize_flags.resume, "continue the run in --run-dir");
    optimize->add_option("--budget", optimize_flags.budget, "candidates to evaluate in this run (default 30)")->check(CLI::PositiveNumber);
    optimize->add_option("--minutes", optimize_flags.minutes, "stop after this much wall time")->check(CLI::NonNegativeNumber);
    optimize->add_option("--gpu-seconds", optimize_flags.gpu_seconds, "stop after the GPU worker has run this long")->check(CLI::NonNegativeNumber);
    optimize->add_option("--search", optimize_flags.search, "mcts (default), greedy or beam");
    optimize->add_option("--objective", optimize_flags.objective, "time (default), energy, edp or energy-at-matched-time");
    optimize->add_option("--memory", optimize_flags.memory, "the lessons database shared by runs (default $XDG_DATA_HOME/kernelpro/memory.db)");
    optimize->add_option("--seed", optimize_flags.eval.seed, "input seed (default: private, random)");
    optimize->add_option("--timeout", optimize_flags.eval.timeout_s, "seconds before a hanging run is killed")->check(CLI::PositiveNumber);
    optimize->add_option("--build-ahead", optimize_flags.build_ahead, "tuner: points compiled while the GPU evaluates another (default 2, 0: none)")->check(CLI::NonNegativeNumber);
    optimize->add_option("--config", optimize_flags.config, "TOML file with an [llm] table: the model writes the candidates");
    optimize->add_option("--provider", optimize_flags.provider, "openai, anthropic, command or manual: the model writes the candidates");
    optimize->add_option("--model", optimize_flags.model, "the model's name at the provider");
    optimize->add_option("--base-url", optimize_flags.base_url, "the API's base URL (a local server)");
    optimize->add_option("--command", optimize_flags.command, "provider command: the model's command line, split at spaces (no quoting); it reads the prompt on stdin and writes the reply on stdout, e.g. \"claude -p\", \"codex exec\", \"gemini -p\", \"llm -m gpt-4.1\", \"ollama run qwen2.5-coder\"");
    optimize->add_option("--prompts", optimize_flags.prompts, "prompt template folder (default: kernelpro's prompts/)");
    optimize->add_flag("--no-tools", optimize_flags.no_tools, "do not offer the coder tools (compile_check)");
    optimize->add_option("--feedback", optimize_flags.feedback, "what the model sees of a profile: tools (default), raw-metrics or none");
    optimize->add_option("--in-flight", optimize_flags.in_flight, "with a model: candidates in flight at once, the model writing one while the GPU measures another (default 2, 1: one after another)")->check(CLI::PositiveNumber);
    optimize->add_option("--max-llm-calls", optimize_flags.max_llm_calls, "stop after this many LLM calls")->check(CLI::NonNegativeNumber);
    optimize->add_option("--max-tokens", optimize_flags.max_tokens, "stop after this many LLM tokens")->check(CLI::NonNegativeNumber);
    optimize->add_option("--max-cost", optimize_flags.max_cost, "stop after this many US dollars of LLM calls")->check(CLI::NonNegativeNumber);
    optimize->add_option("--python", optimize_flags.eval.python, "KernelBench: the Python that runs the worker");
  }
  add_common(optimize);
}

void Commands::add_generate(CLI::App& app) {
  generate = app.add_subcommand("generate", "the model writes a candidate; kernelpro builds, checks, times, debugs and analyzes it");
  {
    generate->add_option("task", generate_flags.task, "task folder, or a KernelBench problem .py")->required();
    generate->add_option("--config", generate_flags.config, "TOML file with an [llm] table (provider, model, base_url, api_key_env, retry, budget, prices)");
    generate->add_option("--provider", generate_flags.provider, "openai, anthropic, command or manual (overrides --config)");
    generate->add_option("--model", generate_flags.model, "the model's name at the provider");
    generate->add_option("--base-url", generate_flags.base_url, "the API's base URL (a local vLLM, llama.cpp or Ollama server)");
    generate->add_option("--command", generate_flags.command, "provider command: the model's command line, split at spaces (no quoting); it reads the prompt on stdin and writes the reply on stdout, e.g. \"claude -p\", \"codex exec\", \"gemini -p\", \"llm -m gpt-4.1\", \"ollama run qwen2.5-coder\"");
    generate->add_option("--run-dir", generate_flags.run_dir, "where attempts, prompts and the LLM call log go (default runs/<task>-generate)");
    generate->add_option("--direction", generate_flags.direction, "what the coder should change");
    generate->add_flag("--resume", generate_flags.resume, "continue the run in --run-dir (after answering a manual prompt)");
    generate->add_option("--max-debug", generate_flags.max_debug, "debugger rounds after a failed candidate (default 3)")->check(CLI::NonNegativeNumber);
    generate->add_flag("--no-tools", generate_flags.no_tools, "do not offer the coder tools (compile_check)");
    generate->add_option("--prompts", generate_flags.prompts, "prompt template folder (default: kernelpro's prompts/)");
    generate->add_option("--python", generate_flags.eval.python, "KernelBench: the Python that runs the worker");
    generate->add_option("--seed", generate_flags.eval.seed, "input seed (default: private, random)");
    generate->add_option("--timeout", generate_flags.eval.timeout_s, "seconds before a hanging run is killed")->check(CLI::PositiveNumber);
  }
  add_common(generate);
}

void Commands::add_classify(CLI::App& app) {
  classify = app.add_subcommand("classify", "the roofline class of every kernel in an ncu table you already have (no GPU needed)");
  classify->add_option("csv", classify_flags.csv, "ncu output: --csv --page raw --print-units base (--set full, or kernelpro's stage-1 list)")->required();
  classify->add_option("--gpu", classify_flags.gpu, "the GPU's name, when the table does not say (e.g. \"NVIDIA H200\")");
  classify->add_option("--calibration", classify_flags.calibration_dir, "where `kernelpro calibrate` stored the ceilings (default ~/.local/share/kernelpro/calibration)");
  classify->add_flag("--json", common.json, "print JSON instead of a table");
}

void Commands::add_build(CLI::App& app) {
  build = app.add_subcommand("build", "build a candidate and show its resource report (no GPU needed)");
  build->add_option("task", build_flags.task, "task folder")->required();
  build->add_option("candidate", build_flags.candidate, "candidate .cu (default: the task's seed.cu)");
  add_common(build);
}

void Commands::add_baseline(CLI::App& app) {
  baseline = app.add_subcommand("baseline", "time PyTorch eager and torch.compile on a KernelBench suite (resumable)");
  baseline->add_option("--suite", baseline_flags.suite, "KernelBench folder holding level1/, level2/, level3/")->required();
  baseline->add_option("--out", baseline_flags.out, "output folder (default: bench/baselines/<gpu> in the source tree)");
  baseline->add_option("--levels", baseline_flags.levels, "levels to measure, e.g. 1,2")->delimiter(',')->check(CLI::Range(1, 9))->default_str("1,2,3");
  baseline->add_option("--only", baseline_flags.only, "problem file names or stems, e.g. 23_Softmax.py,1_Conv2D")->delimiter(',');
  baseline->add_option("--modes", baseline_flags.modes, "eager, compile or both")->delimiter(',')->check(CLI::IsMember({"eager", "compile"}))->default_str("eager,compile");
  baseline->add_option("--warmup", baseline_flags.warmup, "untimed calls per mode")->default_val(5)->check(CLI::NonNegativeNumber);
  baseline->add_option("--trials", baseline_flags.trials, "timed calls per mode")->default_val(100)->check(CLI::PositiveNumber);
  baseline->add_option("--timeout", baseline_flags.timeout_s, "seconds per problem before the worker is killed and the problem recorded as failed")->default_val(900)->check(CLI::PositiveNumber);
  baseline->add_option("--time-budget", baseline_flags.time_budget_s, "start no new problem after this many seconds; the same command continues")->check(CLI::PositiveNumber);
  baseline->add_option("--prewarm-jobs", baseline_flags.prewarm_jobs, "extra workers that run torch.compile on the remaining problems in parallel before timing (warms inductor's caches; 0: off)")->default_val(0)->check(CLI::NonNegativeNumber);
  baseline->add_flag("--retry-failed", baseline_flags.retry_failed, "measure again the problems whose measurement failed");
  baseline->add_option("--python", baseline_flags.python, "Python with PyTorch for the worker (default: $KERNELPRO_PYTHON, else python3)");
  baseline->add_flag("--keep-scratch", baseline_flags.keep_scratch, "keep the worker's scratch directory (logs)");
}

void Commands::add_calibrate(CLI::App& app) {
  calibrate = app.add_subcommand("calibrate", "measure this GPU's ceilings (bandwidths, FLOP/s per precision) for profile's roofline");
  calibrate->add_option("--store", calibrate_flags.store, "calibration folder (default ~/.local/share/kernelpro/calibration)");
  calibrate->add_option("--timeout", calibrate_flags.timeout_s, "seconds before the worker is killed")->default_val(120)->check(CLI::PositiveNumber);
  calibrate->add_flag("--quick", calibrate_flags.quick, "fewer repetitions per figure");
  calibrate->add_option("--worker", common.worker, "kp-worker binary (default: beside kernelpro)");
  calibrate->add_flag("--json", common.json, "print JSON instead of a table");
  calibrate->add_flag("--keep-scratch", common.keep_scratch, "keep the worker's scratch directory (logs)");
}

void Commands::add_cutlass(CLI::App& app) {
  cutlass = app.add_subcommand("cutlass", "search the CUTLASS/CuTe code: index, search QUERY, show PATH:START-END, ls DIR");
  cutlass->add_option("action", cutlass_flags.action, "index, search, show or ls")->required()->check(CLI::IsMember({"index", "search", "show", "ls"}));
  cutlass->add_option("words", cutlass_flags.words, "search: the query; show: PATH:START-END; ls: a directory under the CUTLASS root");
  cutlass->add_option("--db", cutlass_flags.db, "the index file (default: ~/.cache/kernelpro/cutlass/index-<version>-<root>.db)");
  cutlass->add_option("--limit", cutlass_flags.limit, "hits to show (default 5)")->check(CLI::PositiveNumber);
  cutlass->add_option("--per-file", cutlass_flags.per_file, "hits of one file at most (default 1)")->check(CLI::PositiveNumber);
  cutlass->add_option("--cutlass", common.cutlass, "CUTLASS checkout (default: $CUTLASS_PATH, else the nvidia-cutlass package)");
  cutlass->add_flag("--json", common.json, "print JSON");
}

void Commands::add_bench(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "campaigns over a suite: run (resumable; every GPU, or Slurm), status, report");
  bench->require_subcommand(1);
  bench_run = bench->add_subcommand("run", "optimize every problem of a suite, one lane per GPU; the same command resumes");
  {
    auto& b = bench_flags;
    bench_run->add_option("campaign", b.campaign, "the campaign folder (created by the first run)")->required();
    bench_run->add_option("--suite", b.suite, "first run: a KernelBench folder (level1/...), a folder of task folders (examples/), a task folder, a problem .py, or a list file of these");
    bench_run->add_option("--levels", b.levels, "KernelBench levels, e.g. 1,2")->delimiter(',')->check(CLI::Range(1, 9))->default_str("1,2,3");
    bench_run->add_option("--only", b.only, "problem names or stems, e.g. gelu,19_ReLU")->delimiter(',');
    bench_run->add_option("--problem", b.problems, "run only these problem ids of the campaign (what a Slurm task runs)")->delimiter(',');
    bench_run->add_option("--gpus", b.gpus, "all (default), none (build only), inherit (the environment's CUDA_VISIBLE_DEVICES as one lane), or indices 0,2");
    bench_run->add_option("--jobs", b.jobs, "nvcc processes at once over every lane (default: the cores)")->check(CLI::NonNegativeNumber);
    bench_run->add_flag("--retry-failed", b.retry_failed, "run the failed problems again");
    bench_run->add_flag("--no-baselines", b.no_baselines, "KernelBench: do not measure PyTorch eager and torch.compile first");
    bench_run->add_option("--budget", b.budget, "candidates per problem (default 12)")->check(CLI::PositiveNumber);
    bench_run->add_option("--minutes", b.minutes, "wall time per problem")->check(CLI::NonNegativeNumber);
    bench_run->add_option("--in-flight", b.in_flight, "with a model: each problem's children in the making at once; with --provider manual, the prompts that wait at once per problem (one GPU round measures them all)")->check(CLI::PositiveNumber);
    bench_run->add_option("--search", b.search, "mcts (default), greedy or beam");
    bench_run->add_option("--feedback", b.feedback, "with a model: what the planner and coder see of each candidate's profile: tools (default), raw-metrics or none");
    bench_run->add_option("--objective", b.objective, "time (default), energy, edp or energy-at-matched-time");
    bench_run->add_option("--provider", b.provider, "openai, anthropic, command or manual: a model writes the candidates (needed for KernelBench); manual leaves every problem waiting at its prompts (kernelpro bench prompts lists them)");
    bench_run->add_option("--model", b.model, "the model's name at the provider");
    bench_run->add_option("--config", b.config, "TOML file with an [llm] table");
    bench_run->add_option("--base-url", b.base_url, "the API's base URL");
    bench_run->add_option("--command", b.command, "provider command: the model's command line, split at spaces (no quoting); it reads the prompt on stdin and writes the reply on stdout, e.g. \"claude -p\", \"codex exec\", \"gemini -p\", \"llm -m gpt-4.1\", \"ollama run qwen2.5-coder\"");
    bench_run->add_option("--max-cost", b.max_cost, "US dollars of LLM calls per problem")->check(CLI::NonNegativeNumber);
    bench_run->add_option("--timeout", b.timeout_s, "seconds before a hanging evaluation is killed")->check(CLI::PositiveNumber);
    bench_run->add_option("--python", b.python, "KernelBench: Python with PyTorch for the worker");
    bench_run->add_option("--slurm", b.slurm, "submit a Slurm job array (one task per unfinished problem) with these sbatch options, split at spaces (no quoting), e.g. \"--partition=gpu --time=2:00:00\"")->expected(0, 1);
    bench_run->add_option("--gpus-per-task", b.gpus_per_task, "--slurm: GPUs per array task (default 1; 0: ask for none)")->check(CLI::NonNegativeNumber);
    bench_run->add_option("--sbatch", b.sbatch, "the sbatch binary")->default_val("sbatch");
    bench_run->add_option("--squeue", b.squeue, "the squeue binary (a resubmission skips the problems an earlier array still holds)")->default_val("squeue");
    bench_run->add_option("--worker", common.worker, "kp-worker binary (default: beside kernelpro)");
    bench_run->add_option("--nvcc", common.nvcc, "nvcc to use")->default_val("nvcc");
    bench_run->add_option("--arch", common.arch, "target architecture");
    bench_run->add_option("--cutlass", common.cutlass, "CUTLASS checkout for CuTe candidates");
    bench_run->add_flag("--json", common.json, "print the summary as JSON");
  }
  bench_status = bench->add_subcommand("status", "the campaign's ledger: done, running, pending, failed; its Slurm jobs");
  bench_status->add_option("campaign", bench_flags.campaign, "the campaign folder")->required();
  bench_status->add_option("--squeue", bench_flags.squeue, "the squeue binary")->default_val("squeue");
  bench_status->add_option("--sacct", bench_flags.sacct, "the sacct binary")->default_val("sacct");
  bench_status->add_flag("--json", common.json, "print JSON");
  bench_prompts = bench->add_subcommand("prompts", "with --provider manual: every prompt that waits for its answer, and where the answer goes");
  bench_prompts->add_option("campaign", bench_flags.campaign, "the campaign folder")->required();
  bench_prompts->add_flag("--json", common.json, "print JSON: one object per prompt (problem, purpose, prompt, answer)");
  bench_report = bench->add_subcommand("report", "the campaign's numbers: fast_p, geomean speedups, per problem; JSON, CSV, HTML");
  bench_report->add_option("campaign", bench_flags.campaign, "the campaign folder")->required();
  bench_report->add_option("--html", bench_flags.html, "write the page here (one self-contained file)");
  bench_report->add_option("--csv", bench_flags.csv, "write one line per problem here");
  bench_report->add_option("--baselines", bench_flags.baselines, "more folders with a kernelpro_baseline.json (e.g. bench/baselines/h200)")->delimiter(',');
  bench_report->add_flag("--json", common.json, "print JSON instead of the tables");
}

void Commands::add_report(CLI::App& app) {
  report = app.add_subcommand("report", "one run's page: its best candidate, search tree and diagnosis");
  report->add_option("run_dir", report_dir, "an optimize run folder (with store.db)")->required();
  report->add_option("--html", report_html, "write the page here");
  report->add_flag("--json", common.json, "print JSON");
}

void Commands::add_mcp(CLI::App& app) {
  mcp = app.add_subcommand("mcp", "serve kernelpro's tools to coding agents: an MCP server on stdin/stdout");
  mcp->add_option("--workspace", mcp_workspace, "where candidates given as text and optimize runs go (default: ./kernelpro-mcp)");
  mcp->add_option("--allow", mcp_allow, "more folders whose tasks and candidates the agent may name (besides the workspace and kernelpro's examples/)")->delimiter(',');
}

void Commands::add_doctor(CLI::App& app) {
  doctor = app.add_subcommand("doctor", "is this machine ready? GPU, driver, nvcc, ncu, NVML, counters, CUTLASS");
  add_common(doctor);
}

int Commands::run() {
  if (*eval) return kp::cli::run_eval(eval_flags, common);
  if (*profile) {
    if (!profile_flags.families.empty()) profile_flags.stage = 2;
    return kp::cli::run_profile(profile_flags, common);
  }
  if (*analyze) {
    if (analyze_flags.profile.eval.task.empty() && !analyze_flags.list_tools && analyze_flags.evidence.empty()) {
      std::fprintf(stderr,
                   "kernelpro analyze: name a task (a folder, or a KernelBench problem .py), or --evidence FILE, or "
                   "--list-tools\n");
      return 2;
    }
    return kp::cli::run_analyze(analyze_flags, common);
  }
  if (*classify) return kp::cli::run_classify(classify_flags, common);
  if (*generate) return kp::cli::run_generate(generate_flags, common);
  if (*optimize) return kp::cli::run_optimize(optimize_flags, common);
  if (*build) return kp::cli::run_build(build_flags, common);
  if (*doctor) return kp::cli::run_doctor(common);
  if (*cutlass) {
    if (cutlass_flags.action != "index" && cutlass_flags.action != "ls" && cutlass_flags.words.empty()) {
      std::fprintf(stderr, "kernelpro cutlass %s: %s\n", cutlass_flags.action.c_str(),
                   cutlass_flags.action == "search" ? "give a query, e.g. kernelpro cutlass search TMA load"
                                                    : "give PATH:START-END, e.g. include/cute/tensor.hpp:1-40");
      return 2;
    }
    return kp::cli::run_cutlass(cutlass_flags, common);
  }
  if (*calibrate) return kp::cli::run_calibrate(calibrate_flags, common);
  if (*baseline) return kp::cli::run_baseline(baseline_flags);
  if (*bench_run) {
    bench_flags.slurm_flag = bench_run->count("--slurm") > 0;
    return kp::cli::run_bench_run(bench_flags, common);
  }
  if (*bench_status) return kp::cli::run_bench_status(bench_flags, common);
  if (*bench_report) return kp::cli::run_bench_report(bench_flags, common);
  if (*bench_prompts) return kp::cli::run_bench_prompts(bench_flags, common);
  if (*report) return kp::cli::run_run_report(report_dir, report_html, common);
  if (*mcp) return kp::cli::run_mcp(mcp_workspace, mcp_allow);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  stop_with_campaign();
  // Every worker this process starts, directly or under ncu, exits when this process does
  // (worker/orphan_watch.h).
  setenv(kp::eval::kOrchestratorPidEnv, std::to_string(getpid()).c_str(), 1);
  CLI::App app{"kernelpro: build, verify, time and measure GPU kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kernelpro ") + KP_VERSION);
  Commands commands;
  commands.add_to(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return commands.run();
  } catch (const std::exception& e) {
    // Operational errors are Results; what arrives here is unexpected (a std::filesystem
    // error, bad_alloc): say what it was rather than abort.
    std::fprintf(stderr, "kernelpro: internal error: %s\n", e.what());
    return 4;
  }
}
