// `kernelpro analyze`: the profile of a candidate (driver/profile_session.h) turned into the
// diagnosis a CUDA performance engineer would give (DESIGN.md section 6). Stage 1 (timing,
// counters, SASS, ptxas, trace, the roofline class) always runs; stage 2 runs only the tools the
// class and the stage-1 numbers call for (or the ones named), collecting the union of their
// metrics in one more collection; the semantic feedback operator ranks what they found.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/feedback.h"
#include "analysis/registry.h"
#include "driver/profile_session.h"

namespace kp::driver {

struct AnalyzeOptions {
  ProfileSessionOptions profile;  // stage and stage2_metrics are set by run_analyze
  // Tools to run, by name (the agents ask for them); empty: the ones the evidence calls for.
  std::vector<std::string> tools;
  // Rule-file folders (analysis/rule_tool.h); a folder that does not exist is skipped, a bad
  // file is an error naming it.
  std::vector<std::filesystem::path> rule_dirs;
  bool stage2 = true;  // false: the tools run on the stage-1 evidence alone
  analysis::FeedbackOptions feedback;
};

struct AnalyzePage {
  ProfilePage profile;
  analysis::Evidence evidence;
  std::vector<std::string> tools_run;       // in name order
  std::vector<std::string> stage2_metrics;  // collected for them
  std::vector<analysis::Finding> findings;  // as the tools returned them
  analysis::Feedback feedback;
};

// Builds the registry (built-ins and rule files), profiles, runs the tools, ranks. Errors as
// run_profile, plus kNotFound for an unknown tool name and kInvalidInput for a bad rule file.
// A candidate that fails its evaluation gives a page with no findings (profile.eval says why).
Result<AnalyzePage> run_analyze(const task::Task& task, const std::filesystem::path& candidate,
                                const std::filesystem::path& library_source, const AnalyzeOptions& options,
                                const ProgressFn& progress = {});

// Every tool the registry would hold (built-ins and the rule files of rule_dirs), as JSON:
// [{"name","title","about","classes","metrics","needs_sass","needs_trace"}, ...] in name order.
Result<nlohmann::json> list_tools(const std::vector<std::filesystem::path>& rule_dirs);

// The evidence the tools read, from a profile page and its task.
analysis::Evidence evidence_of(const task::Task& task, const ProfilePage& page);

}  // namespace kp::driver
