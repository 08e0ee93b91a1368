#include "tests/support/paths.h"

#include "codesearch/index.h"
#include "eval/worker_client.h"
#include "profile/sass/cuobjdump.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "util/strings.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace kp::testing {

namespace fs = std::filesystem;

fs::path source_dir() { return KP_SOURCE_DIR; }
fs::path test_data_dir() { return KP_TEST_DATA_DIR; }
fs::path binary_dir() { return KP_BINARY_DIR; }
fs::path examples_dir() { return source_dir() / "examples"; }
fs::path kernelpro_binary() { return binary_dir() / "kernelpro"; }
fs::path worker_binary() { return binary_dir() / "kp-worker"; }

std::optional<std::string> nvcc_missing() {
  static std::optional<std::string> cached = [] () -> std::optional<std::string> {
    sys::Command c;
    c.argv = {"nvcc", "--version"};
    auto r = sys::run(c);
    if (!r.ok() || !r->success()) return std::string("nvcc is not on PATH (toolchain tests need the CUDA toolkit)");
    return std::nullopt;
  }();
  return cached;
}

std::optional<std::string> gpu_missing() {
  // (why, whether the worker itself is broken): only a worker that started and said it found no
  // GPU makes a skip; one that did not start, crashed or broke the protocol fails every test that
  // asks, instead of passing the whole gpu tier as skipped.
  static const std::pair<std::optional<std::string>, bool> cached = []() -> std::pair<std::optional<std::string>, bool> {
    auto scratch = sys::TempDir::create("kp-test-gpu-");
    if (!scratch.ok()) return {scratch.error().message, true};
    eval::WorkerOptions o;
    o.worker_path = worker_binary();
    o.scratch_dir = scratch->path();
    eval::WorkerClient w(o);
    auto d = w.device();
    if (d.ok()) return {std::nullopt, false};
    if (d.error().code == ErrorCode::kUnavailable) return {"no GPU: " + d.error().message, false};
    return {"the worker is broken (it did not say whether there is a GPU): " + d.error().message, true};
  }();
  if (cached.second) ADD_FAILURE() << *cached.first;
  return cached.first;
}

fs::path kp_tools_python_dir() { return source_dir() / ".kp-tools" / "python"; }

std::optional<std::string> cuobjdump_missing() {
  profile::SassToolOptions o;
  o.search_dirs = {kp_tools_python_dir()};
  auto found = profile::find_cuobjdump(o);
  if (!found.ok()) return found.error().message;
  return std::nullopt;
}

namespace {
Result<build::CutlassHeaders> find_cutlass_here() {
  const char* env = std::getenv("CUTLASS_PATH");
  KP_TRY(auto c, codesearch::find_cutlass("", env ? env : "", {kp_tools_python_dir()}));
  build::CutlassHeaders h{{c.include}, c.version};
  if (!c.util_include.empty()) h.include_dirs.push_back(c.util_include);
  return h;
}
}  // namespace

std::optional<std::string> cutlass_missing() {
  static const std::optional<std::string> cached = []() -> std::optional<std::string> {
    auto found = find_cutlass_here();
    if (!found.ok()) return found.error().message;
    return std::nullopt;
  }();
  return cached;
}

std::function<Result<build::CutlassHeaders>()> cutlass_finder() { return find_cutlass_here; }

fs::path tiny_gelu(const fs::path& dir) {
  fs::create_directories(dir);
  fs::path from = examples_dir() / "gelu";
  std::string toml = read_file((from / "task.toml").string()).value();
  const std::string big = "N = 67108864";
  size_t pos = toml.find(big);
  EXPECT_NE(pos, std::string::npos) << "examples/gelu/task.toml no longer says " << big;
  if (pos != std::string::npos) toml.replace(pos, big.size(), "N = 4096");
  EXPECT_TRUE(write_file((dir / "task.toml").string(), toml).ok());
  fs::copy_file(from / "reference.cu", dir / "reference.cu", fs::copy_options::overwrite_existing);
  return dir;
}

}  // namespace kp::testing
