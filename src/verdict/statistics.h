// Robust summaries of timing samples.
#pragma once

#include <cstddef>
#include <vector>

namespace kp::eval {

struct Summary {
  size_t count = 0;
  double median = 0;
  double mean = 0;
  double stddev = 0;   // sample standard deviation (n - 1); 0 for one sample
  double min = 0;
  double max = 0;
  double p10 = 0;      // percentiles by linear interpolation between order statistics
  double p90 = 0;
  double q1 = 0;       // 25th and 75th percentiles; IQR = q3 - q1
  double q3 = 0;
  // Relative spread: IQR / median (0 when median is 0). A robust coefficient of variation.
  double relative_iqr() const { return median > 0 ? (q3 - q1) / median : 0; }
};

// Summarizes samples (any order). An empty input gives a zero Summary.
// Example: {4, 1, 3, 2} -> median 2.5, q1 1.75, q3 3.25, min 1, max 4, mean 2.5.
Summary summarize(std::vector<double> samples);

// The p-th percentile (0..100) of sorted samples, linear interpolation (numpy's default).
double percentile_sorted(const std::vector<double>& sorted, double p);

}  // namespace kp::eval
