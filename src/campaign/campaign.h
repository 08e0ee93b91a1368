// A campaign (`kernelpro bench run`): one `kernelpro optimize` per problem of a suite, on every GPU
// of a host (a lane per GPU, campaign/scheduler.h) or as the tasks of a Slurm job array
// (campaign/slurm.h), all writing into one campaign folder that any later run resumes:
//
//   CAMPAIGN/campaign.json            what to run: the problems (in order) and the optimize
//                                     arguments every problem gets; written once, by the first run
//   CAMPAIGN/runs/ID/                 the problem's `optimize --run-dir` (store.db, best.cu, ...)
//   CAMPAIGN/runs/ID/status.json      the ledger's entry: pending, done, failed or not_timed, with
//                                     the optimize summary, attempts, host and times
//   CAMPAIGN/runs/ID/claim.lock       locked (an open-file-description lock, F_OFD_SETLK) by the
//                                     process that runs the problem now: a
//                                     running problem is one whose lock is held, so a killed lane
//                                     leaves nothing stale behind
//   CAMPAIGN/runs/ID/optimize.log     the child's stderr
//   CAMPAIGN/baselines/GPU/           `kernelpro baseline` of the KernelBench problems, on this GPU
//   CAMPAIGN/slurm/                   job scripts, problem lists and job ids of `--slurm` submissions
//
// This file: the problems and campaign.json. The ledger (status.json, claim.lock): ledger.h.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace kp::campaign {

inline constexpr const char* kCampaignFile = "campaign.json";

struct CampaignProblem {
  std::string id;              // "gelu" (a native task's folder), "level1/19_ReLU" (KernelBench)
  std::string kind;            // "native" or "kernelbench"
  std::filesystem::path path;  // the task folder or the problem's .py, absolute
  int level = 0;               // KernelBench's level; 0 for a native task
  // The run folder's name under CAMPAIGN/runs: the id with '/' as '-'.
  std::string folder() const;
};

// Lists what `suite` names, in a fixed order:
//   - a KernelBench folder (level1/, level2/, ...): the problems of `levels`, then `only`
//     (file names or stems), as `kernelpro baseline` lists them;
//   - a native task folder (task.toml): that task alone;
//   - a folder of native task folders (examples/): each, by name;
//   - a list file: one task folder or problem .py per line (relative to the file; '#' comments).
// Errors: kNotFound for a path that is none of these; kInvalidInput for a list line that names
// neither, a name in `only` that matches nothing, or two problems with the same id.
Result<std::vector<CampaignProblem>> list_campaign_problems(const std::filesystem::path& suite,
                                                            const std::vector<int>& levels,
                                                            const std::vector<std::string>& only);

struct CampaignSpec {
  std::string suite;                       // as given, absolute
  std::vector<CampaignProblem> problems;   // in the order lanes take them
  std::vector<std::string> optimize_args;  // given to every `kernelpro optimize TASK --run-dir DIR`
  std::string python;                      // KernelBench: the worker's Python ("": the default)
  std::string created;                     // ISO 8601 UTC
  nlohmann::json to_json() const;
  static Result<CampaignSpec> from_json(const nlohmann::json& j);  // kInvalidInput naming what is wrong
};

// campaign.json, written through a temp file and a rename / read back (kNotFound when absent).
Status save_campaign(const std::filesystem::path& dir, const CampaignSpec& spec);
Result<CampaignSpec> load_campaign(const std::filesystem::path& dir);

}  // namespace kp::campaign
