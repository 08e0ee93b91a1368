#include "verdict/physics_floor.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::eval {

const char* to_string(PrecisionClass c) {
  switch (c) {
    case PrecisionClass::kTf32: return "TF32";
    case PrecisionClass::kBf16: return "BF16/FP16";
    case PrecisionClass::kInt8Fp8: return "INT8/FP8";
    case PrecisionClass::kFp64: return "FP64";
  }
  return "?";
}

PrecisionClass precision_class(task::DType d) {
  switch (d) {
    case task::DType::kFp32: return PrecisionClass::kTf32;
    case task::DType::kFp64: return PrecisionClass::kFp64;
    case task::DType::kFp16:
    case task::DType::kBf16: return PrecisionClass::kBf16;
    case task::DType::kInt32:
    case task::DType::kInt64:
    case task::DType::kBool: return PrecisionClass::kInt8Fp8;
  }
  return PrecisionClass::kInt8Fp8;
}

namespace {
// Peak order, lowest first; the task takes the highest among its inputs.
int rank(PrecisionClass c) {
  switch (c) {
    case PrecisionClass::kFp64: return 0;
    case PrecisionClass::kTf32: return 1;
    case PrecisionClass::kBf16: return 2;
    case PrecisionClass::kInt8Fp8: return 3;
  }
  return 3;
}
}  // namespace

PrecisionClass precision_class(const task::Task& task) {
  if (task.inputs.empty()) return PrecisionClass::kInt8Fp8;
  PrecisionClass best = precision_class(task.inputs.front().dtype);
  for (const auto& in : task.inputs)
    if (rank(precision_class(in.dtype)) > rank(best)) best = precision_class(in.dtype);
  return best;
}

double flops_per_clock_per_sm(int cc_major, int cc_minor, PrecisionClass c) {
  // Dense (not 2:4 sparse) tensor-core rates from NVIDIA's A100 and H100 whitepapers.
  struct Row {
    int major, minor;
    double tf32, bf16, int8, fp64;
  };
  static const Row kTable[] = {
      {8, 0, 1024, 2048, 4096, 128},
      {9, 0, 2048, 4096, 8192, 256},
  };
  for (const Row& r : kTable) {
    if (r.major != cc_major || r.minor != cc_minor) continue;
    switch (c) {
      case PrecisionClass::kTf32: return r.tf32;
      case PrecisionClass::kBf16: return r.bf16;
      case PrecisionClass::kInt8Fp8: return r.int8;
      case PrecisionClass::kFp64: return r.fp64;
    }
  }
  return 0;
}

double peak_flops_per_s(const DeviceInfo& d, PrecisionClass c) {
  return static_cast<double>(d.sm_count) * static_cast<double>(d.sm_clock_khz) * 1e3 *
         flops_per_clock_per_sm(d.cc_major, d.cc_minor, c);
}

double sm_path_bytes_per_s(const DeviceInfo& d) {
  return static_cast<double>(d.sm_count) * static_cast<double>(d.sm_clock_khz) * 1e3 * kSmPathBytesPerClock;
}

PhysicsFloor physics_floor(const task::Task& task, const DeviceInfo& device, TimingMethod method, double margin) {
  PhysicsFloor f;
  if (!(margin > 0)) margin = 1.0;
  std::vector<std::string> notes;
  double bytes_s = 0, flops_s = 0;
  std::string bytes_term, flops_term;

  const double bytes = task.ideal_bytes > 0 ? task.ideal_bytes : static_cast<double>(task.io_bytes());
  if (device.dram_bytes_per_s <= 0) {
    notes.push_back("bytes term not applied: the DRAM bandwidth was not measured");
  } else if (bytes <= 0) {
    notes.push_back("bytes term not applied: the task moves no bytes");
  } else if (method == TimingMethod::kGraphReplay) {
    // Nothing flushes the L2 between replayed calls: up to l2_bytes may come from it, at no more
    // than the SMs' own data path takes in; the rest from DRAM.
    const double l2 = std::min(bytes, static_cast<double>(std::max<int64_t>(device.l2_bytes, 0)));
    const double sm_path = sm_path_bytes_per_s(device);
    const double dram_part = (bytes - l2) / (device.dram_bytes_per_s * margin);
    if (l2 > 0 && sm_path > 0) {
      bytes_s = dram_part + l2 / (sm_path * margin);
      bytes_term = fmt::format("({:.3g} B - {:.3g} B of L2) / ({:.3g} B/s x {:g}) + {:.3g} B / ({:.3g} B/s SM data "
                               "path x {:g})",
                               bytes, l2, device.dram_bytes_per_s, margin, l2, sm_path, margin);
    } else if (bytes > l2) {
      bytes_s = dram_part;
      bytes_term =
          fmt::format("({:.3g} B - {:.3g} B of L2) / ({:.3g} B/s x {:g})", bytes, l2, device.dram_bytes_per_s, margin);
    } else {
      notes.push_back("bytes term not applied: the working set fits in L2, graph replay does not flush it, and the "
                      "SMs' data path is unknown (no SM count or clock)");
    }
  } else {
    bytes_s = bytes / (device.dram_bytes_per_s * margin);
    bytes_term = fmt::format("{:.3g} B / ({:.3g} B/s x {:g})", bytes, device.dram_bytes_per_s, margin);
  }

  const PrecisionClass pc = precision_class(task);
  const double peak = peak_flops_per_s(device, pc);
  if (task.ideal_flops <= 0) {
    notes.push_back("FLOP term not applied: the task gives no FLOPs");
  } else if (peak <= 0) {
    notes.push_back(
        fmt::format("FLOP term not applied: no {} peak for sm_{}{}", to_string(pc), device.cc_major, device.cc_minor));
  } else {
    flops_s = task.ideal_flops / (peak * margin);
    flops_term =
        fmt::format("{:.3g} FLOP / ({:.3g} FLOP/s {} peak x {:g})", task.ideal_flops, peak, to_string(pc), margin);
  }

  f.seconds = std::max(bytes_s, flops_s);
  f.bytes_bound = bytes_s > 0 && bytes_s >= flops_s;
  if (!bytes_term.empty() && !flops_term.empty())
    f.basis = fmt::format("max({}, {})", bytes_term, flops_term);
  else
    f.basis = bytes_term.empty() ? flops_term : bytes_term;
  if (!notes.empty()) f.basis += (f.basis.empty() ? "" : "; ") + join(notes, "; ");
  return f;
}

}  // namespace kp::eval
