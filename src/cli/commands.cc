#include "cli/commands.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "driver/baseline.h"
#include "eval/evaluator.h"
#include "report/eval_report.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "task/kernelbench_loader.h"
#include "task/native_task_loader.h"
#include "util/strings.h"

namespace kp::cli {

namespace fs = std::filesystem;

namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitBadInput = 2, kExitNotRun = 3, kExitInternal = 4;

int exit_for(const Error& e) {
  std::fprintf(stderr, "kernelpro: %s\n", e.message.c_str());
  switch (e.code) {
    case ErrorCode::kInvalidInput: case ErrorCode::kNotFound: return kExitBadInput;
    case ErrorCode::kUnavailable: return kExitNotRun;
    default: return kExitInternal;
  }
}

fs::path self_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

fs::path default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "kernelpro" / "build";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kernelpro" / "build";
  return fs::temp_directory_path() / "kernelpro-build-cache";
}

build::BuildOptions build_options(const CommonFlags& c) {
  build::BuildOptions b;
  b.nvcc = c.nvcc;
  b.arch = c.arch;
  b.cache_dir = c.cache_dir.empty() ? default_cache_dir() : fs::path(c.cache_dir);
  // The ABI header: installed beside the binary's source tree.
  b.include_dir = fs::path(KP_SOURCE_DIR) / "include";
  return b;
}

// A scratch directory for workers; kept (and named on stderr) when asked.
Result<sys::TempDir> make_scratch(const char* prefix, bool keep) {
  KP_TRY(sys::TempDir dir, sys::TempDir::create(prefix));
  if (keep) {
    dir.keep();
    std::fprintf(stderr, "kernelpro: scratch directory %s\n", dir.path().c_str());
  }
  return dir;
}

Result<fs::path> candidate_path(const task::Task& t, const std::string& given) {
  if (!given.empty()) return fs::path(given);
  if (t.seed_path) return *t.seed_path;
  return make_error(ErrorCode::kInvalidInput,
                    fmt::format("task {} has no seed.cu; name a candidate: kernelpro eval {} CANDIDATE.cu", t.name, t.dir.string()));
}

bool is_kernelbench_path(const std::string& path) { return fs::path(path).extension() == ".py"; }

// The Python interpreter for the KernelBench worker: --python, else $KERNELPRO_PYTHON, else python3.
std::string resolve_python(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* p = std::getenv("KERNELPRO_PYTHON"); p && *p) return p;
  return "python3";
}

// `python -m kernelpro_torch.worker` with the source tree's python/ first on PYTHONPATH.
eval::WorkerOptions python_worker_options(const std::string& python, const fs::path& scratch) {
  eval::WorkerOptions w;
  w.argv = {python, "-m", "kernelpro_torch.worker"};
  std::string path = (fs::path(KP_SOURCE_DIR) / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
  w.env = {{"PYTHONPATH", path}};
  w.scratch_dir = scratch;
  return w;
}

// A word as a POSIX shell reads it back: as is when it is plain, else in single quotes.
std::string shell_quote(const std::string& word) {
  bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789_-+=./,:@%") == std::string::npos;
  if (plain) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The options both kinds of evaluation take from the flags; trials and timeout by task kind.
eval::EvalOptions eval_options(const EvalFlags& flags, int default_trials, double default_timeout_s) {
  eval::EvalOptions e = flags.options;
  e.correctness_trials = flags.trials.value_or(default_trials);
  e.timeout_s = flags.timeout_s.value_or(default_timeout_s);
  e.seed = flags.seed;
  if (flags.no_energy) e.energy_window_s = 0;
  return e;
}

// Prints the verdict (JSON or text, with `not_run_note` after a not-run text verdict) and
// returns the exit code.
int print_verdict(const task::Task& task, const eval::EvalResult& result, bool json, const std::string& not_run_note) {
  if (json) {
    std::cout << report::eval_to_json(task, result).dump(2) << "\n";
  } else {
    std::cout << report::format_eval_text(task, result);
    if (result.outcome == eval::Outcome::kNotRun) std::cout << not_run_note;
  }
  if (result.outcome == eval::Outcome::kOk) return kExitOk;
  if (result.outcome == eval::Outcome::kNotRun) return kExitNotRun;
  return kExitFailed;
}

int run_kernelbench_eval(const EvalFlags& flags, const CommonFlags& common) {
  auto task = task::load_kernelbench_problem(flags.task);
  if (!task.ok()) return exit_for(task.error());
  if (flags.candidate.empty())
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("{} is a KernelBench problem: name the candidate to evaluate, a .py defining "
                                           "ModelNew: kernelpro eval {} CANDIDATE.py [--cu CANDIDATE.cu]",
                                           flags.task, flags.task)));
  auto scratch = make_scratch("kernelpro-eval-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  std::string python = resolve_python(flags.python);
  eval::EvaluatorOptions o;
  o.build = build_options(common);
  o.eval = eval_options(flags, 5, 600);
  o.worker = python_worker_options(python, scratch->path());
  eval::Evaluator evaluator(o);
  auto result = evaluator.evaluate(*task, flags.candidate, flags.cu);
  if (!result.ok()) return exit_for(result.error());
  return print_verdict(*task, *result, common.json,
                       fmt::format("\nNot run: KernelBench candidates run in `{} -m kernelpro_torch.worker`, which needs "
                                   "an NVIDIA GPU and PyTorch with CUDA;{}\nrun the same command on a GPU machine "
                                   "(--python picks the interpreter).\n",
                                   python,
                                   result->form == eval::CandidateForm::kPrebuilt
                                       ? " the candidate's .cu was built and its resources are shown above;"
                                       : ""));
}

}  // namespace

int run_eval(const EvalFlags& flags, const CommonFlags& common) {
  if (is_kernelbench_path(flags.task)) return run_kernelbench_eval(flags, common);
  if (!flags.cu.empty())
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("--cu applies to KernelBench problems (a .py task); {} is a native task, whose "
                                           "candidate is itself the .cu",
                                           flags.task)));
  auto task = task::load_native_task(flags.task);
  if (!task.ok()) return exit_for(task.error());
  auto cand = candidate_path(*task, flags.candidate);
  if (!cand.ok()) return exit_for(cand.error());
  auto scratch = make_scratch("kernelpro-eval-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  eval::EvaluatorOptions o;
  o.build = build_options(common);
  o.eval = eval_options(flags, 3, 120);
  o.worker.worker_path = common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker);
  o.worker.scratch_dir = scratch->path();
  eval::Evaluator evaluator(o);
  auto result = evaluator.evaluate(*task, *cand);
  if (!result.ok()) return exit_for(result.error());
  return print_verdict(*task, *result, common.json,
                       "\nNo GPU here: kernelpro built the reference and the candidate and reported their resources "
                       "above;\ncorrectness, timing and energy need an NVIDIA GPU. Run the same command on a GPU machine.\n");
}

int run_build(const BuildFlags& flags, const CommonFlags& common) {
  auto task = task::load_native_task(flags.task);
  if (!task.ok()) return exit_for(task.error());
  auto cand = candidate_path(*task, flags.candidate);
  if (!cand.ok()) return exit_for(cand.error());
  build::Builder builder(build_options(common));
  auto r = builder.build(build::BuildRequest{*cand, task->candidate_libraries, {}});
  if (!r.ok()) return exit_for(r.error());
  eval::EvalResult er;
  er.task_name = task->name;
  er.candidate = *cand;
  er.candidate_build = *r;
  er.outcome = r->ok ? eval::Outcome::kNotRun : eval::Outcome::kCompileError;
  er.reason = r->ok ? std::string("built only (kernelpro build)") : build::summarize_diagnostics(r->diagnostics, 5);
  er.build_seconds = er.total_seconds = r->seconds;
  if (common.json) std::cout << report::eval_to_json(*task, er).dump(2) << "\n";
  else std::cout << report::format_eval_text(*task, er);
  return r->ok ? kExitOk : kExitFailed;
}

int run_doctor(const CommonFlags& common) {
  int problems = 0;
  auto line = [&](bool ok, const std::string& what, const std::string& detail, const std::string& fix) {
    std::printf("%-6s %-10s %s\n", ok ? "ok" : "MISSING", what.c_str(), detail.c_str());
    if (!ok) {
      std::printf("       %-10s fix: %s\n", "", fix.c_str());
      ++problems;
    }
  };
  auto probe = [](std::vector<std::string> argv) -> std::optional<std::string> {
    sys::Command c;
    c.argv = std::move(argv);
    c.timeout = std::chrono::milliseconds(30000);
    auto r = sys::run(c);
    if (!r.ok() || !r->success()) return std::nullopt;
    auto lines = split_lines(r->stdout_text);
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (!trim(*it).empty()) return std::string(trim(*it));
    return std::string();
  };

  auto nvcc = probe({common.nvcc, "--version"});
  line(nvcc.has_value(), "nvcc", nvcc.value_or("not found"), "install the CUDA toolkit (12.4+) and put nvcc on PATH, or pass --nvcc");

  auto scratch = sys::TempDir::create("kernelpro-doctor-");
  eval::WorkerOptions wo;
  wo.worker_path = common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker);
  wo.scratch_dir = scratch.ok() ? scratch->path() : fs::temp_directory_path();
  eval::WorkerClient worker(wo);
  auto dev = worker.device();
  if (dev.ok()) {
    line(true, "gpu", fmt::format("{} (compute {}.{}, {} SMs, {} L2, {})", dev->name, dev->cc_major, dev->cc_minor,
                                  dev->sm_count, format_bytes(static_cast<double>(dev->l2_bytes)),
                                  format_bytes(static_cast<double>(dev->memory_bytes))),
         "");
    line(true, "driver", fmt::format("CUDA driver API {}.{}, runtime {}.{}", dev->driver_version / 1000,
                                     (dev->driver_version % 1000) / 10, dev->runtime_version / 1000,
                                     (dev->runtime_version % 1000) / 10),
         "");
    line(dev->nvml, "nvml", dev->nvml ? "energy counter readable" : dev->nvml_error,
         "energy needs libnvidia-ml.so.1 from the NVIDIA driver; without it evaluations report no energy");
  } else {
    line(false, "gpu", dev.error().message, "run on a machine with an NVIDIA GPU and driver; without one, eval builds and reports resources only");
  }
  worker.stop();

  std::string python = resolve_python("");
  auto torch = probe({python, "-c", "import torch; print(torch.__version__, 'with CUDA' if torch.cuda.is_available() else 'without a CUDA device')"});
  line(torch.has_value(), "torch", torch ? fmt::format("{} ({})", *torch, python) : fmt::format("not importable by {}", python),
       "pip install torch (KernelBench problems and `kernelpro baseline` need it), or set KERNELPRO_PYTHON to a Python that has it");

  auto ncu = probe({"ncu", "--version"});
  line(ncu.has_value(), "ncu", ncu.value_or("not found"),
       "install Nsight Compute (ships with the CUDA toolkit) for kernel-level profiles; eval does not need it");
  auto params = read_file("/proc/driver/nvidia/params");
  if (params.ok()) {
    bool admin_only = params->find("RmProfilingAdminOnly: 1") != std::string::npos;
    bool root = geteuid() == 0;
    line(!admin_only || root, "counters",
         admin_only ? (root ? "restricted to admin users; running as root" : "restricted to admin users (ERR_NVGPUCTRPERM)")
                    : "open to all users",
         "run as root, or set NVreg_RestrictProfilingToAdminUsers=0 for the nvidia module");
  } else {
    line(false, "counters", "cannot read /proc/driver/nvidia/params (no NVIDIA driver)", "install the NVIDIA driver");
  }

  std::string cutlass;
  if (const char* p = std::getenv("CUTLASS_PATH"); p && fs::exists(fs::path(p) / "include" / "cute")) cutlass = p;
  if (cutlass.empty()) {
    auto py = probe({"python3", "-c", "import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), 'source'))"});
    if (py && fs::exists(fs::path(*py) / "include" / "cute")) cutlass = *py;
  }
  line(!cutlass.empty(), "cutlass", cutlass.empty() ? "not found" : cutlass,
       "pip install nvidia-cutlass, or set CUTLASS_PATH to a CUTLASS checkout (needed for CuTe candidates only)");
  std::printf("\n%s\n", problems == 0 ? "ready" : fmt::format("{} item(s) missing; see the fixes above", problems).c_str());
  return dev.ok() && nvcc ? kExitOk : (nvcc ? kExitNotRun : kExitInternal);
}

int run_baseline(const BaselineFlags& flags) {
  auto scratch = make_scratch("kernelpro-baseline-", flags.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  driver::BaselineOptions o;
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
  o.retry_failed = flags.retry_failed ? driver::RetryFailed::kYes : driver::RetryFailed::kNo;
  o.prewarm_jobs = flags.prewarm_jobs;
  o.worker = python_worker_options(resolve_python(flags.python), scratch->path());
  auto run = driver::run_baseline(o, [](const std::string& line) { std::cout << line << std::endl; });
  if (!run.ok()) return exit_for(run.error());
  std::cout << fmt::format("\n{} problem(s) measured in this run ({} with a failure, recorded), {} already recorded; "
                           "results in {}\n",
                           run->attempted, run->failed, run->already_recorded, run->out_dir.string());
  for (const auto& s : run->summary) std::cout << driver::format_level_summary(s) << "\n";
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
