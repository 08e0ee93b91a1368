#include "verdict/timing_rule.h"

#include <algorithm>
#include <cmath>

namespace kp::eval {

MedianInterval median_interval95(std::vector<double> samples) {
  MedianInterval m;
  const size_t n = samples.size();
  if (n == 0) return m;
  std::sort(samples.begin(), samples.end());
  m.median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  const double half = 0.98 * std::sqrt(static_cast<double>(n));
  const double nd = static_cast<double>(n);
  // 1-based ranks, clamped to [1, n], then 0-based indices.
  const auto lo_rank = static_cast<size_t>(std::clamp(std::floor(nd / 2 - half), 1.0, nd));
  const auto hi_rank = static_cast<size_t>(std::clamp(std::ceil(nd / 2 + half), 1.0, nd));
  m.lo = samples[lo_rank - 1];
  m.hi = samples[hi_rank - 1];
  return m;
}

const char* to_string(SamplingStop s) {
  switch (s) {
    case SamplingStop::kContinue: return "continue";
    case SamplingStop::kPrecise: return "precise";
    case SamplingStop::kBudget: return "budget";
    case SamplingStop::kMaxTrials: return "max_trials";
    case SamplingStop::kCap: return "cap";
  }
  return "continue";
}

SamplingStop sampling_decision(const std::vector<double>& samples, double loop_wall_s, const EvalOptions& options) {
  const auto n = static_cast<int>(samples.size());
  const int min_trials = std::max(1, options.min_trials);
  const int max_trials = std::max(min_trials, options.max_trials);
  if (options.timing_cap_s > 0 && n >= kCapMinSamples && loop_wall_s >= options.timing_cap_s) return SamplingStop::kCap;
  if (n < min_trials) return SamplingStop::kContinue;
  if (n >= max_trials) return SamplingStop::kMaxTrials;
  if (options.median_ci > 0 && median_interval95(samples).relative_half_width() <= options.median_ci)
    return SamplingStop::kPrecise;
  if (loop_wall_s >= options.timing_budget_s) return SamplingStop::kBudget;
  return SamplingStop::kContinue;
}

}  // namespace kp::eval
