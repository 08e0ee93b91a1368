// `kernelpro analyze TASK [CANDIDATE]`: profiles the candidate and runs the analysis tools on the
// evidence (driver/analyze_session.h); `--evidence FILE` analyzes a saved profile again, no GPU.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/rule_tool.h"
#include "cli/cli_support.h"
#include "cli/commands.h"
#include "driver/judge.h"
#include "driver/analyze_session.h"
#include "report/analyze_report.h"
#include "util/strings.h"

namespace kp::cli {

namespace fs = std::filesystem;

int run_analyze(const AnalyzeFlags& flags, const CommonFlags& common) {
  driver::AnalyzeOptions ao;
  ao.tools = flags.tools;
  if (!flags.no_rules) ao.rule_dirs = analysis::default_rule_dirs();
  for (const auto& r : flags.rules) ao.rule_dirs.emplace_back(r);
  ao.stage2 = !flags.no_stage2;
  ao.feedback.max_points = static_cast<size_t>(std::max(1, flags.max_points));
  if (flags.list_tools) {
    auto page = driver::list_tools(ao.rule_dirs);
    if (!page.ok()) return exit_for(page.error());
    std::cout << (common.json ? page->dump(2) + "\n" : report::format_tool_list(*page));
    return kExitOk;
  }
  ao.stage2_all = flags.stage2_all;
  if (!flags.evidence.empty()) {
    if (!flags.profile.eval.task.empty())
      return exit_for(make_error(ErrorCode::kInvalidInput,
                                 fmt::format("--evidence {} replaces TASK and CANDIDATE ({} was given too); drop one",
                                             flags.evidence, flags.profile.eval.task)));
    auto text = read_file(flags.evidence);
    if (!text.ok()) return exit_for(text.error());
    nlohmann::json file = nlohmann::json::parse(*text, nullptr, false);
    if (file.is_discarded())
      return exit_for(make_error(ErrorCode::kInvalidInput,
                                 fmt::format("--evidence {}: not JSON; write it with `kernelpro analyze TASK CANDIDATE "
                                             "--save-evidence FILE`",
                                             flags.evidence)));
    task::Task task;
    auto page = driver::replay_analyze(file, ao, &task);
    if (!page.ok()) return exit_for(Error{page.error().code, flags.evidence + ": " + page.error().message});
    page->profile.notes.push_back(fmt::format("evidence replayed from {} (recorded on {})", flags.evidence,
                                              file.value("recorded_on", std::string("an unnamed GPU"))));
    if (common.json) std::cout << report::analyze_to_json(task, *page).dump(2) << "\n";
    else std::cout << report::format_analyze_text(task, *page);
    return kExitOk;
  }
  auto setup = profile_setup(flags.profile, common, "analyze");
  if (!setup.ok()) return exit_for(setup.error());
  ao.profile = (*setup)->options;
  const task::Task& task = (*setup)->task;
  driver::Judge judge(driver::evaluator_options_for_profile(ao.profile));
  auto page = judge.analyze(task, (*setup)->candidate, flags.profile.eval.cu, ao, [&](const std::string& line) {
    if (!common.json) std::fprintf(stderr, "kernelpro: %s\n", line.c_str());
  });
  if (!page.ok()) return exit_for(page.error());
  if (!flags.save_evidence.empty() && page->profile.eval.outcome == eval::Outcome::kOk) {
    auto saved = write_file(flags.save_evidence, driver::evidence_file(task, *page).dump(1) + "\n");
    if (!saved.ok()) return exit_for(saved.error());
  } else if (!flags.save_evidence.empty()) {
    page->profile.notes.push_back(fmt::format("--save-evidence {}: not written, the candidate did not run to the end "
                                              "(outcome {})",
                                              flags.save_evidence, eval::to_string(page->profile.eval.outcome)));
  }
  if (common.json) std::cout << report::analyze_to_json(task, *page).dump(2) << "\n";
  else std::cout << report::format_analyze_text(task, *page);
  if (page->profile.eval.outcome == eval::Outcome::kNotRun) {
    if (!common.json)
      std::cout << "\nNo GPU here: the counters and the trace need an NVIDIA GPU; the findings above come from the "
                   "SASS and ptxas alone. Run the same command on a GPU machine for the full diagnosis.\n";
    return kExitNotRun;
  }
  return page->profile.eval.outcome == eval::Outcome::kOk ? kExitOk : kExitFailed;
}

}  // namespace kp::cli
