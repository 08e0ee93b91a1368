// Wall time of one full `eval` (correctness, timing, energy) of a kernel of about 1 ms, and how
// it splits. The bench task is examples/gelu at N = 2^28 (2 GiB moved per call). Baseline, in
// the same run: the device time the evaluation itself spent in timed candidate calls; the
// ratio says how much the harness costs on top of the measurement.
#include <fmt/format.h>

#include "bench/bench_support.h"
#include "util/strings.h"

using namespace kp;

int main() {
  auto scratch = sys::TempDir::create("kp-bench-eval-");
  if (!scratch.ok()) return 1;
  auto task = bench::resized_example("gelu", {{"N", int64_t{1} << 28}}, scratch->path() / "task");
  if (!task.ok()) {
    std::fprintf(stderr, "%s\n", task.error().message.c_str());
    return 1;
  }
  eval::Evaluator evaluator(bench::bench_options(scratch->path()));
  // First evaluation: cold builds and a cold worker, reported but not the headline.
  auto first = evaluator.evaluate(*task, *task->seed_path);
  if (!first.ok() || first->outcome != eval::Outcome::kOk) {
    std::fprintf(stderr, "eval failed: %s\n", first.ok() ? first->reason.c_str() : first.error().message.c_str());
    return 1;
  }
  bench::report("first eval wall (cold build, worker start)", first->total_seconds, "s");
  bench::report("  build", first->build_seconds, "s");
  bench::report("  worker start (CUDA init)", first->worker_start_seconds, "s");
  auto r = evaluator.evaluate(*task, *task->seed_path);
  if (!r.ok() || r->outcome != eval::Outcome::kOk) return 1;
  bench::report("kernel median time", r->time.median * 1e3, "ms");
  bench::report("eval wall (cached build, warm worker)", r->total_seconds, "s");
  bench::report("  build (cache hit)", r->build_seconds, "s");
  for (const auto& [phase, s] : r->report->phase_seconds) bench::report("  worker: " + phase, s, "s");
  double timed_device = r->time.median * static_cast<double>(r->time.count);
  double energy_device = r->report->energy ? r->report->energy->window_s : 0;
  bench::report("device time in timed candidate calls (baseline)", timed_device, "s");
  bench::report("device time in energy window", energy_device, "s");
  bench::report("ratio eval wall / timed device time", r->total_seconds / timed_device, "x");
  return 0;
}
