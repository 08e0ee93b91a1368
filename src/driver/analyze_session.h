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

#include "analysis/analyze_page.h"
#include "analysis/feedback.h"
#include "analysis/registry.h"
#include "driver/profile_session.h"

namespace kp::driver {

struct AnalyzeOptions {
  ProfileSessionOptions profile;  // stage and stage2_metrics are set by run_analyze
  // Tools to run, by name (the agents ask for them); empty: the ones the evidence calls for.
  std::vector<std::string> tools;
  // Tools to run as well as those (the analyst's choice): added to the ones chosen above.
  std::vector<std::string> extra_tools;
  // Rule-file folders (analysis/rule_tool.h); a folder that does not exist is skipped, a bad
  // file is an error naming it.
  std::vector<std::filesystem::path> rule_dirs;
  bool stage2 = true;  // false: the tools run on the stage-1 evidence alone
  // Stage 2 collects every tool's metrics, not only the chosen tools' (the same tools run): for
  // evidence saved to be analyzed again later with any tool (--stage2-all).
  bool stage2_all = false;
  analysis::FeedbackOptions feedback;
};

// The page lives in analysis/ (below report/, which prints it).
using AnalyzePage = analysis::AnalyzePage;

// The measured facts the feedback text leaves out, for a prompt: the call's median time (and
// the reference's), each kernel's time and launch shape (six at most), and the task's ideal
// bytes and the time they take at the DRAM roof. A few lines; empty when nothing was timed.
std::string measured_summary(const AnalyzePage& page);

// The raw counters of the profiled kernels (four at most), one "metric = value unit" per line,
// with no tool's reading of them: the "raw-metrics" feedback of the search's ablation.
std::string raw_metrics_text(const AnalyzePage& page);

// Builds the registry (built-ins and rule files), profiles, runs the tools, ranks. Errors as
// run_profile, plus kNotFound for an unknown tool name and kInvalidInput for a bad rule file.
// A candidate that fails its evaluation gives a page with no findings (profile.eval says why).
Result<AnalyzePage> run_analyze(const task::Task& task, const std::filesystem::path& candidate,
                                const std::filesystem::path& library_source, const AnalyzeOptions& options,
                                const ProgressFn& progress = {}, const ProfileOn& on = {});

// Every tool the registry would hold (built-ins and the rule files of rule_dirs), as JSON:
// [{"name","title","about","classes","metrics","needs_sass","needs_trace"}, ...] in name order.
Result<nlohmann::json> list_tools(const std::vector<std::filesystem::path>& rule_dirs);

// The stage-2 metrics of every tool the registry would hold, less the stage-1 list: what the
// model loop collects ahead with stage 1 (ProfileSessionOptions::ahead_metrics). Errors as
// list_tools.
Result<std::vector<std::string>> every_tool_metric(const std::vector<std::filesystem::path>& rule_dirs);

// The evidence the tools read, from a profile page and its task. The ideal bytes are the task's
// [cost], else (a KernelBench problem) the compulsory traffic its worker counted.
analysis::Evidence evidence_of(const task::Task& task, const ProfilePage& page);

// What `kernelpro analyze --save-evidence FILE` writes: {"format": "kernelpro-evidence",
// "version": 1, "task": {"name", "ideal_bytes", "ideal_flops"}, "candidate", "recorded_on"
// (the GPU), "speedup_vs_reference", "stage1_metrics", "tools_run", "evidence"
// (analysis::evidence_to_json)}.
nlohmann::json evidence_file(const task::Task& task, const AnalyzePage& page);

// `kernelpro analyze --evidence FILE`: the diagnosis made again from a saved file, no GPU. The
// tools are chosen as run_analyze chooses them, on the stage-1 metrics of the file (or the
// ones named in options.tools), and run on all of its evidence; the class is computed again
// from it. *task gets the file's task (name and ideals). kInvalidInput for a file that is not
// kernelpro evidence, with what is wrong.
Result<AnalyzePage> replay_analyze(const nlohmann::json& file, const AnalyzeOptions& options, task::Task* task);

}  // namespace kp::driver
