// uncoalesced_access: global loads or stores whose warps touch many more 32-byte sectors than
// the data they use, so that L1/L2 move several times the useful bytes.
//
// Per kernel and direction (ld, st), from stage-2 counters:
//   sectors per request = l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum /
//                         l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum
//   bytes used per sector = smsp__sass_average_data_bytes_per_sector_mem_global_op_{ld,st}.ratio
//                           (of 32; ncu's MemoryCacheAccessPattern rule compares it with 32)
// A warp of 32 threads reading w bits each, adjacent, needs 32 * w / 8 / 32 = w / 8 sectors per
// request: 4 for 32-bit (128 B per warp), 16 for 128-bit (profiling.md section 2, [S11]). The
// width is the widest SASS global access of that direction (32-bit without SASS).
// A direction fires when either
//   (a) bytes used per sector < kMinBytesPerSector (16 of 32: at least half of every sector
//       fetched is wasted) and a request touches more sectors than a coalesced one would
//       (sectors per request > ideal): a warp whose lanes all read one address, or whose
//       single active lane stores one value, touches one sector per request and uses 4 bytes of
//       it, which no reordering of addresses improves (the tail-effect flaw's fixed twin reads
//       one float per warp that way: 1 sector per request, 4 bytes used), or
//   (b) sectors per request > kExcessFactor (2) x that ideal while bytes per sector < 32;
// and it carries at least kMinSectorShare (5%) of the kernel's global sectors (a last-lane
// store of one value per row is not worth reporting); and the wasted share of all the
// kernel's global sectors (w below) is at least kMinWastedShare (10%): the WMMA GEMM's
// 16-bit epilogue stores waste 4% of its sectors, a 1.05x gain at best. Only memory- or latency-bound calls
// (the stage-2 classes; quiet on other classes when the roofline is known).
// Estimated gain: the wasted share of global sectors w = sum(sectors x (1 - used / 32)) /
// sum(sectors) removed from the memory part m of the time: 1 / ((1 - m) + m (1 - w)), with
// m = 1 when memory-bound and 0.5 when latency-bound (memory waits are part of the latency).
// Severity: critical when used bytes <= 8 (a 4x waste) and memory-bound; else warning.
//
// Worked example, the transpose seed (bench/results/h200-2026-12-03-profile/run2): stores
// 134,217,728 sectors / 4,194,304 requests = 32 per request > 2 x 4, 4.0 bytes used of 32 < 16:
// fires. Loads 16,777,216 sectors at 32 B: clean. w = 134.2M x 28/32 / 151.0M = 0.78; memory-
// bound: gain 1 / 0.22 = 4.5x; used 4 <= 8: critical. layernorm (4 sectors per request, 32 B):
// quiet.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kMinBytesPerSector = 16;
constexpr double kFullSector = 32;
constexpr double kExcessFactor = 2;
constexpr double kMinSectorShare = 0.05;
constexpr double kMinWastedShare = 0.10;
constexpr double kCriticalBytesPerSector = 8;

struct Direction {
  const char* name;  // "load", "store"
  const char* sectors;
  const char* requests;
  const char* bytes_per_sector;
};

constexpr Direction kLoad{"load", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                          "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                          "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"};
constexpr Direction kStore{"store", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
                           "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"};

int widest(const std::map<int, int64_t>& bits) {
  int w = 0;
  for (const auto& [b, n] : bits)
    if (n > 0) w = std::max(w, b);
  return w;
}

class UncoalescedAccess final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "uncoalesced_access",
        "Uncoalesced global access",
        "Global loads or stores whose warps touch many more 32-byte sectors than the bytes they "
        "use (sectors per request, bytes used per sector): memory moves several times the data.",
        {BottleneckClass::kMemoryBound, BottleneckClass::kLatencyBound},
        {kLoad.sectors, kLoad.requests, kStore.sectors, kStore.requests, kLoad.bytes_per_sector,
         kStore.bytes_per_sector},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    if (e.roofline && e.roofline->cls != BottleneckClass::kMemoryBound &&
        e.roofline->cls != BottleneckClass::kLatencyBound)
      return {};
    const double memory_share =
        e.roofline && e.roofline->cls == BottleneckClass::kLatencyBound ? 0.5 : 1.0;
    std::vector<Finding> out;
    for (const auto& k : e.kernels) {
      const profile::KernelSass* sass = e.sass_for(k);
      struct Seen {
        const Direction* d;
        double sectors, requests, used, ideal;
      };
      std::vector<Seen> seen;
      double all_sectors = 0, wasted = 0;
      for (const Direction* d : {&kLoad, &kStore}) {
        auto sectors = metric(k, d->sectors);
        auto requests = metric(k, d->requests);
        auto used = metric(k, d->bytes_per_sector);
        if (!sectors || !requests || !used || *requests <= 0 || *sectors <= 0) continue;
        int width = sass ? widest(d == &kLoad ? sass->sass.global_load_bits : sass->sass.global_store_bits) : 0;
        if (width == 0) width = 32;
        seen.push_back({d, *sectors, *requests, std::clamp(*used, 0.0, kFullSector), width / 8.0});
        all_sectors += *sectors;
        wasted += *sectors * (1 - seen.back().used / kFullSector);
      }
      if (all_sectors <= 0) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      double worst_used = kFullSector;
      std::string which;
      for (const Seen& s : seen) {
        const double per_request = s.sectors / s.requests;
        const bool sparse = s.used < kMinBytesPerSector && per_request > s.ideal;
        const bool scattered = per_request > kExcessFactor * s.ideal && s.used < kFullSector;
        if (!(sparse || scattered) || s.sectors < kMinSectorShare * all_sectors) continue;
        const std::string dir = s.d->name;
        if (sparse)
          f.evidence.push_back(evidence(dir + " bytes used per 32-byte sector", s.used, "<", kMinBytesPerSector, "B"));
        else
          f.evidence.push_back(context(dir + " bytes used per 32-byte sector", s.used, "B"));
        if (scattered)
          f.evidence.push_back(evidence(dir + " sectors per request", per_request, ">", kExcessFactor * s.ideal));
        else
          f.evidence.push_back(context(dir + " sectors per request", per_request));
        f.evidence.push_back(context(dir + " ideal sectors per request (" + std::to_string(int(s.ideal * 8)) +
                                         "-bit per thread)", s.ideal));
        f.evidence.push_back(context(dir + " share of global sectors", s.sectors / all_sectors));
        worst_used = std::min(worst_used, s.used);
        which += which.empty() ? dir + "s" : " and " + dir + "s";
      }
      if (which.empty()) continue;
      const double w = wasted / all_sectors;
      if (w < kMinWastedShare) continue;
      f.evidence.push_back(context("wasted share of global sectors", w));
      f.estimated_gain = std::max(1.0, 1 / ((1 - memory_share) + memory_share * (1 - w)));
      f.severity = worst_used <= kCriticalBytesPerSector && memory_share == 1.0 ? Severity::kCritical
                                                                                : Severity::kWarning;
      char title[200];
      std::snprintf(title, sizeof title, "uncoalesced global %s: %.0f of every 32 bytes fetched are used",
                    which.c_str(), worst_used);
      f.title = title;
      f.guidance =
          "Adjacent threads of a warp must touch adjacent addresses: index the fastest-varying "
          "array dimension with threadIdx.x. Where the access pattern is inherently strided (a "
          "transpose, a column walk), stage a tile through shared memory: read it with coalesced "
          "rows, then write it out (or consume it) along the other dimension, padding the tile by "
          "one element to avoid bank conflicts. Wasted sector bytes cost L1, L2 and DRAM bandwidth.";
      f.actions = {"coalesce", "reuse_data"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_uncoalesced_access() { return std::make_unique<UncoalescedAccess>(); }

}  // namespace kp::analysis
