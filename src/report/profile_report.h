// Printers for `kernelpro profile`: one page for people (the class first, then the evidence at
// the kernel, instruction and system levels) and the same content as JSON for machines.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/profile_page.h"

namespace kp::report {

// The readable page. When the evaluation did not end ok, the verdict alone (nothing was profiled).
std::string format_profile_text(const task::Task& task, const analysis::ProfilePage& page);

// Stable field names: "eval" (as eval::result_to_json), "class", "roofline", "ceilings", "kernels"
// (per kernel: name, grid, block, metrics), "sass", "trace" (summary and calls), "stage2",
// "agreement", "notes", "seconds".
nlohmann::json profile_to_json(const task::Task& task, const analysis::ProfilePage& page);

}  // namespace kp::report
