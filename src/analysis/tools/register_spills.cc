// register_spills: ptxas ran out of registers and spilled live values to local memory (per-
// thread DRAM backed by L1/L2), so the kernel issues LDL/STL for what should be register reads.
//
// Per SASS function with ptxas resources (KernelResources::spill_store_bytes,
// spill_load_bytes; per thread): fires when either is > 0. A stack frame without spill bytes (a
// dynamically indexed local array, an ABI call frame) is not a spill: quiet, as is a function
// whose ptxas report is missing (LDL/STL alone cannot tell a spill from a local array).
// SassSummary::local_loads / local_stores (static LDL/STL counts) are context.
// Severity by spill bytes (loads + stores per thread) and the class: critical at >=
// kCriticalBytes (256 B: 64 4-byte values moved per thread, each spill reload a
// long-scoreboard wait) in a latency- or memory-bound call (spill traffic then competes with
// the kernel's own); warning at >= kWarningBytes (32 B) or in such a call; info for a few
// bytes in a compute-bound call (ptxas keeps them off the hot loop as a rule). Estimated gain:
// 1 (unknown: static counts do not say how often the spill code runs).
//
// Worked example, tests/data/ptxas: "1024 bytes stack frame, 2212 bytes spill stores, 2324
// bytes spill loads", 24 registers under -maxrregcount 24: 4536 B >= 256, latency-bound call:
// critical; guidance names the register cap. The same kernel built without the cap (0 spill
// bytes, 1024 B stack frame left by a local array): quiet.
#include <cstdio>
#include <string>

#include "analysis/tool.h"

namespace kp::analysis {
namespace {

constexpr double kCriticalBytes = 256;
constexpr double kWarningBytes = 32;

class RegisterSpills final : public Tool {
 public:
  const ToolSpec& spec() const override {
    static const ToolSpec s{
        "register_spills",
        "Register spills to local memory",
        "ptxas spilled registers to local memory: every spilled value costs a store and a "
        "long-latency reload through L1/L2.",
        {},
        {},
        true,
        false};
    return s;
  }

  std::vector<Finding> run(const Evidence& e) const override {
    const bool waits = e.roofline && (e.roofline->cls == BottleneckClass::kLatencyBound ||
                                      e.roofline->cls == BottleneckClass::kMemoryBound);
    std::vector<Finding> out;
    for (const auto& s : e.sass) {
      if (!s.resources || !s.resources->has_spills()) continue;
      const build::KernelResources& r = *s.resources;
      const double bytes = double(r.spill_store_bytes + r.spill_load_bytes);
      Finding f;
      f.tool = spec().name;
      f.kernel = s.name;
      if (bytes >= kCriticalBytes && waits) {
        f.severity = Severity::kCritical;
        f.evidence.push_back(evidence("spill bytes per thread (stores + loads)", bytes, ">=", kCriticalBytes, "B"));
      } else if (bytes >= kWarningBytes || waits) {
        f.severity = Severity::kWarning;
        f.evidence.push_back(evidence("spill bytes per thread (stores + loads)", bytes, ">=",
                                      bytes >= kWarningBytes ? kWarningBytes : 1, "B"));
      } else {
        f.severity = Severity::kInfo;
        f.evidence.push_back(evidence("spill bytes per thread (stores + loads)", bytes, ">", 0, "B"));
      }
      f.evidence.push_back(context("ptxas spill stores", double(r.spill_store_bytes), "B"));
      f.evidence.push_back(context("ptxas spill loads", double(r.spill_load_bytes), "B"));
      f.evidence.push_back(context("SASS LDL", double(s.sass.local_loads)));
      f.evidence.push_back(context("SASS STL", double(s.sass.local_stores)));
      f.evidence.push_back(context("registers per thread", r.registers));
      if (r.register_limit > 0) f.evidence.push_back(context("register limit (-maxrregcount)", r.register_limit));

      char title[200];
      std::snprintf(title, sizeof title, "register spills: %lld B stored, %lld B reloaded per thread (%d registers)",
                    static_cast<long long>(r.spill_store_bytes), static_cast<long long>(r.spill_load_bytes),
                    r.registers);
      f.title = title;
      std::string g;
      if (r.register_limit > 0)
        g = "ptxas was capped at " + std::to_string(r.register_limit) +
            " registers (-maxrregcount or __launch_bounds__): raise or drop the cap; the occupancy "
            "it buys is lost to spill traffic. ";
      g += "Reduce the live values per thread: smaller per-thread tiles or fewer accumulators, "
           "less unrolling of loops that keep many values alive, recompute cheap values instead "
           "of keeping them, and index arrays only with compile-time constants so they stay in "
           "registers. Check __launch_bounds__(threads, minBlocks): a high minBlocks forces "
           "fewer registers (65,536 per SM shared by all resident threads).";
      f.guidance = g;
      f.actions = {"reduce_registers"};
      out.push_back(std::move(f));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tool> make_register_spills() { return std::make_unique<RegisterSpills>(); }

}  // namespace kp::analysis
