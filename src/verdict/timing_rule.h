// When to stop sampling timed calls: the one rule both workers apply (kp-worker directly, the
// KernelBench worker through the judge core, src/judge/session.h), held to
// tests/data/timing_rule_cases.json. Pure: no clock and no GPU here, so every decision is tested on the CPU.
#pragma once

#include <vector>

#include "verdict/eval_options.h"

namespace kp::eval {

// The distribution-free 95% confidence interval of the median of n samples: the order
// statistics of ranks floor(n/2 - 0.98 sqrt(n)) and ceil(n/2 + 0.98 sqrt(n)) (1-based, clamped
// to [1, n]), the normal approximation to the binomial that holds whatever the shape of the
// distribution (timing samples are skewed, with a tail of slow calls).
struct MedianInterval {
  double median = 0;
  double lo = 0, hi = 0;
  // (hi - lo) / 2 / median: the interval's half-width relative to the median (0 when median is 0).
  double relative_half_width() const { return median > 0 ? (hi - lo) / 2 / median : 0; }
};
MedianInterval median_interval95(std::vector<double> samples);

enum class SamplingStop {
  kContinue,   // take another sample
  kPrecise,    // the median is known within options.median_ci (and min_trials are in)
  kBudget,     // the timed loop has used timing_budget_s of wall time (and min_trials are in)
  kMaxTrials,  // max_trials samples
  kCap,        // timing_cap_s of loop wall time with kCapMinSamples samples in, min_trials or not
};
const char* to_string(SamplingStop s);  // "continue", "precise", "budget", "max_trials", "cap"

// The fewest samples a timing may stop with at its cap.
inline constexpr int kCapMinSamples = 3;

// The decision after samples.size() samples whose timed loop has taken loop_wall_s so far.
// The cap comes first (it bounds the loop's cost whatever the calls cost), then min_trials (an interval of few samples is not trusted), then max_trials, then the
// interval, then the budget. A budget of 0 with min_trials == max_trials gives exactly that many
// samples (the baseline's fixed count).
SamplingStop sampling_decision(const std::vector<double>& samples, double loop_wall_s, const EvalOptions& options);

}  // namespace kp::eval
