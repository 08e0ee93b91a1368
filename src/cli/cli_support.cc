#include "cli/cli_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/rule_tool.h"
#include "build/diagnostics.h"
#include "driver/analyze_session.h"
#include "profile/kernel_metrics.h"
#include "eval/result_json.h"
#include "report/eval_report.h"
#include "task/kernelbench_loader.h"
#include "task/native_task_loader.h"
#include "util/hash.h"
#include "util/strings.h"
#include "util/resource_root.h"

namespace kp::cli {

namespace fs = std::filesystem;


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
  b.include_dir = resource_root() / "include";
  // CUTLASS, for the candidates that include its headers; found when the first one is built.
  b.find_cutlass = [c]() -> Result<build::CutlassHeaders> {
    KP_TRY(auto found, locate_cutlass(c));
    build::CutlassHeaders h{{found.include}, found.version};
    if (!found.util_include.empty()) h.include_dirs.push_back(found.util_include);
    return h;
  };
  return b;
}

Result<codesearch::Cutlass> locate_cutlass(const CommonFlags& c) {
  const char* env = std::getenv("CUTLASS_PATH");
  return codesearch::find_cutlass(c.cutlass, env ? env : "", {fs::path(KP_SOURCE_DIR) / ".kp-tools" / "python"});
}

fs::path cutlass_index_path(const codesearch::Cutlass& cutlass, const std::string& flag) {
  if (!flag.empty()) return flag;
  return default_cache_dir().parent_path() / "cutlass" /
         fmt::format("index-{}-{}.db", cutlass.version.empty() ? "unknown" : cutlass.version,
                     sha256_hex(cutlass.root.string()).substr(0, 12));
}

fs::path data_dir() {
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "kernelpro";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".local" / "share" / "kernelpro";
  return fs::temp_directory_path() / "kernelpro-data";
}

fs::path calibration_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  return data_dir() / "calibration";
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
  std::string path = (resource_root() / "python").string();
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
  w.env = {{"PYTHONPATH", path}};
  // The judge core the worker times and checks with (python/kernelpro_torch/judge.py), built
  // beside kernelpro; an explicit KP_JUDGE_LIBRARY wins.
  if (const char* lib = std::getenv("KP_JUDGE_LIBRARY"); lib && *lib) w.env.emplace_back("KP_JUDGE_LIBRARY", lib);
  else if (fs::exists(self_dir() / "libkp_judge.so"))
    w.env.emplace_back("KP_JUDGE_LIBRARY", (self_dir() / "libkp_judge.so").string());
  w.scratch_dir = scratch;
  return w;
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

eval::EvaluatorOptions loop_evaluator_options(const CommonFlags& common, const EvalFlags& eval, bool kernelbench,
                                              const fs::path& scratch) {
  eval::EvaluatorOptions eo;
  eo.build = build_options(common);
  eo.eval = eval_options(eval, kernelbench ? 5 : 3, kernelbench ? 600 : 120);
  if (kernelbench) {
    eo.worker = python_worker_options(resolve_python(eval.python), scratch);
  } else {
    eo.worker.worker_path = common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker);
    eo.worker.scratch_dir = scratch;
  }
  return eo;
}

std::function<void(const std::string&)> progress_printer(const CommonFlags& common, bool* live) {
  const bool tty = isatty(STDERR_FILENO) != 0 && !common.json;
  if (live) *live = tty;
  const bool json = common.json;
  return [tty, json](const std::string& line) {
    if (json) return;
    if (tty)
      std::fprintf(stderr, "\r\033[2Kkernelpro: %s", line.c_str());
    else
      std::fprintf(stderr, "kernelpro: %s\n", line.c_str());
  };
}

// Prints the verdict (JSON or text, with `not_run_note` after a not-run text verdict) and
// returns the exit code.
int print_verdict(const task::Task& task, const eval::EvalResult& result, bool json, const std::string& not_run_note) {
  if (json) {
    std::cout << eval::result_to_json(task, result).dump(2) << "\n";
  } else {
    std::cout << report::format_eval_text(task, result);
    if (result.outcome == eval::Outcome::kNotRun) std::cout << not_run_note;
  }
  if (result.outcome == eval::Outcome::kOk) return kExitOk;
  // This machine could not say (no GPU, or one held by another process): not the candidate's failure.
  if (eval::is_machine_outcome(result.outcome)) return kExitNotRun;
  return kExitFailed;
}

std::string gpu_held_note(const std::string& what, const std::string& resume) {
  return fmt::format("The GPU is held by another process (out of device memory, retried): {} was not recorded. "
                     "Continue once it is free with: {}\n",
                     what, resume);
}

// ---- profile and analyze -----------------------------------------------------------------------

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

// ---- the model side of generate and optimize ---------------------------------------------------

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
  if (!flags.command.empty()) {
    config.command.clear();
    for (const auto& w : split(flags.command, ' '))
      if (!w.empty()) config.command.push_back(w);
    if (flags.provider.empty() && flags.config.empty()) config.provider = "command";
  }
  if (config.provider == "command" && config.command.empty())
    return make_error(ErrorCode::kInvalidInput,
                      "--provider command needs the model's command line: --command \"claude -p\" (or codex exec, "
                      "gemini -p, llm -m MODEL, ollama run MODEL: a prompt on stdin, the reply on stdout), or "
                      "command = [...] in the [llm] table of --config");
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
  if (!flags.command.empty()) ctx.resume_hint += " --command \"" + flags.command + "\"";
  // A campaign's problem is resumed by the campaign (campaign/scheduler.cc sets this), not by hand.
  if (const char* h = std::getenv("KP_RESUME_HINT"); h && *h) ctx.resume_hint = h;
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
                         flags.prompts.empty() ? (resource_root() / "prompts").string() : flags.prompts));
  m->options.tools = !flags.no_tools && (config.provider == "openai" || config.provider == "anthropic");
  m->options.max_tokens = config.max_tokens;
  m->options.temperature = config.temperature;
  m->options.stream = config.stream;
  m->agents = std::make_unique<agent::Agents>(*m->client, *m->prompts, config.model, m->options);
  return m;
}

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

Status reference_as_seed(task::Task& task, const fs::path& run_dir) {
  const fs::path seed = run_dir / "reference_as_candidate.py";
  KP_TRY(std::string problem, read_file(task.reference_path.string()));
  KP_TRY_STATUS(write_file(seed.string(), problem + "\n\n# kernelpro: the reference as a candidate, profiled as the seed.\n"
                                                    "class ModelNew(Model):\n    pass\n"));
  task.seed_path = seed;
  return ok_status();
}

namespace {

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

}  // namespace

Result<std::unique_ptr<driver::JudgeBench>> open_loop_bench(const task::Task& task, const std::string& task_path,
                                                            bool feedback, bool offer_tools, const fs::path& run_dir,
                                                            const CommonFlags& common, const EvalFlags& eval) {
  ProfileFlags pf;
  pf.eval = eval;
  pf.eval.task = task_path;
  // The setup asks for a candidate (and a native task may have no seed.cu); each analysis names
  // its own, so this one is never read.
  pf.eval.candidate = task_path;
  KP_TRY(std::unique_ptr<ProfileSetup> setup, profile_setup(pf, common, "optimize"));
  driver::JudgeBenchOptions o;
  o.feedback = feedback;
  o.build = build_options(common);
  add_code_tools(o.code_tools, common);
  o.offer_tools = offer_tools;
  o.run_dir = run_dir;
  return driver::JudgeBench::open(task, std::move(setup), std::move(o));
}

}  // namespace kp::cli
