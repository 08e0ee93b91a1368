#include "analysis/tools/stalls.h"

#include <algorithm>

namespace kp::analysis {

namespace {
constexpr double kWarpsPerScheduler = 16;  // 64 warps per SM over 4 schedulers
}  // namespace

StallCycles stall_cycles(const profile::KernelMetrics& k) {
  StallCycles s;
  for (const char* m : kCollectedStallMetrics)
    if (auto x = metric(k, m)) {
      s.collected += std::max(0.0, *x);
      ++s.present;
    }
  if (auto ncu = metric(k, "smsp__average_warp_latency_per_inst_issued.ratio"); ncu && *ncu > 0) {
    s.total = *ncu;
    return s;
  }
  auto issue = metric(k, "smsp__issue_active.avg.per_cycle_active");
  if (!issue || *issue <= 0) return s;
  std::optional<double> warps = metric(k, "smsp__warps_active.avg.per_cycle_active");
  if (!warps)
    if (auto pct = metric(k, "sm__warps_active.avg.pct_of_peak_sustained_active")) warps = *pct / 100 * kWarpsPerScheduler;
  if (warps && *warps > 0) s.total = *warps / *issue;
  return s;
}

std::optional<double> membar_share(const Evidence& e, const profile::KernelMetrics& k) {
  const profile::KernelSass* sass = e.sass_for(k);
  if (!sass) return std::nullopt;
  auto it = sass->sass.by_opcode.find("MEMBAR");
  if (it == sass->sass.by_opcode.end() || it->second <= 0) return std::nullopt;
  if (k.get_or("gpu__time_duration.sum", 0) * 1e-9 < kMinStallKernelSeconds) return std::nullopt;
  const StallCycles s = stall_cycles(k);
  if (s.present < 4) return std::nullopt;
  const double share = s.unexplained_share();
  if (share < kUnexplainedShare) return std::nullopt;
  return share;
}

}  // namespace kp::analysis
