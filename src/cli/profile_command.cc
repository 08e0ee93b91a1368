// `kernelpro profile TASK [CANDIDATE]`: evaluates the candidate and reads its counters, trace and
// SASS (driver/profile_session.h).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "driver/judge.h"
#include "driver/profile_session.h"
#include "report/profile_report.h"

namespace kp::cli {

namespace fs = std::filesystem;

int run_profile(const ProfileFlags& flags, const CommonFlags& common) {
  auto setup = profile_setup(flags, common, "profile");
  if (!setup.ok()) return exit_for(setup.error());
  const task::Task* task = &(*setup)->task;
  const fs::path& cand = (*setup)->candidate;
  const driver::ProfileSessionOptions& o = (*setup)->options;
  driver::Judge judge(driver::evaluator_options_for_profile(o));
  auto page = judge.profile(*task, cand, flags.eval.cu, o, [&](const std::string& line) {
    if (!common.json) std::fprintf(stderr, "kernelpro: %s\n", line.c_str());
  });
  if (!page.ok()) return exit_for(page.error());
  if (common.json) std::cout << report::profile_to_json(*task, *page).dump(2) << "\n";
  else std::cout << report::format_profile_text(*task, *page);
  if (page->eval.outcome == eval::Outcome::kNotRun) {
    if (!common.json)
      std::cout << "\nNo GPU here: profiling needs an NVIDIA GPU (counters, trace); run the same command on a GPU machine.\n";
    return kExitNotRun;
  }
  return page->eval.outcome == eval::Outcome::kOk ? kExitOk : kExitFailed;
}

}  // namespace kp::cli
