// dram_over_ideal: the call moves far more DRAM bytes than the task needs: inputs re-read,
// passes that are not fused, intermediate tensors written and read back.
//
// DRAM bytes = dram__bytes_read.sum + dram__bytes_write.sum (stage 1) summed over the call's
// kernels (every kernel must have both; quiet otherwise), against Evidence::ideal_bytes (the
// task's compulsory traffic: each input read once, each output written once; quiet when 0).
// Fires when the ratio is >= kMinDramOverIdeal (1.5x, dram_traffic.h: beyond what L2 misses on
// halo rows, alignment and write-allocate explain); critical when >= kCriticalRatio (3x) and the
// call is memory-bound, warning otherwise.
// A call of one kernel leaves its excess to the tool that names its cause, and stays quiet:
//   - register_spills' cause: the kernel spills (ptxas spill bytes, or LDL/STL in its SASS),
//     so local memory may carry the excess; the Range Profiler lists give no local-memory
//     DRAM bytes to subtract, and the fix is the spill (the spill flaw moves 244x its ideal);
//   - low_l2_hit_rate's: that tool fires on the kernel (re-reads that miss L2: the fix is
//     locality, not fusion).
// Calls of several kernels keep the finding: moving data between kernels is what fusing fixes.
// Estimated gain: memory-bound on the DRAM roof, time scales with bytes: gain = ratio. Otherwise
// (another class, or memory-bound on L1, L2 or shared memory) only the DRAM part f of the time
// (the DRAM roof's fraction of its ceiling) shrinks: 1 / (1 - f (1 - 1 / ratio)); f = 0 (no
// DRAM roof) gives 1, capped by the roofline headroom (a kernel at its compute roof gains no more
// than the roof allows, whatever bytes it saves). Such a finding is reported only when that gain
// is >= kMinDramOverIdealGain (1.1): GEMMs larger than L2 re-read their panels from DRAM
// (cuBLAS moves 1.7x the ideal at 4096^3) and lose nothing by it while DRAM stays far from its
// roof. On the H200 the hopper-path flaw's fixed twin, a cuBLAS BF16 GEMM, moved 1.72x its ideal
// with DRAM at 23% of the calibrated roof: 1 / (1 - 0.23 x 0.42) = 1.11x, but it ran at 98% of
// the tensor roof (headroom 1.02x): quiet.
// The test itself is dram_excess (dram_traffic.h), shared with low_l2_hit_rate; low_l2_hit_rate's
// own test, asked here of a one-kernel call, is l2_missed_rereads there.
//
// Worked example, the softmax seed (bench/results/h200-2026-12-03-profile/run2) on a 2^26-float
// input: ideal 2 x 268,435,456 = 536,870,912 B; measured 764,120,320 + 270,131,200 =
// 1,034,251,520 B: 1.93x >= 1.5 (the input is read twice: once for the max, once for the sum and
// the output). Memory-bound, gain 1.93x; warning (< 3x). An online softmax that reads the row
// once moves ~1.0x: quiet.
#include <cstdio>
#include <memory>
#include <string>

#include "analysis/tool.h"
#include "analysis/tools/dram_traffic.h"

namespace kp::analysis {

namespace {

// Whether a tool that names the cause of a single kernel's excess DRAM bytes explains it.
bool explained_elsewhere(const Evidence& e) {
  if (e.kernels.size() != 1) return false;
  const profile::KernelSass* ks = e.sass_for(e.kernels[0]);
  if (ks && ks->resources && (ks->resources->spill_load_bytes > 0 || ks->resources->spill_store_bytes > 0)) return true;
  if (ks && (ks->sass.local_loads > 0 || ks->sass.local_stores > 0)) return true;
  for (const auto& m : l2_missed_rereads(e))  // low_l2_hit_rate's findings
    if (m.kernel->name == e.kernels[0].name) return true;
  return false;
}

constexpr double kCriticalRatio = 3;

class DramOverIdeal final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "dram_over_ideal",
        "DRAM traffic above the ideal",
        "The call's DRAM bytes against the task's ideal bytes: re-reads, unfused passes and "
        "intermediate tensors show up as a multiple of the compulsory traffic.",
        {},
        {},
        false,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    auto x = dram_excess(e);
    if (!x || explained_elsewhere(e)) return {};
    const double ratio = x->ratio, bytes = x->bytes.total, biggest = x->bytes.largest;
    const std::string& biggest_name = x->bytes.largest_kernel;

    Finding f;
    f.tool = spec().name;
    f.severity = ratio >= kCriticalRatio && x->memory ? Severity::kCritical : Severity::kWarning;
    f.estimated_gain = x->estimated_gain;
    f.evidence.push_back(evidence("DRAM bytes / ideal bytes", ratio, ">=",
                                  f.severity == Severity::kCritical ? kCriticalRatio : kMinDramOverIdeal, "x"));
    f.evidence.push_back(context("DRAM bytes (read + write)", bytes, "B"));
    f.evidence.push_back(context("task ideal bytes", e.ideal_bytes, "B"));
    const size_t n = e.kernels.size();
    f.evidence.push_back(context("kernels in the call", double(n)));
    if (n > 1) f.evidence.push_back(context("largest kernel's share of the DRAM bytes", biggest / bytes));

    char title[200];
    std::snprintf(title, sizeof title, "DRAM traffic is %.2fx the task's ideal (%.3g B against %.3g B)", ratio, bytes,
                  e.ideal_bytes);
    f.title = title;
    if (n > 1) {
      f.guidance = "The call's " + std::to_string(n) +
                   " kernels move the data several times: fuse them so intermediates stay in "
                   "registers or shared memory instead of making a round trip through DRAM "
                   "(largest mover: " + biggest_name +
                   "). Within each kernel, read each input once: keep a tile on chip while it is "
                   "reused, and order blocks so neighbours share their working set in L2.";
      f.actions = {"fuse", "reuse_data", "tile_for_l2"};
    } else {
      f.guidance =
          "The kernel reads (or writes) the same data more than once from DRAM. Keep what is "
          "reused on chip: one pass over each row with the partial results in registers (an "
          "online reduction instead of separate max / sum / normalize passes), tiles held in "
          "shared memory while they are reused, and a block order (or smaller tiles) whose "
          "working set fits in the 50 MB L2.";
      f.actions = {"reuse_data", "tile_for_l2", "fuse"};
    }
    return {std::move(f)};
  }
};

}  // namespace

std::unique_ptr<Tool> make_dram_over_ideal() { return std::make_unique<DramOverIdeal>(); }

}  // namespace kp::analysis
