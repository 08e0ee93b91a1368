// narrow_loads: a memory-bound kernel whose global loads and stores are coalesced but 32 bits
// wide or narrower per thread (LDG.E, LDG.E.U16, ...), where 128-bit accesses (float4, int4:
// LDG.E.128) would move the same bytes in a quarter of the instructions.
//
// Narrow accesses cost LSU issue slots, L1 request queue entries and registers per byte in
// flight; with too few bytes in flight per thread a memory-bound kernel stays short of DRAM
// bandwidth. The H200 calibration copy kernel uses 128-bit grid-stride loads and stores for
// that reason (3.94 TB/s); 32-bit copies of the same shape reach less.
//
// Fires on a kernel when all of:
//   - the call is memory-bound, or latency-bound short of a memory roof (DRAM or L2: too few
//     bytes in flight is exactly what keeps such a kernel off its roof); quiet without a class;
//   - few warps are resident: sm__warps_active.avg.pct_of_peak_sustained_active <
//     kMaxWarpsActivePct (50%). With most of the SM's 64 warps resident, 32-bit streams already
//     keep enough bytes in flight: on the H200 a full-occupancy float4 twin of a 32-bit
//     elementwise kernel ran only 4% faster (78% against 80% of DRAM bandwidth,
//     bench/results/h200-2026-12-03-flaws), and the fixed twins of seven other flaws, all 32-bit
//     at full occupancy, had nothing to gain from it. With 16 to 32 warps per SM (fewer is
//     small_grid's or occupancy_limiter's) each warp's access width decides the bytes in flight;
//   - those few warps are not capped by a cause another tool names (residency_capped in
//     occupancy.h: theoretical occupancy < 50%, SMs left without a block, or < 16 warps per SM
//     from the grid): more warps is the first fix there, and wider accesses would be advice
//     about the symptom (on the H200, the occupancy_limiter and small_grid flaws' 32-bit kernels
//     at 28% and 12% of the warps);
//   - its SASS (SassSummary::global_load_bits, global_store_bits) carries at least
//     kMinNarrowShare (50%) of its static global access bytes (instruction count x width) in
//     accesses of 32 bits or less; a kernel already mostly 128-bit is left alone;
//   - the access is coalesced: smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio
//     (and _st when the kernel stores) >= kMinCoalescedBytes (24 of 32); uncoalesced access is
//     uncoalesced_access's finding, and widening a strided access does not fix it.
// Estimated gain: the headroom to the limiting roof, at most kMaxGain (1.3x): vectorizing closes
// the issue-side gap between a 32-bit and a 128-bit stream, not a bandwidth limit. Severity
// warning when that headroom is >= kWarningHeadroom (1.15x), else info.
//
// Worked example, the softmax seed (bench/results/h200-2026-12-03-profile/run2): memory-bound,
// DRAM at 0.80 (headroom 1.25x); SASS 39 32-bit loads and 5 32-bit stores: narrow share 100%;
// 32 bytes used per sector on loads and stores: fires, gain min(1.25, 1.3) = 1.25, warning.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/occupancy.h"

namespace kp::analysis {
namespace {

constexpr double kMinNarrowShare = 0.5;
constexpr double kMaxWarpsActivePct = 50;
constexpr const char* kWarpsActive = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr double kMinCoalescedBytes = 24;
constexpr double kMaxGain = 1.3;
constexpr double kWarningHeadroom = 1.15;
constexpr const char* kLdBytes = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio";
constexpr const char* kStBytes = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio";

struct Widths {
  double narrow_bytes = 0;  // static bytes per thread in accesses <= 32 bits
  double all_bytes = 0;
  int64_t narrow = 0, all = 0;  // instructions
};

void add(Widths& w, const std::map<int, int64_t>& bits) {
  for (const auto& [b, n] : bits) {
    const double bytes = double(n) * b / 8;
    w.all_bytes += bytes;
    w.all += n;
    if (b <= 32) {
      w.narrow_bytes += bytes;
      w.narrow += n;
    }
  }
}

class NarrowLoads final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "narrow_loads",
        "Narrow global loads",
        "A memory-bound kernel with few resident warps whose coalesced global loads and stores are "
        "32 bits or narrower per thread: 128-bit accesses keep four times the bytes in flight.",
        {BottleneckClass::kMemoryBound, BottleneckClass::kLatencyBound},
        {kLdBytes, kStBytes},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    if (!e.roofline) return {};
    const std::string& lim = e.roofline->limiter;
    const bool memory_roof = lim == "DRAM" || lim.rfind("L2", 0) == 0 || lim.rfind("memory", 0) == 0;
    if (e.roofline->cls != BottleneckClass::kMemoryBound &&
        !(e.roofline->cls == BottleneckClass::kLatencyBound && memory_roof))
      return {};
    std::vector<Finding> out;
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      const auto& k = e.kernels[i];
      const profile::KernelSass* sass = e.sass_for(k);
      if (!sass) continue;
      Widths w;
      add(w, sass->sass.global_load_bits);
      add(w, sass->sass.global_store_bits);
      if (w.all_bytes <= 0) continue;
      const double share = w.narrow_bytes / w.all_bytes;
      if (share < kMinNarrowShare) continue;
      auto ld = metric(k, kLdBytes);
      if (sass->sass.global_loads() > 0 && (!ld || *ld < kMinCoalescedBytes)) continue;
      auto st = metric(k, kStBytes);
      if (sass->sass.global_stores() > 0 && (!st || *st < kMinCoalescedBytes)) continue;
      auto warps = metric(k, kWarpsActive);
      if (!warps || *warps >= kMaxWarpsActivePct) continue;
      if (residency_capped(e, i)) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      const double headroom = std::max(1.0, e.roofline->headroom);
      f.estimated_gain = std::min(headroom, kMaxGain);
      f.severity = headroom >= kWarningHeadroom ? Severity::kWarning : Severity::kInfo;
      f.evidence.push_back(evidence("share of SASS global access bytes <= 32-bit", share, ">=", kMinNarrowShare));
      f.evidence.push_back(context("narrow global access instructions", double(w.narrow)));
      f.evidence.push_back(context("global access instructions", double(w.all)));
      if (ld) f.evidence.push_back(evidence("load bytes used per 32-byte sector", *ld, ">=", kMinCoalescedBytes, "B"));
      if (st) f.evidence.push_back(evidence("store bytes used per 32-byte sector", *st, ">=", kMinCoalescedBytes, "B"));
      f.evidence.push_back(evidence("warps active, % of the SM's peak", *warps, "<", kMaxWarpsActivePct, "%"));
      f.evidence.push_back(context("headroom to the limiting roof (" + e.roofline->limiter + ")", headroom, "x"));
      char title[160];
      std::snprintf(title, sizeof title,
                    "%lld of %lld global accesses are 32-bit or narrower, with %.0f%% of the SM's warps resident",
                    static_cast<long long>(w.narrow), static_cast<long long>(w.all), *warps);
      f.title = title;
      f.guidance =
          "Make each thread move 16 bytes per access: load and store through float4 / int4 (or "
          "reinterpret_cast to a 16-byte vector type) so ptxas emits LDG.E.128 / STG.E.128, and "
          "give each thread 4 (FP32) or 8 (FP16/BF16) adjacent elements. The pointer must be "
          "16-byte aligned (cudaMalloc is) and the row length a multiple of the vector width; "
          "handle the remainder with a scalar tail loop.";
      f.actions = {"vectorize_loads"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_narrow_loads() { return std::make_unique<NarrowLoads>(); }

}  // namespace kp::analysis
