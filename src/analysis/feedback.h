// The semantic feedback operator (DESIGN.md section 6): the tools' findings merged,
// de-duplicated and ranked into the short text an LLM, or a person, acts on. The main
// bottleneck comes first, then each point with its evidence and what to change. Deterministic:
// the same evidence and findings give the same text, byte for byte.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/tool.h"

namespace kp::analysis {

struct FeedbackOptions {
  size_t max_points = 6;      // findings in the text after the main bottleneck; the rest are counted
  bool include_info = false;  // info-level findings in the text (always in `ranked`)
};

struct Feedback {
  std::string headline;          // the main bottleneck, one line ("" without a roofline)
  std::vector<Finding> ranked;   // merged and ranked, most important first
  std::string text;              // headline and the top points, for the prompt or the terminal
};

// Merging: findings of one tool on one kernel become one (the highest severity, the larger
// gain, their evidence joined); a finding whose kernel and first action tag match a stronger
// one of another tool is folded into it (its tool named in the evidence as "also"), so two
// tools saying "coalesce" about one kernel are one point. Ranking: severity, then estimated
// gain, then tool name, then kernel name. The roofline_headroom finding, when present, gives
// the headline and is not repeated as a point.
Feedback make_feedback(const Evidence& evidence, std::vector<Finding> findings, const FeedbackOptions& options = {});

nlohmann::json to_json(const Feedback& f);

}  // namespace kp::analysis
