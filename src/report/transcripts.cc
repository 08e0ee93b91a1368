#include "report/transcripts.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kp::report {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string class_of(const store::EvaluationRow& e) {
  if (e.outcome == "ok") return "correct";
  if (e.outcome == "compile_error") return "did not compile";
  if (e.outcome == "load_error") return "did not load";
  if (e.outcome == "incorrect") return "incorrect";
  if (e.outcome == "not_run") return "not run";
  if (e.outcome == "rejected") {
    nlohmann::json j = nlohmann::json::parse(e.report_json, nullptr, false);
    if (j.is_object() && j.contains("eval") && j["eval"].is_object()) j = j["eval"];
    const std::string cheat = j.is_object() ? j.value("cheat", "") : "";
    return cheat.empty() ? "rejected" : "rejected: " + cheat;
  }
  return "crashed or hung";  // runtime_error, crash, timeout
}

}  // namespace

bool aims_at(const std::string& bottleneck_class, const std::string& direction, const std::string& actions) {
  static const std::map<std::string, std::vector<std::string_view>> kWords = {
      {"memory-bound",
       {"vectorize", "coalesc", "fuse", "fusion", "tile_for_l2", "float4", "vector", "bandwidth", "traffic",
        "shared memory", "smem", "l2", "one pass", "single pass", "read once", "bytes", "cache"}},
      {"compute-bound",
       {"tensor core", "wgmma", " mma", "use_tensor_cores", "register tile", "tiling", "fma", "intrinsic",
        "fast math", "algebra", "fold", "precompute", "fewer flops"}},
      {"latency-bound",
       {"occupancy", "increase_occupancy", "more blocks", "ilp", "in flight", "unroll", "warps", "grid",
        "parallelism", "split", "latency"}},
      {"launch-bound", {"fuse", "fusion", "graph", "launch", "persistent", "fewer kernels", "one kernel"}},
  };
  auto it = kWords.find(bottleneck_class);
  if (it == kWords.end()) return false;
  const std::string text = lower(direction + " " + actions);
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](std::string_view w) { return text.find(w) != std::string::npos; });
}

std::string against_torch(double seconds, double torch_s) {
  if (torch_s <= 0) return "correct (no PyTorch baseline on this card)";
  return seconds < torch_s ? "correct, faster than PyTorch" : "correct, slower than PyTorch";
}

CandidateClasses classify_candidates(store::RunStore& s, const std::vector<store::EvaluationRow>& evals,
                                     const std::set<int64_t>& reference_candidates) {
  CandidateClasses c;
  std::map<int64_t, const store::EvaluationRow*> last;  // candidate -> its last verdict
  for (const auto& e : evals)
    if (!reference_candidates.count(e.candidate)) last[e.candidate] = &e;
  for (const auto& [cand, e] : last) {
    const std::string k = class_of(*e);
    ++c.classes[k];
    if (k == "correct" && e->seconds > 0) c.correct_s.push_back(e->seconds);
  }
  if (auto lessons = s.lessons_in_order(); lessons.ok())
    for (const auto& l : *lessons) {
      // A repair inherits its parent's class but aims at the failure, not the bottleneck.
      if (l.bottleneck_class.empty() || l.actions == "tune" || l.direction.rfind("repair the ", 0) == 0) continue;
      ++c.planned_with_class;
      if (aims_at(l.bottleneck_class, l.direction, l.actions)) ++c.aimed;
    }
  return c;
}

}  // namespace kp::report
