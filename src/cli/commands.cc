#include "cli/commands.h"

#include "cli/cli_support.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "driver/baseline.h"
#include "analysis/rule_tool.h"
#include "driver/analyze_session.h"
#include "driver/generate_session.h"
#include "driver/model_search.h"
#include "agent/agents.h"
#include "llm/llm_config.h"
#include "build/builder.h"
#include "build/diagnostics.h"
#include "codesearch/index.h"
#include "driver/profile_session.h"
#include "profile/calibration.h"
#include "profile/ncu/ncu_runner.h"
#include "profile/sass/cuobjdump.h"
#include "report/analyze_report.h"
#include "report/profile_report.h"
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

  profile::NcuOptions ncu_options;
  auto ncu_path = profile::find_ncu(ncu_options);
  auto ncu = ncu_path.ok() ? profile::ncu_version(*ncu_path) : Result<std::string>(ncu_path.error());
  line(ncu.ok(), "ncu", ncu.ok() ? fmt::format("{} ({})", *ncu, ncu_path->string()) : ncu.error().message,
       "install Nsight Compute (ships with the CUDA toolkit): `profile --collector ncu` and --compare-ncu need it; the "
       "default in-process collector does not");
  profile::SassToolOptions sass_options;
  sass_options.search_dirs = {fs::path(KP_SOURCE_DIR) / ".kp-tools" / "python"};
  auto cuobjdump = profile::find_cuobjdump(sass_options);
  line(cuobjdump.ok(), "cuobjdump", cuobjdump.ok() ? cuobjdump->string() : cuobjdump.error().message,
       "bash scripts/setup.sh installs the nvidia-cuda-cuobjdump wheel; `profile` needs it for the SASS level");
  fs::path worker_dir = (common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker)).parent_path();
  for (auto [label, lib] : {std::pair{"rangeprof", "libkp_rangeprof.so"}, std::pair{"trace", "libkp_trace.so"}})
    line(fs::exists(worker_dir / lib), label, (worker_dir / lib).string(),
         "build it (cmake --build build); `profile` needs it for in-process counters and the system trace");
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

  auto cutlass = locate_cutlass(common);
  line(cutlass.ok(), "cutlass",
       cutlass.ok() ? fmt::format("{} at {} ({})", cutlass->version.empty() ? "version unknown" : cutlass->version,
                                  cutlass->root.string(), cutlass->found_by)
                    : cutlass.error().message,
       "run scripts/setup.sh (installs nvidia-cutlass), pass --cutlass DIR, or set CUTLASS_PATH to a CUTLASS "
       "checkout (needed for CuTe candidates and `kernelpro cutlass` only)");
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

namespace kp::cli {

// What `profile` and `analyze` share: the task, the candidate, the scratch folder and the
// session's options. Errors are returned for exit_for.
struct ProfileSetup {
  task::Task task;
  fs::path candidate;
  std::optional<sys::TempDir> scratch;
  std::unique_ptr<profile::CalibrationStore> store;
  driver::ProfileSessionOptions options;
};

Result<std::unique_ptr<ProfileSetup>> profile_setup(const ProfileFlags& flags, const CommonFlags& common,
                                                    const char* command) {
  auto setup = std::make_unique<ProfileSetup>();
  const bool kernelbench = is_kernelbench_path(flags.eval.task);
  auto task = kernelbench ? task::load_kernelbench_problem(flags.eval.task) : task::load_native_task(flags.eval.task);
  if (!task.ok()) return task.error();
  fs::path cand;
  if (kernelbench) {
    if (flags.eval.candidate.empty())
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("{} is a KernelBench problem: name the candidate .py: kernelpro {} {} "
                                    "CANDIDATE.py [--cu CANDIDATE.cu]",
                                    flags.eval.task, command, flags.eval.task));
    cand = flags.eval.candidate;
  } else {
    auto c = candidate_path(*task, flags.eval.candidate);
    if (!c.ok()) return c.error();
    cand = *c;
  }
  auto collector = profile::collector_from_string(flags.collector);
  if (!collector)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("--collector {}: expected cupti (in the worker, the default) or ncu", flags.collector));
  if (flags.stage != 1 && flags.stage != 2)
    return make_error(ErrorCode::kInvalidInput, fmt::format("--stage {}: expected 1 or 2", flags.stage));
  const std::string prefix = fmt::format("kernelpro-{}-", command);
  auto scratch = make_scratch(prefix.c_str(), common.keep_scratch);
  if (!scratch.ok()) return scratch.error();

  driver::ProfileSessionOptions& o = setup->options;
  o.evaluator.build = build_options(common);
  o.evaluator.eval = eval_options(flags.eval, kernelbench ? 5 : 3, kernelbench ? 600 : 120);
  fs::path worker = common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker);
  std::string python = resolve_python(flags.eval.python);
  if (kernelbench) {
    o.evaluator.worker = python_worker_options(python, scratch->path());
    o.profiler.once_argv = o.evaluator.worker.argv;
    o.profiler.once_env = o.evaluator.worker.env;
  } else {
    o.evaluator.worker.worker_path = worker;
    o.evaluator.worker.scratch_dir = scratch->path();
    o.profiler.once_argv = {fs::absolute(worker).string()};
  }
  o.profiler.rangeprof_library = worker.parent_path() / "libkp_rangeprof.so";
  o.profiler.trace_library = worker.parent_path() / "libkp_trace.so";
  o.profiler.scratch_dir = scratch->path();
  o.profiler.timeout_s = o.evaluator.eval.timeout_s;
  o.profiler.replay = flags.replay;
  o.profiler.ncu.ncu = flags.ncu;
  o.profiler.sass.cuobjdump = flags.cuobjdump;
  o.profiler.sass.search_dirs = {fs::path(KP_SOURCE_DIR) / ".kp-tools" / "python"};
  o.collector = *collector;
  o.stage = flags.stage;
  o.families = flags.families;
  o.extra_metrics = flags.metrics;
  if (!flags.stage1_file.empty()) {
    auto text = read_file(flags.stage1_file);
    if (!text.ok()) return text.error();
    for (const auto& line : split_lines(*text)) {
      std::string_view name = trim(line);
      if (!name.empty() && name[0] != '#') o.stage1_override.emplace_back(name);
    }
    if (o.stage1_override.empty())
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("--stage1-metrics {}: no metric names in it (one a line, # for comments)", flags.stage1_file));
  }
  o.trace = !flags.no_trace;
  o.sass = !flags.no_sass;
  o.compare_ncu = flags.compare_ncu;
  setup->store = std::make_unique<profile::CalibrationStore>(calibration_dir(flags.calibration_dir));
  profile::CalibrationStore* store = setup->store.get();
  o.ceilings_for = [store](const eval::DeviceInfo& dev, std::string* warning) {
    return profile::resolve_ceilings(*store, dev, warning);
  };
  setup->task = std::move(*task);
  setup->candidate = cand;
  setup->scratch.emplace(std::move(*scratch));
  return setup;
}

int run_profile(const ProfileFlags& flags, const CommonFlags& common) {
  auto setup = profile_setup(flags, common, "profile");
  if (!setup.ok()) return exit_for(setup.error());
  const task::Task* task = &(*setup)->task;
  const fs::path& cand = (*setup)->candidate;
  const driver::ProfileSessionOptions& o = (*setup)->options;
  auto page = driver::run_profile(*task, cand, flags.eval.cu, o, [&](const std::string& line) {
    if (!common.json) std::fprintf(stderr, "kernelpro: %s\n", line.c_str());
  });
  if (!page.ok()) return exit_for(page.error());
  if (common.json) std::cout << report::profile_to_json(*task, *page).dump(2) << "\n";
  else std::cout << report::format_profile_text(*task, *page);
  if (page->eval.outcome == eval::Outcome::kNotRun) {
    if (!common.json)
      std::cout << "\nNo GPU here: profiling needs an NVIDIA GPU (counters, trace); run the same command on a GPU machine.\n";
    return kExitNotRun;
  }
  return page->eval.outcome == eval::Outcome::kOk ? kExitOk : kExitFailed;
}

int run_analyze(const AnalyzeFlags& flags, const CommonFlags& common) {
  driver::AnalyzeOptions ao;
  ao.tools = flags.tools;
  if (!flags.no_rules) ao.rule_dirs = analysis::default_rule_dirs();
  for (const auto& r : flags.rules) ao.rule_dirs.emplace_back(r);
  ao.stage2 = !flags.no_stage2;
  ao.feedback.max_points = static_cast<size_t>(std::max(1, flags.max_points));
  if (flags.list_tools) {
    auto page = driver::list_tools(ao.rule_dirs);
    if (!page.ok()) return exit_for(page.error());
    std::cout << (common.json ? page->dump(2) + "\n" : report::format_tool_list(*page));
    return kExitOk;
  }
  ao.stage2_all = flags.stage2_all;
  if (!flags.evidence.empty()) {
    if (!flags.profile.eval.task.empty())
      return exit_for(make_error(ErrorCode::kInvalidInput,
                                 fmt::format("--evidence {} replaces TASK and CANDIDATE ({} was given too); drop one",
                                             flags.evidence, flags.profile.eval.task)));
    auto text = read_file(flags.evidence);
    if (!text.ok()) return exit_for(text.error());
    nlohmann::json file = nlohmann::json::parse(*text, nullptr, false);
    if (file.is_discarded())
      return exit_for(make_error(ErrorCode::kInvalidInput,
                                 fmt::format("--evidence {}: not JSON; write it with `kernelpro analyze TASK CANDIDATE "
                                             "--save-evidence FILE`",
                                             flags.evidence)));
    task::Task task;
    auto page = driver::replay_analyze(file, ao, &task);
    if (!page.ok()) return exit_for(Error{page.error().code, flags.evidence + ": " + page.error().message});
    page->profile.notes.push_back(fmt::format("evidence replayed from {} (recorded on {})", flags.evidence,
                                              file.value("recorded_on", std::string("an unnamed GPU"))));
    if (common.json) std::cout << report::analyze_to_json(task, *page).dump(2) << "\n";
    else std::cout << report::format_analyze_text(task, *page);
    return kExitOk;
  }
  auto setup = profile_setup(flags.profile, common, "analyze");
  if (!setup.ok()) return exit_for(setup.error());
  ao.profile = (*setup)->options;
  const task::Task& task = (*setup)->task;
  auto page = driver::run_analyze(task, (*setup)->candidate, flags.profile.eval.cu, ao, [&](const std::string& line) {
    if (!common.json) std::fprintf(stderr, "kernelpro: %s\n", line.c_str());
  });
  if (!page.ok()) return exit_for(page.error());
  if (!flags.save_evidence.empty() && page->profile.eval.outcome == eval::Outcome::kOk) {
    auto saved = write_file(flags.save_evidence, driver::evidence_file(task, *page).dump(1) + "\n");
    if (!saved.ok()) return exit_for(saved.error());
  } else if (!flags.save_evidence.empty()) {
    page->profile.notes.push_back(fmt::format("--save-evidence {}: not written, the candidate did not run to the end "
                                              "(outcome {})",
                                              flags.save_evidence, eval::to_string(page->profile.eval.outcome)));
  }
  if (common.json) std::cout << report::analyze_to_json(task, *page).dump(2) << "\n";
  else std::cout << report::format_analyze_text(task, *page);
  if (page->profile.eval.outcome == eval::Outcome::kNotRun) {
    if (!common.json)
      std::cout << "\nNo GPU here: the counters and the trace need an NVIDIA GPU; the findings above come from the "
                   "SASS and ptxas alone. Run the same command on a GPU machine for the full diagnosis.\n";
    return kExitNotRun;
  }
  return page->profile.eval.outcome == eval::Outcome::kOk ? kExitOk : kExitFailed;
}

}  // namespace kp::cli

// ---- generate --------------------------------------------------------------------------------

namespace kp::cli {

namespace {

// A candidate's analysis as the prompts get it: the measured lines, then the feedback text of
// `kernelpro analyze` (with `extra_tools` run too), and the tools that made it. An error when
// it did not pass the check. reference_seed: a KernelBench reference profiled as the seed.
Result<driver::Analysis> analyze_feedback(const std::string& task_path, const fs::path& candidate, const fs::path& cu,
                                          const std::vector<std::string>& extra_tools, bool reference_seed,
                                          const CommonFlags& common, const EvalFlags& eval) {
  ProfileFlags pf;
  pf.eval = eval;
  pf.eval.task = task_path;
  pf.eval.candidate = candidate.string();
  pf.eval.cu = cu.string();
  auto setup = profile_setup(pf, common, "generate");
  if (!setup.ok()) return setup.error();
  driver::AnalyzeOptions ao;
  ao.rule_dirs = analysis::default_rule_dirs();
  ao.profile = (*setup)->options;
  ao.profile.evaluator.eval.library_only_ok = reference_seed;  // the problem's own PyTorch code, profiled
  ao.extra_tools = extra_tools;
  auto page = driver::run_analyze((*setup)->task, (*setup)->candidate, cu, ao);
  if (!page.ok()) return page.error();
  if (page->profile.eval.outcome != eval::Outcome::kOk)
    return make_error(ErrorCode::kInvalidInput, fmt::format("it did not pass the check ({}): {}",
                                                            eval::to_string(page->profile.eval.outcome),
                                                            page->profile.eval.reason));
  driver::Analysis a{driver::measured_summary(*page) + page->feedback.text, page->tools_run, "",
                     driver::measured_summary(*page) + driver::raw_metrics_text(*page)};
  if (page->profile.roofline) a.bottleneck_class = analysis::to_string(page->profile.roofline->cls);
  return a;
}

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
};

Result<std::unique_ptr<ModelSetup>> model_setup(const ModelFlags& flags, const fs::path& run_dir,
                                                const std::string& resume_hint, const llm::Budget* budget) {
  auto m = std::make_unique<ModelSetup>();
  llm::LlmConfig& config = m->config;
  if (!flags.config.empty()) {
    KP_TRY(std::string text, read_file(flags.config));
    KP_TRY(config, llm::parse_llm_config(text, flags.config));
  }
  if (!flags.provider.empty()) config.provider = flags.provider;
  if (!flags.model.empty()) config.model = flags.model;
  if (!flags.base_url.empty()) config.base_url = flags.base_url;
  if (config.provider != "openai" && config.provider != "anthropic" && config.provider != "command" &&
      config.provider != "manual")
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("--provider {}: expected openai, anthropic, command or manual", config.provider));
  if (config.model.empty()) {
    if (config.provider == "openai" || config.provider == "anthropic")
      return make_error(ErrorCode::kInvalidInput, "no model named: pass --model or set model in the [llm] table of --config");
    config.model = config.provider;
  }
  std::string api_key;
  const std::string key_env = config.api_key_env.empty() ? llm::default_api_key_env(config.provider) : config.api_key_env;
  if (!key_env.empty())
    if (const char* k = std::getenv(key_env.c_str())) api_key = k;
  if (api_key.empty() && (config.provider == "openai" || config.provider == "anthropic") && config.base_url.empty())
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("${} is not set: export the API key for {}, or point --base-url at a local server that "
                                  "needs none",
                                  key_env, config.provider));
  m->transport = llm::make_curl_transport();
  llm::ProviderContext ctx;
  ctx.api_key = api_key;
  ctx.transport = m->transport.get();
  ctx.manual_dir = (run_dir / "manual").string();
  ctx.resume_hint = resume_hint + (flags.config.empty() ? " --provider " + config.provider : " --config " + flags.config);
  if (!flags.model.empty()) ctx.resume_hint += " --model " + flags.model;
  if (!flags.base_url.empty()) ctx.resume_hint += " --base-url " + flags.base_url;
  m->resume_hint = ctx.resume_hint;
  Error perr;
  m->provider = llm::make_provider(config, ctx, &perr);
  if (!m->provider) return perr;
  llm::ClientOptions copts = config.client;
  copts.cache_dir = (run_dir / "llm-cache").string();
  if (budget) {
    if (budget->max_calls > 0) copts.budget.max_calls = budget->max_calls;
    if (budget->max_tokens > 0) copts.budget.max_tokens = budget->max_tokens;
    if (budget->max_cost_usd > 0) copts.budget.max_cost_usd = budget->max_cost_usd;
  }
  m->client = std::make_unique<llm::LlmClient>(*m->provider, copts);
  KP_TRY(m->prompts, agent::PromptLibrary::load(
                         flags.prompts.empty() ? (fs::path(KP_SOURCE_DIR) / "prompts").string() : flags.prompts));
  m->options.tools = !flags.no_tools && (config.provider == "openai" || config.provider == "anthropic");
  m->options.max_tokens = config.max_tokens;
  m->options.temperature = config.temperature;
  m->options.stream = config.stream;
  m->agents = std::make_unique<agent::Agents>(*m->client, *m->prompts, config.model, m->options);
  return m;
}

// Every LLM call, for the record (no credentials: they are not in the records).
void write_call_log(const llm::LlmClient& client, const fs::path& file) {
  std::string calls;
  for (const auto& r : client.records())
    calls += nlohmann::json{{"provider", r.provider}, {"endpoint", r.endpoint}, {"model", r.model}, {"request", r.request},
                            {"reply", r.reply}, {"error", r.error}, {"input_tokens", r.usage.input_tokens},
                            {"output_tokens", r.usage.output_tokens}, {"cost_usd", r.cost_usd}, {"priced", r.priced},
                            {"latency_s", r.latency_s}, {"attempts", r.attempts}, {"cached", r.cached}}
                 .dump() +
             "\n";
  (void)write_file(file.string(), calls);
}

// A KernelBench problem has no seed: its reference, as a candidate, is profiled in its place, so
// that the analyst, planner and coder see which kernels torch runs for it and what bounds them.
Status reference_as_seed(task::Task& task, const fs::path& run_dir) {
  const fs::path seed = run_dir / "reference_as_candidate.py";
  KP_TRY(std::string problem, read_file(task.reference_path.string()));
  KP_TRY_STATUS(write_file(seed.string(), problem + "\n\n# kernelpro: the reference as a candidate, profiled as the seed.\n"
                                                    "class ModelNew(Model):\n    pass\n"));
  task.seed_path = seed;
  return ok_status();
}

// The GPU in words for the prompts, or what stands in for it on a machine without one.
std::optional<std::string> gpu_words(eval::Evaluator& evaluator) {
  auto dev = evaluator.device();
  if (!dev.ok()) return std::nullopt;
  return fmt::format("{} (sm_{}{}, {} SMs, {:.0f} GiB)", dev->name, dev->cc_major, dev->cc_minor, dev->sm_count,
                     dev->memory_bytes / 1073741824.0);
}

// The coder's CUTLASS/CuTe tools, when a CUTLASS is found: search (the index is brought up to
// date on the first search of the run), read by line range, list a directory. Errors come
// back as the tool's answer, for the model to read.
void add_code_tools(agent::CoderTools& tools, const CommonFlags& common) {
  auto cutlass = locate_cutlass(common);
  if (!cutlass.ok()) return;
  struct Shared {
    codesearch::Cutlass cutlass;
    fs::path db;
    std::mutex mutex;
    std::optional<codesearch::Index> index;  // guarded by mutex
  };
  auto shared = std::make_shared<Shared>();
  shared->cutlass = *cutlass;
  shared->db = cutlass_index_path(*cutlass, "");
  tools.cutlass_version = cutlass->version;
  tools.search_code = [shared](const std::string& query) -> std::string {
    std::lock_guard<std::mutex> lock(shared->mutex);
    if (!shared->index) {
      auto index = codesearch::Index::open(shared->db);
      if (!index.ok()) return "the code index cannot be opened: " + index.error().message;
      if (auto s = index->update(shared->cutlass); !s.ok()) return "the code index cannot be built: " + s.error().message;
      shared->index.emplace(std::move(*index));
    }
    auto hits = shared->index->search(query, {.limit = 6, .per_file = 1, .snippet_lines = 10});
    if (!hits.ok()) return hits.error().message;
    if (hits->empty()) return fmt::format("nothing in CUTLASS {} matches \"{}\"", shared->cutlass.version, query);
    return codesearch::format_hits(*hits);
  };
  tools.read_code = [shared](const std::string& path, int start, int end) -> std::string {
    auto text = codesearch::show_lines(shared->cutlass.root, path, start, end);
    return text.ok() ? path + "\n" + *text : text.error().message;
  };
  tools.list_code = [shared](const std::string& dir) -> std::string {
    auto entries = codesearch::list_dir(shared->cutlass.root, dir);
    return entries.ok() ? join(*entries, "\n") : entries.error().message;
  };
}

// The coder's compile_check: a draft built by `drafts` into RUN_DIR/drafts/draft-N.cu, answered
// with the compile errors (cut to what matters) or ptxas' report; and the CUTLASS tools.
// `drafts` must outlive the tools.
agent::CoderTools draft_tools(build::Builder& drafts, const fs::path& run_dir, const task::Task& task,
                              const CommonFlags& common) {
  agent::CoderTools tools;
  add_code_tools(tools, common);
  auto count = std::make_shared<int>(0);
  tools.compile_check = [&drafts, run_dir, libs = task.candidate_libraries, count](const std::string& source) {
    const fs::path draft = run_dir / "drafts" / fmt::format("draft-{}.cu", ++*count);
    std::error_code ec;
    fs::create_directories(draft.parent_path(), ec);
    if (!write_file(draft.string(), source).ok()) return std::string("could not write the draft");
    auto r = drafts.build(build::BuildRequest{draft, libs, {}});
    if (!r.ok()) return "not built: " + r.error().message;
    if (!r->ok) {
      const std::string summary = build::summarize_diagnostics(r->diagnostics, 5);
      return "compile errors:\n" + (summary.empty() ? r->log : summary);
    }
    return fmt::format("compiled. ptxas: {}", r->log.empty() ? "(no report)" : r->log);
  };
  return tools;
}

}  // namespace

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
  auto setup = model_setup({flags.config, flags.provider, flags.model, flags.base_url, flags.prompts, flags.no_tools},
                           run_dir, hint, nullptr);
  if (!setup.ok()) return exit_for(setup.error());
  if (kernelbench && !task->seed_path)
    if (Status s = reference_as_seed(*task, run_dir); !s.ok()) return exit_for(s.error());
  llm::LlmClient& client = *(*setup)->client;
  agent::Agents& agents = *(*setup)->agents;
  const agent::AgentOptions& aopts = (*setup)->options;

  auto scratch = make_scratch("kernelpro-generate-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  const eval::EvaluatorOptions eo = loop_evaluator_options(common, flags.eval, kernelbench, scratch->path());
  eval::Evaluator evaluator(eo);
  build::Builder drafts(build_options(common));
  const agent::CoderTools tools = draft_tools(drafts, run_dir, *task, common);

  driver::GenerateHooks hooks;
  hooks.evaluate = [&](const fs::path& cu, const fs::path& py) -> Result<eval::EvalResult> {
    if (kernelbench) return evaluator.evaluate(*task, py, cu);
    return evaluator.evaluate(*task, cu);
  };
  hooks.analyze = [&](const fs::path& cu, const fs::path& py, const std::vector<std::string>& extra) {
    const bool reference_seed = kernelbench && task->seed_path && py == *task->seed_path;
    return analyze_feedback(flags.task, kernelbench ? py : cu, kernelbench ? cu : fs::path(), extra, reference_seed, common,
                            flags.eval);
  };
  if (auto listed = driver::list_tools(analysis::default_rule_dirs()); listed.ok())
    for (const auto& t : *listed) hooks.tool_offers.push_back({t.value("name", ""), t.value("about", ""), false});
  hooks.progress = [&](const std::string& line) {
    if (!common.json) std::fprintf(stderr, "kernelpro: %s\n", line.c_str());
  };
  driver::GenerateOptions go;
  go.run_dir = run_dir;
  if (auto words = gpu_words(evaluator)) {
    go.gpu = *words;
  } else {
    const std::string arch = common.arch.empty() ? std::string("sm_90a") : common.arch;
    go.gpu = fmt::format("an NVIDIA GPU (none on this machine: the candidate is built for {} and not run)", arch);
    go.analyze_seed = false;
  }
  go.max_debug_rounds = flags.max_debug;
  go.direction = flags.direction;
  auto report = driver::run_generate(*task, agents, hooks, go, aopts.tools ? &tools : nullptr);

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
  return kExitFailed;
}

// ---- optimize with a model ---------------------------------------------------------------------

namespace {

std::atomic<bool> g_model_interrupted{false};

extern "C" void on_model_sigint(int) { g_model_interrupted.store(true); }

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
  auto setup = model_setup({flags.config, flags.provider, flags.model, flags.base_url, flags.prompts, flags.no_tools},
                           o.run_dir, hint, &budget);
  if (!setup.ok()) return exit_for(setup.error());
  if (kernelbench && !task->seed_path)
    if (Status s = reference_as_seed(*task, o.run_dir); !s.ok()) return exit_for(s.error());
  llm::LlmClient& client = *(*setup)->client;
  hint = (*setup)->resume_hint;

  auto scratch = make_scratch("kernelpro-optimize-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  const eval::EvaluatorOptions eo = loop_evaluator_options(common, flags.eval, kernelbench, scratch->path());
  eval::Evaluator evaluator(eo);
  // The seed of a KernelBench problem is its reference, which calls only library code: it is
  // timed by an evaluator that allows that, made only when it is needed.
  std::unique_ptr<eval::Evaluator> root_evaluator;
  build::Builder drafts(build_options(common));
  const agent::CoderTools tools = draft_tools(drafts, o.run_dir, *task, common);

  bool tty = false;
  driver::ModelSearchHooks hooks;
  hooks.progress = progress_printer(common, &tty);
  hooks.evaluate = [&](const fs::path& cu, const fs::path& py, bool root) -> Result<eval::EvalResult> {
    if (!kernelbench) return evaluator.evaluate(*task, cu);
    if (!root) return evaluator.evaluate(*task, py, cu);
    if (!root_evaluator) {
      eval::EvaluatorOptions ro = eo;
      ro.eval.library_only_ok = true;
      root_evaluator = std::make_unique<eval::Evaluator>(ro);
    }
    return root_evaluator->evaluate(*task, py, cu);
  };
  hooks.analyze = [&](const fs::path& cu, const fs::path& py, bool root) {
    return analyze_feedback(flags.task, kernelbench ? py : cu, kernelbench ? cu : fs::path(), {}, kernelbench && root,
                            common, flags.eval);
  };
  hooks.record = [&](const eval::EvalResult& r) { return report::eval_to_json(*task, r).dump(); };
  hooks.interrupted = [] { return g_model_interrupted.load(); };
  hooks.llm_spent = [&] { return client.spent(); };
  hooks.llm_budget_spent = [&] { return client.budget_exhausted(); };
  if ((*setup)->options.tools) hooks.tools = &tools;
  // The build lane of the pipeline compiles native candidates into the cache the evaluator reads.
  build::Builder ahead(build_options(common));
  if (!kernelbench)
    hooks.prebuild = [&](const fs::path& cu) {
      (void)ahead.build(build::BuildRequest{cu, task->candidate_libraries, {}});
    };

  if (auto words = gpu_words(evaluator)) {
    o.gpu = *words;
  } else {
    const std::string arch = common.arch.empty() ? std::string("sm_90a") : common.arch;
    o.gpu = fmt::format("an NVIDIA GPU (none on this machine: candidates are built for {} and not run)", arch);
  }
  g_model_interrupted = false;
  auto previous = std::signal(SIGINT, on_model_sigint);
  auto report = driver::run_model_optimize(*task, *(*setup)->agents, hooks, o);
  std::signal(SIGINT, previous);
  if (tty) std::fprintf(stderr, "\n");
  write_call_log(client, o.run_dir / "llm_calls.jsonl");
  if (!report.ok()) return exit_for(report.error());
  const auto& r = *report;
  if (common.json) {
    auto j = r.to_json();
    j["run_dir"] = o.run_dir.string();
    j["llm"] = {{"calls", client.spent().calls}, {"tokens", client.spent().tokens}, {"cost_usd", client.spent().cost_usd}};
    std::cout << j.dump(2) << "\n";
  } else if (r.nodes == 0) {
    std::cout << "No GPU here: the seed built; the search needs its timing. Run the same command on a GPU machine.\n";
  } else {
    std::cout << fmt::format("{}: best {:.4g} ms: {:.2f}x the seed ({:.4g} ms), {:.2f}x the reference ({:.4g} ms)\n",
                             task->name, r.best_seconds * 1e3, r.seed_seconds / r.best_seconds, r.seed_seconds * 1e3,
                             r.reference_seconds / r.best_seconds, r.reference_seconds * 1e3);
    std::cout << fmt::format("  by: {}\n", r.best_direction);
    std::cout << fmt::format("{} candidate(s) evaluated in this run ({} duplicate(s) measured once), {} in the tree; "
                             "stopped: {}; {}\n",
                             r.evaluated, r.duplicates, r.nodes, r.stopped, r.best_source.string());
    // The lanes overlap: their busy time can add up to more than the wall time.
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

}  // namespace kp::cli
