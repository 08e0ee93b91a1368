// `kernelpro build TASK [CANDIDATE]`: builds the candidate only and reports its resources.
#include <filesystem>
#include <iostream>
#include <string>

#include "build/builder.h"
#include "build/diagnostics.h"
#include "cli/cli_support.h"
#include "cli/commands.h"
#include "eval/result_json.h"
#include "report/eval_report.h"
#include "task/native_task_loader.h"

namespace kp::cli {

namespace fs = std::filesystem;

int run_build(const BuildFlags& flags, const CommonFlags& common) {
  auto task = task::load_native_task(flags.task);
  if (!task.ok()) return exit_for(task.error());
  auto cand = candidate_path(*task, flags.candidate);
  if (!cand.ok()) return exit_for(cand.error());
  build::Builder builder(build_options(common));
  auto r = builder.build(build::BuildRequest{*cand, task->candidate_libraries, {}});
  if (!r.ok()) return exit_for(r.error());
  eval::EvalResult er;
  er.task_name = task->name;
  er.candidate = *cand;
  er.candidate_build = *r;
  er.outcome = r->ok ? eval::Outcome::kNotRun : eval::Outcome::kCompileError;
  er.reason = r->ok ? std::string("built only (kernelpro build)") : build::summarize_diagnostics(r->diagnostics, 5);
  er.build_seconds = er.total_seconds = r->seconds;
  if (common.json) std::cout << eval::result_to_json(*task, er).dump(2) << "\n";
  else std::cout << report::format_eval_text(*task, er);
  return r->ok ? kExitOk : kExitFailed;
}

}  // namespace kp::cli
