#include "report/profile_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "profile/calibration.h"
#include "profile/metric_lists.h"
#include "profile/trace/trace_parser.h"
#include "eval/result_json.h"
#include "report/eval_report.h"
#include "util/strings.h"

namespace kp::report {

namespace {

using nlohmann::json;

std::string rate(double v, const std::string& unit) {
  if (unit == "B/s") return fmt::format("{:.2f} TB/s", v / 1e12);
  if (v >= 1e12) return fmt::format("{:.1f} T{}", v / 1e12, unit);
  return fmt::format("{:.1f} G{}", v / 1e9, unit);
}

std::string dims(const std::array<int64_t, 3>& d) {
  if (d[0] == 0) return "-";
  return fmt::format("({},{},{})", d[0], d[1], d[2]);
}

std::string short_name(const std::string& name, size_t width) {
  std::string n = name;
  for (const char* prefix : {"void ", "(anonymous namespace)::"})
    if (n.rfind(prefix, 0) == 0) n = n.substr(std::char_traits<char>::length(prefix));
  n = n.substr(0, n.find('('));
  if (n.size() > width) n = n.substr(0, width - 3) + "...";
  return n;
}

std::string pct(const profile::KernelMetrics& k, const char* m) {
  auto v = k.get(m);
  return v ? fmt::format("{:.0f}", *v) : "-";
}

std::string bytes_of(const profile::KernelMetrics& k, const char* m) {
  auto v = k.get(m);
  return v ? format_bytes(*v) : "-";
}

}  // namespace

std::string format_profile_text(const task::Task& task, const analysis::ProfilePage& page) {
  std::string out;
  if (page.eval.outcome != eval::Outcome::kOk || !page.counters) {
    out += format_eval_text(task, page.eval);
    if (page.eval.outcome != eval::Outcome::kNotRun) {
      out += "\nNothing was profiled: the candidate must pass `kernelpro eval` first.\n";
      return out;
    }
    out += "\nSASS      (cuobjdump, joined with ptxas -v; no GPU needed)\n";
    if (page.sass.empty()) out += "  (none)\n";
    for (const auto& k : page.sass) out += "  " + profile::describe(k) + "\n";
    for (const auto& n : page.notes) out += "  note: " + n + "\n";
    return out;
  }
  const auto& r = *page.roofline;
  const auto& dev = page.eval.device.value_or(eval::DeviceInfo{});
  out += fmt::format("kernelpro profile: {} / {} on {} (sm_{}{})\n", task.name, page.eval.candidate.filename().string(),
                     dev.name, dev.cc_major, dev.cc_minor);
  out += fmt::format("verdict   ok, median {} per call", format_seconds(page.eval.time.median));
  if (page.eval.speedup_vs_reference > 0) out += fmt::format(", {:.2f}x the reference", page.eval.speedup_vs_reference);
  out += "\n\n";
  out += fmt::format("CLASS     {}: {} at {:.0f}% of its ceiling; headroom {:.2f}x\n", analysis::to_string(r.cls),
                     r.limiter, r.sol_fraction * 100, r.headroom);
  out += fmt::format("ncu rule  {} (SM {:.0f}%, memory {:.0f}%): {}\n", r.ncu_rule.verdict, r.ncu_rule.sm_pct,
                     r.ncu_rule.mem_pct, r.agrees_with_ncu ? "agrees" : "differs: " + r.disagreement);
  for (const auto& e : r.evidence) out += "          - " + e + "\n";
  out += fmt::format("ceilings  {}", profile::to_string(page.ceilings.source));
  if (!page.ceilings.measured_at.empty()) out += " " + page.ceilings.measured_at;
  out += "\n";
  if (!page.ceilings_warning.empty()) out += "          warning: " + page.ceilings_warning + "\n";

  out += "\nROOFLINE  (achieved over the kernels' own time)\n";
  out += fmt::format("  {:<14} {:>14} {:>14} {:>9}\n", "roof", "achieved", "ceiling", "fraction");
  for (const auto& roof : r.roofs)
    out += fmt::format("  {:<14} {:>14} {:>14} {:>8.1f}%\n", roof.name, rate(roof.achieved, roof.unit),
                       rate(roof.peak, roof.unit), roof.fraction * 100);
  out += fmt::format("  arithmetic intensity {:.2f} FLOP/B (ridge {:.1f})\n", r.arithmetic_intensity, r.ridge_intensity);

  const auto& c = *page.counters;
  out += fmt::format("\nKERNELS   ({}, {} metrics, {} passes{}; collection {}, request {})\n",
                     profile::to_string(c.collector), c.metrics.size(), c.passes,
                     c.replay.empty() ? std::string() : ", " + c.replay + " replay", format_seconds(c.collect_s),
                     format_seconds(c.wall_s));
  if (!c.replay_fallback.empty()) out += fmt::format("  kernel replay, because user replay could not: {}\n", c.replay_fallback);
  out += fmt::format("  {:<3} {:<28} {:>16} {:>12} {:>10} {:>10} {:>10} {:>5} {:>5}\n", "#", "kernel", "grid", "block",
                     "time", "dram rd", "dram wr", "SM%", "Mem%");
  for (const auto& k : c.kernels) {
    auto t = k.get("gpu__time_duration.sum");
    out += fmt::format("  {:<3} {:<28} {:>16} {:>12} {:>10} {:>10} {:>10} {:>5} {:>5}\n", k.launch_index,
                       short_name(k.name, 28), dims(k.grid), dims(k.block), t ? format_seconds(*t * 1e-9) : "-",
                       bytes_of(k, "dram__bytes_read.sum"), bytes_of(k, "dram__bytes_write.sum"),
                       pct(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                       pct(k, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
  }
  if (!page.stage2_families.empty()) {
    out += fmt::format("\nSTAGE 2   ({})\n", join(page.stage2_families, ", "));
    const auto& stage1 = profile::stage1_metrics();
    for (const auto& k : c.kernels)
      for (const auto& [m, v] : k.values)
        if (std::find(stage1.begin(), stage1.end(), m) == stage1.end())
          out += fmt::format("  {:<3} {:<70} {:>14.4g}\n", k.launch_index, m, v);
  }

  out += "\nSASS      (cuobjdump, joined with ptxas -v)\n";
  if (page.sass.empty()) out += "  (none)\n";
  for (const auto& k : page.sass) out += "  " + profile::describe(k) + "\n";

  out += "\nSYSTEM    (CUPTI activity trace)\n";
  if (!page.trace) {
    out += "  (not traced)\n";
  } else {
    auto s = profile::summarize(*page.trace);
    out += "  " + profile::describe(s) + "\n";
  }
  if (!page.agreement.empty()) {
    double worst = 0;
    std::string worst_metric;
    for (const auto& a : page.agreement)
      if (a.relative_difference > worst) {
        worst = a.relative_difference;
        worst_metric = a.metric;
      }
    out += fmt::format("\nAGREEMENT with ncu: {} values compared, largest difference {:.1f}% ({})\n",
                       page.agreement.size(), worst * 100, worst_metric);
  }
  if (!page.notes.empty()) {
    out += "\nNOTES\n";
    for (const auto& n : page.notes) out += "  - " + n + "\n";
  }
  std::vector<std::string> parts;
  for (const auto& [k, v] : page.seconds) parts.push_back(fmt::format("{} {}", k, format_seconds(v)));
  out += "\nwall time: " + join(parts, ", ") + "\n";
  return out;
}

json profile_to_json(const task::Task& task, const analysis::ProfilePage& page) {
  json j;
  j["eval"] = eval::result_to_json(task, page.eval);
  if (page.roofline) {
    j["class"] = analysis::to_string(page.roofline->cls);
    j["roofline"] = analysis::to_json(*page.roofline);
  }
  if (page.counters) j["ceilings"] = profile::to_json(page.ceilings);
  if (!page.ceilings_warning.empty()) j["ceilings_warning"] = page.ceilings_warning;
  auto kernels_json = [](const profile::KernelProfile& p) {
    json ks = json::array();
    for (const auto& k : p.kernels)
      ks.push_back({{"index", k.launch_index}, {"name", k.name}, {"grid", k.grid}, {"block", k.block}, {"metrics", k.values}});
    json out{{"collector", profile::to_string(p.collector)}, {"passes", p.passes}, {"wall_s", p.wall_s},
             {"collect_s", p.collect_s}, {"metrics", p.metrics}, {"kernels", ks}};
    if (!p.replay.empty()) out["replay"] = p.replay;
    if (!p.timing_s.empty()) out["timing_s"] = p.timing_s;
    if (!p.replay_fallback.empty()) out["replay_fallback"] = p.replay_fallback;
    if (p.unprofiled_launches > 0) out["unprofiled_launches"] = p.unprofiled_launches;
    if (p.capacity > 0) out["capacity"] = p.capacity;
    if (p.capacity_grown_from > 0) out["capacity_grown_from"] = p.capacity_grown_from;
    return out;
  };
  if (page.counters) j["counters"] = kernels_json(*page.counters);
  j["stage2"] = page.stage2_families;
  if (page.ncu_counters) j["ncu_counters"] = kernels_json(*page.ncu_counters);
  json agree = json::array();
  for (const auto& a : page.agreement)
    agree.push_back({{"kernel", a.kernel}, {"metric", a.metric}, {"cupti", a.cupti}, {"ncu", a.ncu},
                     {"relative_difference", a.relative_difference}});
  j["agreement"] = agree;
  json sass = json::array();
  for (const auto& k : page.sass) sass.push_back(profile::to_json(k));
  j["sass"] = sass;
  if (page.trace) j["trace"] = profile::to_json(profile::summarize(*page.trace));
  j["notes"] = page.notes;
  j["seconds"] = page.seconds;
  return j;
}

}  // namespace kp::report
