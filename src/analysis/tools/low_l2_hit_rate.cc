// low_l2_hit_rate: a memory-bound kernel that re-reads data, yet most of its L2 accesses miss,
// so the re-reads go to DRAM instead of being served by the 50 MB L2.
//
// A streaming kernel (each byte read once) misses L2 by nature; a low hit rate is a flaw only
// when the data is touched again. So per kernel, all of:
//   - the call is memory-bound (quiet without a roofline);
//   - lts__t_sector_hit_rate.pct (stage 2) < kMaxHitPct (50%);
//   - L2 traffic lts__t_bytes.sum (stage 1) >= kMinReuse (2x) the kernel's compulsory bytes;
//   - and DRAM bytes (dram__bytes_read.sum + write) >= kMinDramExcess (1.5x) the compulsory
//     bytes: the re-reads really reach DRAM.
// Compulsory bytes: the task's Evidence::ideal_bytes, split over the call's kernels by their
// DRAM bytes (one kernel: all of it); quiet when ideal_bytes is 0 (without it a re-read cannot
// be told from a stream; the L2 metrics alone do not say).
// Estimated gain: kernel time over the floor with DRAM at compulsory bytes and L2 still moving
// its bytes: max(compulsory / DRAM ceiling, lts bytes / L2 ceiling); without ceilings, DRAM
// bytes / compulsory. Severity warning; critical when the gain is >= kCriticalGain (3x).
//
// Worked example, the softmax seed (bench/results/h200-2026-12-03-profile/run2): hit 27.8% < 50;
// lts 1,587,704,640 B = 2.96x the ideal 536,870,912 B; DRAM 1,034,251,520 B = 1.93x: fires.
// 303.6 us against max(536.9e6 / 4.27e12, 1.588e9 / 8.45e12) = max(126 us, 188 us) = 188 us:
// gain 1.62x, warning. The transpose seed (hit 89%) and layernorm (hit 63%): quiet.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kMaxHitPct = 50;
constexpr double kMinReuse = 2;
constexpr double kMinDramExcess = 1.5;
constexpr double kCriticalGain = 3;
constexpr const char* kHit = "lts__t_sector_hit_rate.pct";
constexpr const char* kLtsBytes = "lts__t_bytes.sum";
constexpr const char* kRead = "dram__bytes_read.sum";
constexpr const char* kWrite = "dram__bytes_write.sum";

class LowL2HitRate final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "low_l2_hit_rate",
        "Low L2 hit rate on re-read data",
        "A memory-bound kernel re-reads its data, but most L2 accesses miss: the re-reads go to "
        "DRAM. A block order or tile size that keeps the working set in L2 removes them.",
        {BottleneckClass::kMemoryBound},
        {kHit},
        false,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    if (!e.roofline || e.roofline->cls != BottleneckClass::kMemoryBound || e.ideal_bytes <= 0 ||
        e.unprofiled_launches > 0)
      return {};
    double call_dram = 0;
    for (const auto& k : e.kernels) {
      auto rd = metric(k, kRead), wr = metric(k, kWrite);
      if (!rd || !wr) return {};
      call_dram += *rd + *wr;
    }
    if (call_dram <= 0) return {};
    std::vector<Finding> out;
    for (const auto& k : e.kernels) {
      auto hit = metric(k, kHit);
      auto lts = metric(k, kLtsBytes);
      if (!hit || !lts) continue;
      const double dram = *metric(k, kRead) + *metric(k, kWrite);
      const double compulsory = e.ideal_bytes * dram / call_dram;
      if (compulsory <= 0 || *hit >= kMaxHitPct) continue;
      const double reuse = *lts / compulsory, excess = dram / compulsory;
      if (reuse < kMinReuse || excess < kMinDramExcess) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.estimated_gain = excess;
      auto ns = metric(k, "gpu__time_duration.sum");
      if (ns && *ns > 0 && e.ceilings.dram_bytes_per_s > 0 && e.ceilings.l2_bytes_per_s > 0) {
        const double floor =
            std::max(compulsory / e.ceilings.dram_bytes_per_s, *lts / e.ceilings.l2_bytes_per_s);
        f.estimated_gain = std::max(1.0, *ns * 1e-9 / floor);
      }
      f.severity = f.estimated_gain >= kCriticalGain ? Severity::kCritical : Severity::kWarning;
      f.evidence.push_back(evidence(kHit, *hit, "<", kMaxHitPct, "%"));
      f.evidence.push_back(evidence("L2 bytes / compulsory bytes", reuse, ">=", kMinReuse, "x"));
      f.evidence.push_back(evidence("DRAM bytes / compulsory bytes", excess, ">=", kMinDramExcess, "x"));
      f.evidence.push_back(context("compulsory bytes (task ideal, this kernel's share)", compulsory, "B"));
      char title[200];
      std::snprintf(title, sizeof title,
                    "L2 hit rate %.0f%% while the kernel re-reads its data (%.1fx the compulsory bytes through "
                    "L2, %.1fx from DRAM)",
                    *hit, reuse, excess);
      f.title = title;
      f.guidance =
          "The data is touched more than once but evicted from L2 before the next touch. Shrink "
          "the reuse distance: process a row (or a tile) completely while it is resident, "
          "schedule blocks that share inputs close together (grouped / swizzled block order for "
          "a GEMM-like grid, a row per block rather than a pass per block), or keep the reused "
          "part in shared memory or registers. A persisting-L2 access policy window "
          "(cudaAccessPolicyWindow) can pin a small reused buffer.";
      f.actions = {"tile_for_l2", "reuse_data"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_low_l2_hit_rate() { return std::make_unique<LowL2HitRate>(); }

}  // namespace kp::analysis
