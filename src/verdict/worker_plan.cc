#include "verdict/worker_plan.h"

#include <algorithm>

namespace kp::eval {

int input_sets_that_fit(uint64_t set_bytes, uint64_t free_bytes, int wanted) {
  int n = std::max(1, wanted);
  while (n > 1 && set_bytes * static_cast<uint64_t>(n) > free_bytes / 4) --n;
  return n;
}

bool graph_outputs_fit(uint64_t out_bytes, int calls, uint64_t free_bytes) {
  return out_bytes * static_cast<uint64_t>(std::max(calls, 0)) <= free_bytes / 8;
}

bool use_graph_replay(double t_est_s, const EvalOptions& options) { return t_est_s * 1e6 < options.graph_threshold_us; }

bool wall_says_work_escaped(double wall_median_s, double event_median_s, const EvalOptions& options) {
  return wall_median_s > options.wall_ratio * event_median_s + options.wall_slack_us * 1e-6;
}

bool tail_says_work_escaped(double tail_median_s, double event_median_s) {
  return tail_median_s > kEscapedTailSlackS + kEscapedTailShare * event_median_s;
}

bool faster_on_right_outputs(double unpoisoned_s, double poisoned_s) {
  return poisoned_s > 1.3 * unpoisoned_s + 0.5e-6;
}

int64_t energy_chunk_calls(double t_call_s) {
  return std::max<int64_t>(1, static_cast<int64_t>(0.02 / std::max(t_call_s, 1e-7)));
}

bool energy_rate_says_skipped(double window_s, int64_t calls, double call_s) {
  return calls > 0 && window_s / static_cast<double>(calls) < call_s / 3 - 2e-6;
}

bool energy_gpu_idle(double window_s, int64_t calls, double call_s, double utilization_pct) {
  if (utilization_pct < 0 || window_s <= 0 || calls <= 0) return false;
  const double busy = std::min(1.0, static_cast<double>(calls) * call_s / window_s);
  return busy >= 0.2 && utilization_pct / 100 < 0.25 * busy;
}

uint64_t l2_flush_bytes(int64_t l2_bytes) {
  return std::max<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(l2_bytes, 0)) * 4, uint64_t{256} << 20);
}

int grown_range_capacity(int capacity, int64_t launches, int64_t dropped) {
  if (capacity <= 0) capacity = 1;
  if (dropped <= 0) return capacity;
  launches = std::max<int64_t>(launches, capacity + dropped);
  if (launches <= capacity || capacity >= kMostRangeCapacity) return capacity;
  int64_t grown = capacity;
  while (grown < launches && grown < kMostRangeCapacity) grown *= 2;
  return static_cast<int>(std::min<int64_t>(grown, kMostRangeCapacity));
}

}  // namespace kp::eval
