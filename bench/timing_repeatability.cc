// Timing repeatability: the spread of the median over 5 evaluations of the same candidate
// (the seeds of examples/gelu, softmax and layernorm), against the baseline of
// the spread inside one evaluation (its relative IQR).
#include <algorithm>

#include <fmt/format.h>

#include "bench/bench_support.h"
#include "task/native_task_loader.h"
#include "verdict/statistics.h"

using namespace kp;

int main() {
  auto scratch = sys::TempDir::create("kp-bench-repeat-");
  if (!scratch.ok()) return 1;
  eval::EvaluatorOptions o = bench::bench_options(scratch->path());
  o.eval.energy_window_s = 0;
  eval::Evaluator evaluator(o);
  for (const char* example : {"gelu", "softmax", "layernorm"}) {
    auto task = task::load_native_task(bench::source_dir() / "examples" / example);
    if (!task.ok()) return 1;
    std::vector<double> medians, iqrs;
    for (int i = 0; i < 5; ++i) {
      auto r = evaluator.evaluate(*task, *task->seed_path);
      if (!r.ok() || r->outcome != eval::Outcome::kOk) {
        std::fprintf(stderr, "%s: eval failed\n", example);
        return 1;
      }
      medians.push_back(r->time.median);
      iqrs.push_back(r->time.relative_iqr());
    }
    eval::Summary m = eval::summarize(medians);
    double spread = (m.max - m.min) / m.median;
    double within = eval::summarize(iqrs).median;
    std::string p = fmt::format("{}: ", example);
    bench::report(p + "median of medians", m.median * 1e6, "us");
    bench::report(p + "(max - min) / median over 5 evals", spread * 100, "%");
    bench::report(p + "stddev / mean of the 5 medians", m.stddev / m.mean * 100, "%");
    bench::report(p + "within-eval relative IQR (baseline)", within * 100, "%");
    bench::report(p + "ratio between-eval spread / within-eval IQR", within > 0 ? spread / within : 0, "x");
  }
  return 0;
}
