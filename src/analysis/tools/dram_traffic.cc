#include "analysis/tools/dram_traffic.h"

#include <algorithm>
#include <memory>

namespace kp::analysis {

std::unique_ptr<Tool> make_host_device_copies();

namespace {

constexpr double kMinReadShare = 0.25;  // of the compulsory bytes, for the reads-only excess
constexpr const char* kHit = "lts__t_sector_hit_rate.pct";
constexpr const char* kLtsBytes = "lts__t_bytes.sum";
constexpr const char* kRead = "dram__bytes_read.sum";
constexpr const char* kWrite = "dram__bytes_write.sum";

// Off the DRAM roof only the DRAM part of the time shrinks (dram_over_ideal.cc says why).
double off_roof_gain(const RooflineResult& roofline, double ratio) {
  double dram = 0;
  for (const auto& r : roofline.roofs)
    if (r.name == "DRAM") dram = std::clamp(r.fraction, 0.0, 1.0);
  double gain = 1 / (1 - dram * (1 - 1 / ratio));
  if (roofline.headroom > 1) gain = std::min(gain, roofline.headroom);
  return gain;
}

// Kernel k's re-reads, when they miss L2 and reach DRAM; `call_dram` is the call's DRAM bytes.
std::optional<L2MissedRereads> missed_rereads(const Evidence& e, const profile::KernelMetrics& k, double call_dram) {
  auto hit = metric(k, kHit);
  auto lts = metric(k, kLtsBytes);
  if (!hit || !lts) return std::nullopt;
  const double dram = *metric(k, kRead) + *metric(k, kWrite);
  const double compulsory = e.ideal_bytes * dram / call_dram;
  if (compulsory <= 0 || *hit >= kMaxL2HitPct) return std::nullopt;
  const double read_share = compulsory - *metric(k, kWrite);
  L2MissedRereads m;
  m.kernel = &k;
  m.hit_pct = *hit;
  m.l2_bytes = *lts;
  m.compulsory = compulsory;
  m.by_reads = read_share >= kMinReadShare * compulsory;
  m.reuse = *lts / compulsory;
  m.excess = m.by_reads ? *metric(k, kRead) / read_share : dram / compulsory;
  if (m.reuse < kMinL2Reuse || m.excess < kMinDramReReads) return std::nullopt;
  return m;
}

}  // namespace

std::optional<CallDramBytes> call_dram_bytes(const Evidence& e) {
  CallDramBytes out;
  for (const auto& k : e.kernels) {
    auto rd = metric(k, kRead), wr = metric(k, kWrite);
    if (!rd || !wr) return std::nullopt;
    out.total += *rd + *wr;
    if (*rd + *wr > out.largest) {
      out.largest = *rd + *wr;
      out.largest_kernel = k.name;
    }
  }
  return out;
}

std::optional<DramExcess> dram_excess(const Evidence& e) {
  // A sample of the call's launches cannot be set against the whole call's ideal.
  if (e.ideal_bytes <= 0 || e.kernels.empty() || e.unprofiled_launches > 0) return std::nullopt;
  auto bytes = call_dram_bytes(e);
  if (!bytes) return std::nullopt;
  DramExcess x;
  x.bytes = *bytes;
  x.ratio = bytes->total / e.ideal_bytes;
  if (x.ratio < kMinDramOverIdeal) return std::nullopt;
  x.memory = e.roofline && e.roofline->cls == BottleneckClass::kMemoryBound &&
             (e.roofline->limiter.empty() || e.roofline->limiter == "DRAM");
  if (x.memory) {
    x.estimated_gain = x.ratio;
  } else if (e.roofline) {
    x.estimated_gain = off_roof_gain(*e.roofline, x.ratio);
    if (x.estimated_gain < kMinDramOverIdealGain) return std::nullopt;
  }
  return x;
}

std::vector<L2MissedRereads> l2_missed_rereads(const Evidence& e) {
  if (!e.roofline || e.roofline->cls != BottleneckClass::kMemoryBound || e.ideal_bytes <= 0 ||
      e.unprofiled_launches > 0)
    return {};
  if (!make_host_device_copies()->run(e).empty()) return {};  // the copy is the cause
  // Intermediates between kernels are dram_over_ideal's (low_l2_hit_rate.cc says why).
  if (e.kernels.size() > 1 && dram_excess(e)) return {};
  auto call_dram = call_dram_bytes(e);
  if (!call_dram || call_dram->total <= 0) return {};
  std::vector<L2MissedRereads> out;
  for (const auto& k : e.kernels)
    if (auto m = missed_rereads(e, k, call_dram->total)) out.push_back(*m);
  return out;
}

}  // namespace kp::analysis
