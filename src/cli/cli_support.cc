#include "cli/cli_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "report/eval_report.h"
#include "util/hash.h"

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
  b.include_dir = fs::path(KP_SOURCE_DIR) / "include";
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
    std::cout << report::eval_to_json(task, result).dump(2) << "\n";
  } else {
    std::cout << report::format_eval_text(task, result);
    if (result.outcome == eval::Outcome::kNotRun) std::cout << not_run_note;
  }
  if (result.outcome == eval::Outcome::kOk) return kExitOk;
  if (result.outcome == eval::Outcome::kNotRun) return kExitNotRun;
  return kExitFailed;
}

}  // namespace kp::cli
