#include "analysis/roofline.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::analysis {

const char* to_string(BottleneckClass c) {
  switch (c) {
    case BottleneckClass::kMemoryBound: return "memory-bound";
    case BottleneckClass::kComputeBound: return "compute-bound";
    case BottleneckClass::kLatencyBound: return "latency-bound";
    case BottleneckClass::kLaunchBound: return "launch-bound";
  }
  return "latency-bound";
}

std::optional<BottleneckClass> bottleneck_class_from_string(std::string_view s) {
  for (auto c : {BottleneckClass::kMemoryBound, BottleneckClass::kComputeBound, BottleneckClass::kLatencyBound,
                 BottleneckClass::kLaunchBound})
    if (s == to_string(c)) return c;
  return std::nullopt;
}

namespace {

constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kSmPct = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kMemPct = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kWaves = "launch__waves_per_multiprocessor";
constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* kIssue = "smsp__issue_active.avg.per_cycle_active";

// A 3-significant-digit number with an SI prefix: (3.39e12, "B/s") -> "3.39 TB/s".
std::string si(double v, const char* unit) {
  static const std::pair<double, const char*> kPrefixes[] = {
      {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  const char* prefix = "";
  for (const auto& [scale, p] : kPrefixes) {
    if (std::fabs(v) >= scale) {
      v /= scale;
      prefix = p;
      break;
    }
  }
  int decimals = std::fabs(v) >= 100 ? 0 : std::fabs(v) >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}{}", v, decimals, prefix, unit);
}

// 3 significant digits without an exponent: 0.171, 15.6, 970, 1550.
std::string num3(double v) {
  double a = std::fabs(v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

std::string pct(double fraction) {
  double v = fraction * 100;
  if (v >= 10) return fmt::format("{:.0f}%", v);
  if (v >= 1) return fmt::format("{:.1f}%", v);
  return fmt::format("{:.2f}%", v);
}

double ratio(double a, double b) { return b > 0 && std::isfinite(a) ? a / b : 0; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// sum of weight * metric over the terms present; nullopt when none is.
std::optional<double> weighted(const profile::KernelMetrics& m,
                               std::initializer_list<std::pair<const char*, double>> terms) {
  std::optional<double> out;
  for (const auto& [metric, w] : terms) {
    if (auto v = m.get(metric)) out = out.value_or(0) + w * *v;
  }
  return out;
}

struct RoofSpec {
  const char* name;
  const char* unit;
  bool memory;
  std::optional<double> amount;
  double peak;
  const char* what;  // for the "not collected" line
};

std::vector<RoofSpec> roof_specs(const profile::KernelMetrics& m, const profile::Ceilings& c) {
  auto op = [](const char* name) { return fmt::format("smsp__sass_thread_inst_executed_op_{}_pred_on.sum", name); };
  auto tensor = [&](const char* path) { return m.get(fmt::format("sm__ops_path_tensor_src_{}.sum", path)); };
  std::optional<double> l2 = m.get("lts__t_bytes.sum");
  if (!l2) {
    if (auto sectors = m.get("lts__t_sectors.sum")) l2 = 32 * *sectors;
  }
  std::string fadd = op("fadd"), fmul = op("fmul"), ffma = op("ffma");
  std::string dadd = op("dadd"), dmul = op("dmul"), dfma = op("dfma");
  std::string hadd = op("hadd"), hmul = op("hmul"), hfma = op("hfma");
  return {
      {"DRAM", "B/s", true, weighted(m, {{"dram__bytes_read.sum", 1}, {"dram__bytes_write.sum", 1}}),
       c.dram_bytes_per_s, "DRAM bytes"},
      {"L2", "B/s", true, l2, c.l2_bytes_per_s, "L2 bytes"},
      {"FP32", "FLOP/s", false, weighted(m, {{fadd.c_str(), 1}, {fmul.c_str(), 1}, {ffma.c_str(), 2}}), c.fp32_flops,
       "FP32 instruction counts"},
      {"FP64", "FLOP/s", false, weighted(m, {{dadd.c_str(), 1}, {dmul.c_str(), 1}, {dfma.c_str(), 2}}), c.fp64_flops,
       "FP64 instruction counts"},
      {"FP16", "FLOP/s", false, weighted(m, {{hadd.c_str(), 2}, {hmul.c_str(), 2}, {hfma.c_str(), 4}}), c.fp16_flops,
       "FP16 instruction counts"},
      {"Tensor FP16", "FLOP/s", false, tensor("fp16"), c.tensor_fp16_flops, "tensor FP16 ops"},
      {"Tensor BF16", "FLOP/s", false, tensor("bf16_dst_fp32"), c.tensor_bf16_flops, "tensor BF16 ops"},
      {"Tensor TF32", "FLOP/s", false, tensor("tf32_dst_fp32"), c.tensor_tf32_flops, "tensor TF32 ops"},
      {"Tensor FP64", "FLOP/s", false, tensor("fp64"), c.tensor_fp64_flops, "tensor FP64 ops"},
      {"Tensor INT8", "OP/s", false, tensor("int8"), c.tensor_int8_ops, "tensor INT8 ops"},
      {"Tensor FP8", "FLOP/s", false, tensor("fp8_sparsity_off"), c.tensor_fp8_flops, "tensor FP8 ops"},
  };
}

std::string roof_sentence(const Roof& r, const profile::Ceilings& c, double seconds) {
  std::string work = r.memory ? si(r.amount, "B") : si(r.amount, r.unit == "OP/s" ? "OP" : "FLOP");
  return fmt::format("{} {} = {} of the {} {} ({} in {})", r.name, si(r.achieved, r.unit.c_str()), pct(r.fraction),
                     profile::to_string(c.source), si(r.peak, r.unit.c_str()), work, format_seconds(seconds));
}

// The name a person says for a tensor roof: "Tensor BF16" -> "BF16".
std::string precision_of(const std::string& roof) { return starts_with(roof, "Tensor ") ? roof.substr(7) : roof; }

bool is_tensor(const std::string& roof) { return starts_with(roof, "Tensor "); }

std::string ncu_summary(const NcuRuleVerdict& v) {
  return fmt::format("SM {:.1f}%, Mem {:.1f}%: {}", v.sm_pct, v.mem_pct, v.title);
}

struct Launch {
  double busy = 0;  // device busy time, seconds
  double call = 0;  // the call's length, seconds
  double trace_idle = 0;
  bool from_trace = false;
};

std::string explain_disagreement(const RooflineResult& r, const Launch& launch, const profile::Ceilings& c) {
  const auto& n = r.ncu_rule;
  if (n.verdict.empty())
    return "ncu's rule needs sm__throughput and gpu__compute_memory_throughput percentages, which were not collected";
  const Roof* top = r.roofs.empty() ? nullptr : &r.roofs.front();
  switch (r.cls) {
    case BottleneckClass::kLaunchBound:
      if (launch.from_trace)
        return fmt::format(
            "ncu sees each kernel alone ({}); the device sat idle {} of the {} call between {} "
            "launches of median {} (the trace: {} idle)",
            ncu_summary(n), pct(r.idle_fraction), format_seconds(launch.call), r.kernel_count,
            format_seconds(r.median_kernel_seconds), pct(launch.trace_idle));
      return fmt::format(
          "ncu sees each kernel alone ({}); the call took {} of event time but its {} kernels ran "
          "only {} (median {})",
          ncu_summary(n), format_seconds(launch.call), r.kernel_count, format_seconds(launch.busy),
          format_seconds(r.median_kernel_seconds));
    case BottleneckClass::kComputeBound:
      if (top && !top->memory && r.limiter == top->name) {
        if (is_tensor(top->name))
          return fmt::format("ncu's SM% of {:.0f}% ignores that the tensor cores ran at {} of their {} peak ({})",
                             n.sm_pct, pct(top->fraction), precision_of(top->name), ncu_summary(n));
        return fmt::format(
            "ncu's SM% of {:.0f}% is measured against theoretical peaks; {} ran at {} of its {} "
            "ceiling ({})",
            n.sm_pct, top->name, pct(top->fraction), profile::to_string(c.source), ncu_summary(n));
      }
      break;
    case BottleneckClass::kMemoryBound:
      if (top && top->memory && r.limiter == top->name) {
        if (n.as_class == BottleneckClass::kComputeBound)
          return fmt::format("ncu weighs SM% {:.0f}% above Mem% {:.0f}%, but {} moved {} = {} of its {} ceiling",
                             n.sm_pct, n.mem_pct, top->name, si(top->achieved, "B/s"), pct(top->fraction),
                             profile::to_string(c.source));
        return fmt::format(
            "ncu's Mem% of {:.0f}% is measured against the theoretical peak; {} ran at {} of the {} "
            "{} ({})",
            n.mem_pct, top->name, pct(top->fraction), profile::to_string(c.source), si(top->peak, "B/s"),
            ncu_summary(n));
      }
      break;
    case BottleneckClass::kLatencyBound:
      if (top)
        return fmt::format("ncu says {} but no roof reaches {:.0f}% of its ceiling: the highest is {} at {}",
                           ncu_summary(n), kRoofBoundFraction * 100, top->name, pct(top->fraction));
      break;
  }
  if (n.verdict == "balanced")
    return fmt::format(
        "ncu calls SM {:.0f}% and Mem {:.0f}% balanced (within {:.0f} points) and names no class; "
        "the larger of the two, or the highest roof, decides here",
        n.sm_pct, n.mem_pct, kNcuBalancedPoints);
  return fmt::format("ncu says {} ({}); here {} is the limiter at {}", n.verdict, ncu_summary(n),
                     r.limiter.empty() ? "no roof" : r.limiter, pct(r.sol_fraction));
}

}  // namespace

NcuRuleVerdict ncu_sol_bottleneck(const profile::KernelMetrics& m, int sm_count) {
  NcuRuleVerdict v;
  auto sm = m.get(kSmPct);
  auto mem = m.get(kMemPct);
  v.waves = m.get(kWaves);
  if (!v.waves && sm_count > 0) {
    int64_t blocks = m.grid[0] * std::max<int64_t>(m.grid[1], 1) * std::max<int64_t>(m.grid[2], 1);
    // Fewer blocks than SMs cannot fill one wave; any other grid is unknown without the metric.
    if (blocks > 0 && blocks < sm_count) v.waves = static_cast<double>(blocks) / sm_count;
  }
  if (!sm || !mem) return v;
  v.sm_pct = *sm;
  v.mem_pct = *mem;
  if (v.sm_pct < kNcuHighPct && v.mem_pct < kNcuHighPct) {
    if (v.sm_pct < kNcuLatencyPct && v.mem_pct < kNcuLatencyPct) {
      if (v.waves && *v.waves < kNcuWaves) {
        v.verdict = "small-grid";
        v.title = "Small Grid";
      } else {
        v.verdict = "latency";
        v.title = "Latency Issue";
      }
      v.as_class = BottleneckClass::kLatencyBound;
    } else if (std::fabs(v.sm_pct - v.mem_pct) >= kNcuBalancedPoints) {
      bool compute = v.sm_pct > v.mem_pct;
      v.verdict = compute ? "compute" : "memory";
      v.title = compute ? "High Compute Throughput" : "High Memory Throughput";
      v.as_class = compute ? BottleneckClass::kComputeBound : BottleneckClass::kMemoryBound;
    } else {
      v.verdict = "balanced";
      v.title = "Balanced Throughput";
    }
  } else {
    v.verdict = "high-throughput";
    v.title = "High Throughput";
    v.as_class = v.mem_pct > v.sm_pct ? BottleneckClass::kMemoryBound : BottleneckClass::kComputeBound;
  }
  return v;
}

namespace {

// What classify gathers about the call before it decides, and reads again for the evidence.
struct CallFacts {
  profile::KernelMetrics all;                 // the kernels' metrics combined
  const profile::TraceCall* trace = nullptr;  // the traced call, if any
  std::vector<std::string> missing;           // what was not collected
  std::vector<std::string> no_ceiling;        // arithmetic roofs with work but no ceiling
  double total_flop = 0;                      // FLOP and ops of every precision
  std::optional<double> dram_bytes;
  double ridge_peak = 0;                      // the ridge precision's peak ...
  std::string ridge_unit;                     // ... and its unit
  Launch launch;
  bool short_kernels = false;                 // the median kernel is shorter than kShortKernelSeconds
};

// Durations: ncu's per kernel, else the trace's.
void measure_durations(const RooflineInput& in, CallFacts& f, RooflineResult& r) {
  std::vector<double> ncu_durations;
  for (const auto& k : in.kernels)
    if (auto d = k.get(kDuration)) ncu_durations.push_back(*d * 1e-9);
  std::vector<double> trace_durations;
  if (f.trace)
    for (const auto& k : f.trace->kernels) trace_durations.push_back(k.duration_s());
  for (double d : ncu_durations) r.kernel_seconds += d;
  if (ncu_durations.empty()) {
    f.missing.push_back("kernel durations");
    for (double d : trace_durations) r.kernel_seconds += d;
  }
  r.kernel_count = !in.kernels.empty() ? static_cast<int>(in.kernels.size()) : static_cast<int>(trace_durations.size());
  r.median_kernel_seconds = median(!trace_durations.empty() ? trace_durations : ncu_durations);
}

// Roofs: every one with work, a ceiling and a duration to divide by, largest fraction first.
void measure_roofs(const profile::Ceilings& c, CallFacts& f, RooflineResult& r) {
  for (const auto& spec : roof_specs(f.all, c)) {
    if (std::string(spec.name) == "DRAM") f.dram_bytes = spec.amount;
    if (!spec.amount) {
      f.missing.push_back(spec.what);
      continue;
    }
    if (!spec.memory) f.total_flop += *spec.amount;
    if (!spec.memory && *spec.amount <= 0) continue;
    if (spec.peak <= 0) {
      if (!spec.memory) f.no_ceiling.push_back(spec.name);
      continue;
    }
    if (r.kernel_seconds <= 0) continue;
    Roof roof;
    roof.name = spec.name;
    roof.unit = spec.unit;
    roof.memory = spec.memory;
    roof.amount = *spec.amount;
    roof.peak = spec.peak;
    roof.achieved = roof.amount / r.kernel_seconds;
    roof.fraction = roof.achieved / roof.peak;
    r.roofs.push_back(std::move(roof));
  }
  std::stable_sort(r.roofs.begin(), r.roofs.end(),
                   [](const Roof& a, const Roof& b) { return a.fraction > b.fraction; });
}

// Arithmetic intensity and the ridge of the precision with the most work.
void measure_intensity(const profile::Ceilings& c, CallFacts& f, RooflineResult& r) {
  r.arithmetic_intensity = ratio(f.total_flop, f.dram_bytes.value_or(0));
  const Roof* dominant = nullptr;
  for (const auto& roof : r.roofs)
    if (!roof.memory && (!dominant || roof.amount > dominant->amount)) dominant = &roof;
  f.ridge_peak = dominant ? dominant->peak : c.fp32_flops;
  f.ridge_unit = dominant ? dominant->unit : "FLOP/s";
  r.ridge_intensity = ratio(f.ridge_peak, c.dram_bytes_per_s);
  if (r.ridge_intensity > 0) r.ridge_roof = dominant ? dominant->name : "FP32";
}

// ncu's rule on the call as a whole: waves as ncu aggregates them (the maximum over launches),
// the grid of the largest launch.
NcuRuleVerdict ncu_rule_for_call(const RooflineInput& in, const profile::KernelMetrics& all) {
  profile::KernelMetrics for_ncu = all;
  std::optional<double> max_waves;
  for (const auto& k : in.kernels) {
    if (auto w = k.get(kWaves)) max_waves = std::max(max_waves.value_or(0), *w);
    auto blocks = [](const profile::KernelMetrics& x) { return x.grid[0] * x.grid[1] * x.grid[2]; };
    if (blocks(k) > blocks(for_ncu)) for_ncu.grid = k.grid;
  }
  if (max_waves) for_ncu.values[kWaves] = *max_waves;
  return ncu_sol_bottleneck(for_ncu, in.ceilings.sm_count);
}

// The system view: how much of the call the device sat idle.
Launch measure_launch(const RooflineInput& in, const profile::TraceCall* trace, RooflineResult& r) {
  Launch launch;
  launch.busy = trace && trace->busy_s > 0 ? trace->busy_s : r.kernel_seconds;
  launch.from_trace = trace && trace->span_s > 0;
  launch.call = in.call_seconds > 0 ? in.call_seconds : (launch.from_trace ? trace->span_s : 0);
  launch.trace_idle = launch.from_trace ? ratio(trace->gaps_s, trace->span_s) : 0;
  if (launch.call > 0 && launch.busy > 0) r.idle_fraction = std::clamp(1 - launch.busy / launch.call, 0.0, 1.0);
  return launch;
}

// The class, limiter, sol_fraction and headroom, in the order of roofline.h's decision.
void decide(const CallFacts& f, RooflineResult& r) {
  const Roof* top = r.roofs.empty() ? nullptr : &r.roofs.front();
  double ncu_max = std::max(r.ncu_rule.sm_pct, r.ncu_rule.mem_pct);
  if (r.idle_fraction >= kLaunchIdleFraction && f.short_kernels) {
    r.cls = BottleneckClass::kLaunchBound;
    r.limiter = "launch overhead";
    r.sol_fraction = f.launch.busy / f.launch.call;
    r.headroom = f.launch.call / f.launch.busy;
  } else if (top && top->fraction >= kRoofBoundFraction) {
    r.cls = top->memory ? BottleneckClass::kMemoryBound : BottleneckClass::kComputeBound;
    r.limiter = top->name;
    r.sol_fraction = top->fraction;
    r.headroom = 1 / top->fraction;
  } else if (!r.ncu_rule.verdict.empty() && ncu_max >= kNcuLatencyPct) {
    bool memory = r.ncu_rule.mem_pct > r.ncu_rule.sm_pct;
    r.cls = memory ? BottleneckClass::kMemoryBound : BottleneckClass::kComputeBound;
    r.limiter = memory ? "memory (ncu Mem%)" : "SM (ncu SM%)";
    r.sol_fraction = ncu_max / 100;
    r.headroom = 100 / ncu_max;
  } else {
    r.cls = BottleneckClass::kLatencyBound;
    if (top) {
      r.limiter = top->name;
      r.sol_fraction = top->fraction;
      r.headroom = top->fraction > 0 ? 1 / top->fraction : 0;
    } else if (!r.ncu_rule.verdict.empty() && ncu_max > 0) {
      bool memory = r.ncu_rule.mem_pct > r.ncu_rule.sm_pct;
      r.limiter = memory ? "memory (ncu Mem%)" : "SM (ncu SM%)";
      r.sol_fraction = ncu_max / 100;
      r.headroom = 100 / ncu_max;
    } else {
      r.headroom = 0;
    }
  }
}

void add_launch_evidence(const RooflineInput& in, const CallFacts& f, RooflineResult& r) {
  if (r.cls != BottleneckClass::kLaunchBound) return;
  auto& ev = r.evidence;
  const Launch& launch = f.launch;
  if (launch.from_trace)
    ev.push_back(
        fmt::format("the device sat idle {} of the traced call: {} kernels busy {} in a span of {} "
                    "({} of gaps between launches)",
                    pct(launch.trace_idle), r.kernel_count, format_seconds(f.trace->busy_s),
                    format_seconds(f.trace->span_s), format_seconds(f.trace->gaps_s)));
  if (in.call_seconds > 0)
    ev.push_back(fmt::format("the call's event time {} is {:.2f}x the device's busy time {}",
                             format_seconds(in.call_seconds), launch.call / launch.busy,
                             format_seconds(launch.busy)));
  ev.push_back(fmt::format("median kernel {} (< {}): launch latency, not the kernels, sets the call's time",
                           format_seconds(r.median_kernel_seconds), format_seconds(kShortKernelSeconds)));
}

void add_roof_evidence(const profile::Ceilings& c, RooflineResult& r) {
  auto& ev = r.evidence;
  if (r.kernel_seconds <= 0) ev.push_back("no kernel duration was measured: no achieved rates, no roofs");
  for (size_t i = 0; i < r.roofs.size() && i < 3; ++i) ev.push_back(roof_sentence(r.roofs[i], c, r.kernel_seconds));
  for (const auto& roof : r.roofs)
    if (roof.fraction > 1)
      ev.push_back(
          fmt::format("{} is above its ceiling ({}): the ceiling is low (recalibrate) or the kernel uses "
                      "2:4-sparse tensor instructions",
                      roof.name, pct(roof.fraction)));
}

// Compute- or memory-bound on ncu's SM% or Mem% alone: a unit without a roof here is busy.
void add_ncu_unit_evidence(const CallFacts& f, RooflineResult& r) {
  if (r.cls != BottleneckClass::kComputeBound && r.cls != BottleneckClass::kMemoryBound) return;
  if (!starts_with(r.limiter, "SM (") && !starts_with(r.limiter, "memory (")) return;
  auto& ev = r.evidence;
  ev.push_back(fmt::format(
      "no roof reaches {:.0f}%, but ncu's {} {:.0f}% of peak: a unit without a roof here "
      "({}) is busy",
      kRoofBoundFraction * 100, r.cls == BottleneckClass::kMemoryBound ? "Mem%" : "SM%", r.sol_fraction * 100,
      r.cls == BottleneckClass::kMemoryBound ? "L1/shared memory, or L2 without a ceiling"
                                             : "integer, load/store or special-function issue"));
  if (r.cls == BottleneckClass::kComputeBound && f.total_flop == 0)
    ev.push_back(
        "no floating-point or tensor work was counted: the SM is busy with integer, address or control "
        "instructions");
}

void add_dram_evidence(const CallFacts& f, RooflineResult& r) {
  if (r.cls != BottleneckClass::kMemoryBound || r.limiter != "DRAM") return;
  auto& ev = r.evidence;
  auto read = f.all.get("dram__bytes_read.sum"), write = f.all.get("dram__bytes_write.sum");
  if (read && write) ev.push_back(fmt::format("DRAM read {} and wrote {}", si(*read, "B"), si(*write, "B")));
  if (auto issue = f.all.get(kIssue); issue && *issue < kLowIssuePerCycle)
    ev.push_back(
        fmt::format("each scheduler issued {:.2f} instructions per active cycle: few instructions keep "
                    "DRAM this busy",
                    *issue));
}

void add_intensity_evidence(const profile::Ceilings& c, const CallFacts& f, RooflineResult& r) {
  if (r.arithmetic_intensity > 0 && r.ridge_intensity > 0)
    r.evidence.push_back(fmt::format(
        "arithmetic intensity {} FLOP/B, {} the {} ridge of {} FLOP/B ({} over {})", num3(r.arithmetic_intensity),
        r.arithmetic_intensity < r.ridge_intensity ? "below" : "above", r.ridge_roof, num3(r.ridge_intensity),
        si(f.ridge_peak, f.ridge_unit.c_str()), si(c.dram_bytes_per_s, "B/s")));
}

// The traced call was launch-bound but the call is not: say why.
void add_trace_idle_evidence(const CallFacts& f, RooflineResult& r) {
  const Launch& launch = f.launch;
  if (r.cls != BottleneckClass::kLaunchBound && launch.from_trace && launch.trace_idle >= kLaunchIdleFraction)
    r.evidence.push_back(fmt::format(
        "the traced call was idle {} between {} launches, but {}", pct(launch.trace_idle), r.kernel_count,
        f.short_kernels ? fmt::format("the timed call only {}", pct(r.idle_fraction))
                        : fmt::format("its median kernel of {} is long enough to hide launches",
                                      format_seconds(r.median_kernel_seconds))));
}

void add_latency_evidence(const profile::Ceilings& c, const CallFacts& f, RooflineResult& r) {
  if (r.cls != BottleneckClass::kLatencyBound) return;
  auto& ev = r.evidence;
  const Roof* top = r.roofs.empty() ? nullptr : &r.roofs.front();
  if (top)
    ev.push_back(fmt::format("no roof reaches {:.0f}% of its ceiling: the highest is {} at {}",
                             kRoofBoundFraction * 100, top->name, pct(top->fraction)));
  if (auto occ = f.all.get(kOccupancy))
    ev.push_back(fmt::format("achieved occupancy {:.0f}% of the warp slots{}", *occ,
                             *occ < kLowOccupancyPct ? " (low: too few warps to hide latency)" : ""));
  if (auto issue = f.all.get(kIssue))
    ev.push_back(fmt::format("each scheduler issued {:.2f} instructions per active cycle{}", *issue,
                             *issue < kLowIssuePerCycle ? " (below 0.6: warps are stalled most cycles)" : ""));
  if (r.ncu_rule.verdict == "small-grid" && r.ncu_rule.waves)
    ev.push_back(fmt::format("the grid fills {}{:.2f} waves of the GPU: too few blocks for its {} SMs",
                             f.all.get(kWaves) ? "" : "at most ", *r.ncu_rule.waves, c.sm_count));
}

// What was not collected or had no ceiling, and a call with nothing to classify.
void add_gap_evidence(const RooflineInput& in, CallFacts& f, RooflineResult& r) {
  auto& ev = r.evidence;
  auto& missing = f.missing;
  if (!missing.empty()) {
    // Six tensor paths missing together read as one.
    auto tensor =
        std::count_if(missing.begin(), missing.end(), [](const std::string& m) { return starts_with(m, "tensor "); });
    if (tensor == 6) {
      missing.erase(std::remove_if(missing.begin(), missing.end(),
                                   [](const std::string& m) { return starts_with(m, "tensor "); }),
                    missing.end());
      missing.push_back("tensor ops (every path)");
    }
    ev.push_back("not collected: " + join(missing, ", ") + "; those roofs are missing");
  }
  if (!f.no_ceiling.empty()) ev.push_back("work without a ceiling for it (roof skipped): " + join(f.no_ceiling, ", "));
  if (in.kernels.empty() && !f.trace) ev.push_back("no kernel metrics and no trace: nothing to classify");
}

// Evidence, most telling first.
void add_evidence(const RooflineInput& in, CallFacts& f, RooflineResult& r) {
  add_launch_evidence(in, f, r);
  add_roof_evidence(in.ceilings, r);
  add_ncu_unit_evidence(f, r);
  add_dram_evidence(f, r);
  add_intensity_evidence(in.ceilings, f, r);
  add_trace_idle_evidence(f, r);
  add_latency_evidence(in.ceilings, f, r);
  if (!r.ncu_rule.verdict.empty())
    r.evidence.push_back(fmt::format("ncu's SOLBottleneck rule: {} ({})", ncu_summary(r.ncu_rule), r.ncu_rule.verdict));
  add_gap_evidence(in, f, r);
}

}  // namespace

RooflineResult classify(const RooflineInput& in) {
  RooflineResult r;
  CallFacts f;
  f.all = profile::combine_kernels(in.kernels);
  f.trace = in.trace ? &*in.trace : nullptr;
  measure_durations(in, f, r);
  measure_roofs(in.ceilings, f, r);
  measure_intensity(in.ceilings, f, r);
  r.ncu_rule = ncu_rule_for_call(in, f.all);
  f.launch = measure_launch(in, f.trace, r);
  f.short_kernels = r.median_kernel_seconds > 0 && r.median_kernel_seconds < kShortKernelSeconds;
  decide(f, r);
  add_evidence(in, f, r);
  r.agrees_with_ncu = r.ncu_rule.as_class && *r.ncu_rule.as_class == r.cls;
  if (!r.agrees_with_ncu) r.disagreement = explain_disagreement(r, f.launch, in.ceilings);
  return r;
}

nlohmann::json to_json(const RooflineResult& r) {
  nlohmann::json roofs = nlohmann::json::array();
  for (const auto& roof : r.roofs)
    roofs.push_back({{"name", roof.name},
                     {"unit", roof.unit},
                     {"achieved", roof.achieved},
                     {"peak", roof.peak},
                     {"fraction", roof.fraction},
                     {"amount", roof.amount},
                     {"memory", roof.memory}});
  const auto& n = r.ncu_rule;
  nlohmann::json ncu = {{"verdict", n.verdict},
                        {"title", n.title},
                        {"class", n.as_class ? nlohmann::json(to_string(*n.as_class)) : nlohmann::json(nullptr)},
                        {"sm_pct", n.sm_pct},
                        {"mem_pct", n.mem_pct},
                        {"waves", n.waves ? nlohmann::json(*n.waves) : nlohmann::json(nullptr)}};
  return {{"class", to_string(r.cls)},
          {"limiter", r.limiter},
          {"sol_fraction", r.sol_fraction},
          {"headroom", r.headroom},
          {"arithmetic_intensity", r.arithmetic_intensity},
          {"ridge_intensity", r.ridge_intensity},
          {"ridge_roof", r.ridge_roof},
          {"kernel_seconds", r.kernel_seconds},
          {"kernel_count", r.kernel_count},
          {"median_kernel_seconds", r.median_kernel_seconds},
          {"idle_fraction", r.idle_fraction},
          {"roofs", roofs},
          {"evidence", r.evidence},
          {"ncu_rule", ncu},
          {"agrees_with_ncu", r.agrees_with_ncu},
          {"disagreement", r.disagreement}};
}

}  // namespace kp::analysis
