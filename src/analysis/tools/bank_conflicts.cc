// bank_conflicts: shared-memory accesses that conflict in the 32 banks, so that one warp
// instruction needs several wavefronts (passes through the shared-memory pipeline).
//
// Per kernel, loads and stores together (stage-2 counters):
//   conflicts  = l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum
//   wavefronts = l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum
//   instructions = smsp__sass_inst_executed_op_shared_{ld,st}.sum
// Ideally one wavefront per shared instruction for 32-bit accesses (a 128-bit access needs 4 at
// least, so wavefronts per instruction is only context); the conflict counter counts the extra
// wavefronts. Fires when conflicts / wavefronts >= kMinConflictShare (10%: ncu's
// SharedMemoryConflicts rule) and the kernel executes shared instructions. Stage 2 runs it on every
// class but launch-bound (shared-memory replays show up as memory, latency or SM% compute). Severity: info below
// 25%, warning from kWarningShare (25%), critical from kCriticalShare (50%: on average every
// access is at least 2-way).
// Estimated gain, as ncu's rule: the conflict share of the shared-memory pipeline's work times
// how busy L1 is, gain = 1 / (1 - share x l1tex__throughput.avg.pct_of_peak_sustained_active /
// 100); 1 when L1 throughput was not collected.
//
// Worked example, a 32x32 FP32 tile transposed through shared memory without padding: column
// reads tile[threadIdx.x][i] hit one bank: 32-way. 1,048,576 LDS, 33,554,432 wavefronts,
// 32,505,856 conflicts: share 0.97 >= 0.5, 32 wavefronts per instruction; L1 at 85%: gain
// 1 / (1 - 0.97 x 0.85) = 5.6x, critical. Padded to [32][33]: 1,048,576 wavefronts, 0
// conflicts: quiet.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kMinConflictShare = 0.10;
constexpr double kWarningShare = 0.25;
constexpr double kCriticalShare = 0.5;
constexpr const char* kConfLd = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
constexpr const char* kConfSt = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
constexpr const char* kWaveLd = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
constexpr const char* kWaveSt = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
constexpr const char* kInstLd = "smsp__sass_inst_executed_op_shared_ld.sum";
constexpr const char* kInstSt = "smsp__sass_inst_executed_op_shared_st.sum";
constexpr const char* kL1Pct = "l1tex__throughput.avg.pct_of_peak_sustained_active";

class BankConflicts final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "bank_conflicts",
        "Shared-memory bank conflicts",
        "Shared loads or stores whose threads hit the same bank at different addresses, so each "
        "warp access is replayed over several wavefronts.",
        {BottleneckClass::kMemoryBound, BottleneckClass::kLatencyBound, BottleneckClass::kComputeBound},
        {kConfLd, kConfSt, kWaveLd, kWaveSt, kInstLd, kInstSt, kL1Pct},
        false,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    std::vector<Finding> out;
    for (const auto& k : e.kernels) {
      auto cld = metric(k, kConfLd), cst = metric(k, kConfSt);
      auto wld = metric(k, kWaveLd), wst = metric(k, kWaveSt);
      auto ild = metric(k, kInstLd), ist = metric(k, kInstSt);
      if (!cld || !cst || !wld || !wst || !ild || !ist) continue;
      const double conflicts = *cld + *cst, wavefronts = *wld + *wst, instructions = *ild + *ist;
      if (wavefronts <= 0 || instructions <= 0) continue;
      const double share = std::min(1.0, conflicts / wavefronts);
      if (share < kMinConflictShare) continue;

      Finding f;
      f.tool = spec().name;
      f.kernel = k.name;
      f.severity = share >= kCriticalShare ? Severity::kCritical
                   : share >= kWarningShare ? Severity::kWarning
                                            : Severity::kInfo;
      f.evidence.push_back(evidence("bank conflicts / shared wavefronts", share, ">=",
                                    share >= kCriticalShare ? kCriticalShare
                                    : share >= kWarningShare ? kWarningShare
                                                             : kMinConflictShare));
      const double per_inst = wavefronts / instructions;
      f.evidence.push_back(context("shared wavefronts per shared instruction", per_inst));
      if (*ild > 0 && *wld > 0) f.evidence.push_back(context("load conflicts / load wavefronts", *cld / *wld));
      if (*ist > 0 && *wst > 0) f.evidence.push_back(context("store conflicts / store wavefronts", *cst / *wst));
      f.evidence.push_back(context("bank conflicts", conflicts));
      if (auto l1 = metric(k, kL1Pct)) {
        f.evidence.push_back(context(kL1Pct, *l1, "%"));
        const double busy = std::clamp(*l1 / 100, 0.0, 1.0);
        f.estimated_gain = std::max(1.0, 1 / std::max(0.05, 1 - share * busy));
      }
      const bool loads = *cld >= *cst;
      char title[200];
      std::snprintf(title, sizeof title,
                    "shared-memory bank conflicts: %.0f%% of wavefronts are conflicts (%.1f wavefronts per "
                    "instruction), mostly on %s",
                    100 * share, per_inst, loads ? "loads" : "stores");
      f.title = title;
      f.guidance =
          "Threads of a warp that access the same bank (address / 4 mod 32) at different "
          "addresses are serialized. For a 2-D tile read along columns, pad each row by one "
          "element (float tile[32][33]) or swizzle the column index (col ^ row); for 64/128-bit "
          "accesses make each quarter-warp cover 32 consecutive banks. Check the indexing of the "
          "conflicting " + std::string(loads ? "loads" : "stores") + " first.";
      f.actions = {"avoid_bank_conflicts"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_bank_conflicts() { return std::make_unique<BankConflicts>(); }

}  // namespace kp::analysis
