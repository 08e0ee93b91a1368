#include "bench/bench_support.h"

#include <cstdio>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "task/native_task_loader.h"
#include "util/strings.h"

namespace kp::bench {

namespace fs = std::filesystem;

fs::path source_dir() { return KP_SOURCE_DIR; }
fs::path worker_binary() { return fs::path(KP_BINARY_DIR) / "kp-worker"; }

Result<task::Task> resized_example(const std::string& example, const std::map<std::string, int64_t>& symbols,
                                   const fs::path& dir) {
  fs::path from = source_dir() / "examples" / example;
  fs::create_directories(dir);
  KP_TRY(std::string toml, read_file((from / "task.toml").string()));
  for (const auto& [name, value] : symbols) {
    std::regex re("(^|\\n)" + name + "\\s*=\\s*[0-9]+");
    toml = std::regex_replace(toml, re, fmt::format("$1{} = {}", name, value));
  }
  KP_TRY_STATUS(write_file((dir / "task.toml").string(), toml));
  for (const char* f : {"reference.cu", "seed.cu"}) fs::copy_file(from / f, dir / f, fs::copy_options::overwrite_existing);
  return task::load_native_task(dir);
}

eval::EvaluatorOptions bench_options(const fs::path& scratch) {
  eval::EvaluatorOptions o;
  o.build.cache_dir = scratch / "cache";
  o.worker.worker_path = worker_binary();
  o.worker.scratch_dir = scratch / "worker";
  return o;
}

void report(const std::string& name, double value, const std::string& unit) {
  std::printf("%-44s %12.4f %s\n", name.c_str(), value, unit.c_str());
  std::fflush(stdout);
}

}  // namespace kp::bench
