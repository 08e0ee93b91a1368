// The DRAM-traffic tests that dram_over_ideal and low_l2_hit_rate share. Each tool stays quiet
// where the other names the cause: a single kernel's re-reads that miss L2 are low_l2_hit_rate's,
// bytes moved between the kernels of a longer call are dram_over_ideal's. So each needs the other's
// test, and both live here instead of one tool running the other. The tools' files give the
// reasons, the thresholds' origins and worked examples.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/tool.h"

namespace kp::analysis {

// dram_over_ideal fires at DRAM bytes >= kMinDramOverIdeal (1.5x) the task's ideal; off the DRAM
// roof, only when its estimated gain is >= kMinDramOverIdealGain (1.1x).
inline constexpr double kMinDramOverIdeal = 1.5;
inline constexpr double kMinDramOverIdealGain = 1.1;
// low_l2_hit_rate fires on a kernel with an L2 hit rate < kMaxL2HitPct (50%), L2 bytes >=
// kMinL2Reuse (2x) its compulsory bytes, and DRAM traffic >= kMinDramReReads (1.5x) its compulsory
// reads (or bytes).
inline constexpr double kMaxL2HitPct = 50;
inline constexpr double kMinL2Reuse = 2;
inline constexpr double kMinDramReReads = 1.5;

// dram__bytes_read.sum + dram__bytes_write.sum over the call's kernels.
struct CallDramBytes {
  double total = 0;            // every kernel's reads and writes, bytes
  double largest = 0;          // the bytes of the kernel that moved the most ...
  std::string largest_kernel;  // ... and its name; "" when no kernel moved a byte
};
// nullopt when a kernel lacks either metric.
std::optional<CallDramBytes> call_dram_bytes(const Evidence& e);

// The call's DRAM traffic over the task's ideal, as dram_over_ideal reports it.
struct DramExcess {
  CallDramBytes bytes;
  double ratio = 0;           // bytes.total / Evidence::ideal_bytes, >= kMinDramOverIdeal
  bool memory = false;        // memory-bound on the DRAM roof (or on an unnamed one)
  double estimated_gain = 1;  // ratio when `memory`; else the DRAM part of the time shrunk,
                              // capped by the roofline headroom; 1 without a roofline
};
// nullopt when the traffic is not over the ideal enough to report: no ideal bytes, no kernels,
// unprofiled launches, a kernel without its DRAM counters, a ratio below kMinDramOverIdeal, or a
// gain below kMinDramOverIdealGain. On a call of several kernels, dram_over_ideal fires exactly
// when this has a value; on one kernel it also leaves the excess to the tool that names its cause.
std::optional<DramExcess> dram_excess(const Evidence& e);

// One kernel whose re-reads miss L2, as low_l2_hit_rate reports it.
struct L2MissedRereads {
  const profile::KernelMetrics* kernel = nullptr;  // in the evidence's kernels
  double hit_pct = 0;     // lts__t_sector_hit_rate.pct, < kMaxL2HitPct
  double l2_bytes = 0;    // lts__t_bytes.sum
  double compulsory = 0;  // the task's ideal bytes, this kernel's share
  double reuse = 0;       // l2_bytes / compulsory, >= kMinL2Reuse
  bool by_reads = false;  // excess is DRAM reads over the compulsory reads (else bytes over bytes)
  double excess = 0;      // >= kMinDramReReads
};
// The kernels low_l2_hit_rate fires on, in launch order; none when the call is not memory-bound,
// has no ideal bytes or unprofiled launches, a kernel lacks its DRAM counters, host_device_copies
// fires on the call, or (several kernels) dram_over_ideal does.
std::vector<L2MissedRereads> l2_missed_rereads(const Evidence& e);

}  // namespace kp::analysis
