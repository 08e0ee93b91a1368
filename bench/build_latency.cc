// Build latency of one candidate .so: kernelpro's nvcc pipeline cold (empty cache) and cached,
// against torch.utils.cpp_extension.load_inline of the same kernel (the KernelBench way),
// measured in the same run when python3 with torch is present.
//
// Usage: kp_bench_build_latency [--no-torch]
#include <cstring>

#include <fmt/format.h>

#include "bench/bench_support.h"
#include "build/builder.h"
#include "sys/subprocess.h"
#include "util/strings.h"
#include "verdict/statistics.h"

using namespace kp;

int main(int argc, char** argv) {
  bool torch = !(argc > 1 && std::strcmp(argv[1], "--no-torch") == 0);
  auto scratch = sys::TempDir::create("kp-bench-build-");
  if (!scratch.ok()) return 1;
  std::filesystem::path relu = bench::source_dir() / "bench" / "data" / "relu.cu";
  std::vector<double> cold, cached;
  for (int rep = 0; rep < 3; ++rep) {
    build::BuildOptions o;
    o.cache_dir = scratch->path() / fmt::format("cache{}", rep);  // empty: a cold build
    build::Builder b(o);
    auto first = b.build({relu, {}, {}});
    if (!first.ok() || !first->ok) {
      std::fprintf(stderr, "build failed: %s\n", first.ok() ? first->log.c_str() : first.error().message.c_str());
      return 1;
    }
    cold.push_back(first->seconds);
    auto again = b.build({relu, {}, {}});
    if (!again.ok() || !again->cache_hit) return 1;
    cached.push_back(again->seconds);
  }
  double cold_s = eval::summarize(cold).median, cached_s = eval::summarize(cached).median;
  bench::report("kernelpro cold build (median of 3)", cold_s, "s");
  bench::report("kernelpro cached build (median of 3)", cached_s, "s");
  if (!torch) return 0;
  sys::Command c;
  c.argv = {"python3", (bench::source_dir() / "bench" / "load_inline_relu.py").string(),
            (scratch->path() / "torch_ext").string()};
  c.timeout = std::chrono::milliseconds(600000);
  auto r = sys::run(c);
  if (!r.ok() || !r->success()) {
    std::printf("load_inline baseline not measured: %s\n%s", r.ok() ? r->describe().c_str() : r.error().message.c_str(),
                r.ok() ? tail_lines(r->stderr_text, 5).c_str() : "");
    return 0;
  }
  double inline_s = std::stod(std::string(trim(r->stdout_text)));
  bench::report("torch load_inline cold build (baseline)", inline_s, "s");
  bench::report("ratio load_inline / kernelpro cold", inline_s / cold_s, "x");
  bench::report("ratio load_inline / kernelpro cached", inline_s / cached_s, "x");
  return 0;
}
