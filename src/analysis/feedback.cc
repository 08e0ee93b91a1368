#include "analysis/feedback.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace kp::analysis {

namespace {

constexpr const char* kHeadlineTool = "roofline_headroom";

int rank_of(Severity s) { return static_cast<int>(s); }

// Stronger first: severity, gain, then names for a total, stable order.
bool stronger(const Finding& a, const Finding& b) {
  if (a.severity != b.severity) return rank_of(a.severity) > rank_of(b.severity);
  if (a.estimated_gain != b.estimated_gain) return a.estimated_gain > b.estimated_gain;
  if (a.tool != b.tool) return a.tool < b.tool;
  if (a.kernel != b.kernel) return a.kernel < b.kernel;
  return a.title < b.title;
}

void absorb(Finding& into, const Finding& from) {
  into.severity = rank_of(from.severity) > rank_of(into.severity) ? from.severity : into.severity;
  into.estimated_gain = std::max(into.estimated_gain, from.estimated_gain);
  for (const auto& e : from.evidence) {
    bool seen = false;
    for (const auto& have : into.evidence)
      if (have.metric == e.metric && have.value == e.value) seen = true;
    if (!seen) into.evidence.push_back(e);
  }
  for (const auto& a : from.actions)
    if (std::find(into.actions.begin(), into.actions.end(), a) == into.actions.end()) into.actions.push_back(a);
}

std::string number(double v) {
  double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.3g}", v);
  if (a >= 100) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

std::string evidence_text(const EvidenceItem& e) {
  std::string s = e.metric + " = " + number(e.value) + e.unit;
  if (!e.op.empty()) s += " " + e.op + " " + number(e.threshold) + e.unit;
  return s;
}

std::string short_kernel(const std::string& name) {
  // "(anonymous namespace)::gelu_seed(float const*, float*, long)" -> "gelu_seed"
  std::string s = name;
  const std::string anon = "(anonymous namespace)::";
  for (size_t p; (p = s.find(anon)) != std::string::npos;) s.erase(p, anon.size());
  size_t paren = s.find('(');
  if (paren != std::string::npos && paren > 0) s = s.substr(0, paren);
  return s;
}

}  // namespace

Feedback make_feedback(const Evidence& evidence, std::vector<Finding> findings, const FeedbackOptions& options) {
  Feedback fb;
  // 1. One finding per (tool, kernel).
  std::sort(findings.begin(), findings.end(), stronger);
  std::vector<Finding> merged;
  for (auto& f : findings) {
    auto same = std::find_if(merged.begin(), merged.end(),
                             [&](const Finding& m) { return m.tool == f.tool && m.kernel == f.kernel; });
    if (same != merged.end()) absorb(*same, f);
    else merged.push_back(std::move(f));
  }
  // 2. Fold a weaker finding into a stronger one of another tool with the same kernel and first
  //    action: they ask for the same change.
  std::vector<Finding> folded;
  for (auto& f : merged) {
    auto same = f.actions.empty() || f.tool == kHeadlineTool
                    ? folded.end()
                    : std::find_if(folded.begin(), folded.end(), [&](const Finding& m) {
                        return m.tool != kHeadlineTool && m.kernel == f.kernel && !m.actions.empty() &&
                               m.actions.front() == f.actions.front();
                      });
    if (same != folded.end()) {
      same->evidence.push_back(context("also " + f.tool, f.estimated_gain, "x"));
      absorb(*same, f);
    } else {
      folded.push_back(std::move(f));
    }
  }
  std::stable_sort(folded.begin(), folded.end(), stronger);
  fb.ranked = folded;

  // 3. The text.
  std::string out;
  auto head = std::find_if(folded.begin(), folded.end(), [](const Finding& f) { return f.tool == kHeadlineTool; });
  if (head != folded.end()) {
    fb.headline = head->title;
  } else if (evidence.roofline) {
    const auto& r = *evidence.roofline;
    fb.headline = fmt::format("{}: {} at {:.0f}% of its ceiling, headroom {:.2f}x", to_string(r.cls), r.limiter,
                              r.sol_fraction * 100, r.headroom);
  }
  if (!fb.headline.empty()) out += "MAIN BOTTLENECK  " + fb.headline + "\n";
  size_t shown = 0, left = 0;
  for (const auto& f : folded) {
    if (f.tool == kHeadlineTool) continue;
    if (!options.include_info && f.severity == Severity::kInfo) {
      ++left;
      continue;
    }
    if (shown >= options.max_points) {
      ++left;
      continue;
    }
    ++shown;
    out += fmt::format("{}. [{}] {}", shown, to_string(f.severity), f.title);
    if (!f.kernel.empty()) out += fmt::format(" ({})", short_kernel(f.kernel));
    if (f.estimated_gain > 1.005) out += fmt::format(", up to {:.2f}x", f.estimated_gain);
    out += "\n";
    if (!f.evidence.empty()) {
      out += "   evidence:";
      for (size_t i = 0; i < f.evidence.size(); ++i) out += (i ? "; " : " ") + evidence_text(f.evidence[i]);
      out += "\n";
    }
    if (!f.guidance.empty()) out += "   change: " + f.guidance + "\n";
    if (!f.actions.empty()) out += fmt::format("   actions: {}\n", fmt::join(f.actions, ", "));
  }
  if (shown == 0) out += "No tool found a specific inefficiency in the evidence collected.\n";
  if (left > 0) out += fmt::format("({} more finding{} of lower rank: --json lists all)\n", left, left == 1 ? "" : "s");
  fb.text = std::move(out);
  return fb;
}

nlohmann::json to_json(const Feedback& f) {
  nlohmann::json ranked = nlohmann::json::array();
  for (const auto& x : f.ranked) ranked.push_back(to_json(x));
  return {{"headline", f.headline}, {"findings", ranked}, {"text", f.text}};
}

}  // namespace kp::analysis
