#include "verdict/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kp::eval {

double percentile_sorted(const std::vector<double>& s, double p) {
  if (s.empty()) return 0;
  double pos = (p / 100.0) * static_cast<double>(s.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, s.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

Summary summarize(std::vector<double> v) {
  Summary out;
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  out.count = v.size();
  out.min = v.front();
  out.max = v.back();
  out.median = percentile_sorted(v, 50);
  out.p10 = percentile_sorted(v, 10);
  out.p90 = percentile_sorted(v, 90);
  out.q1 = percentile_sorted(v, 25);
  out.q3 = percentile_sorted(v, 75);
  out.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - out.mean) * (x - out.mean);
    out.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return out;
}

}  // namespace kp::eval
