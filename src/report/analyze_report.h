// Printers for `kernelpro analyze`: the diagnosis for people (the main bottleneck, the ranked
// points with their evidence and what to change, what was collected) and the same as JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/analyze_page.h"

namespace kp::report {

std::string format_analyze_text(const task::Task& task, const analysis::AnalyzePage& page);

// Fields: "eval" (the verdict), "class", "headline", "feedback" (the text), "findings" (ranked,
// merged), "raw_findings" (as the tools returned them), "tools_run", "stage2_metrics",
// "seconds" (stage 1 and stage 2), "notes", "profile" (profile_to_json of the same page).
// The tool list of `kernelpro analyze --list-tools` (driver::list_tools' JSON): name, classes,
// stage-2 metric count, and what it looks for.
std::string format_tool_list(const nlohmann::json& tools);

nlohmann::json analyze_to_json(const task::Task& task, const analysis::AnalyzePage& page);

}  // namespace kp::report
