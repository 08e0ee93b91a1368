// `kernelpro bench run`: a campaign, one `kernelpro optimize` per problem of a suite, on every GPU
// of a host (a lane per GPU) or as the tasks of a Slurm job array, all writing into one campaign
// folder that any later run resumes:
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
// The ledger lives in files, one per problem, each replaced whole by a rename, and claims are
// whole-file locks: both work on the shared file systems a cluster's nodes mount, where one SQLite file
// written from many nodes would not.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace kp::driver {

inline constexpr const char* kCampaignFile = "campaign.json";
inline constexpr const char* kProblemStatusFile = "status.json";

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

// Where a problem of the campaign stands; status.json's "state" holds its name.
//   kPending   never run, or stopped before its budget (interrupted, the GPU was held)
//   kRunning   its claim is held now (written when a lane starts it; a reader trusts only the lock)
//   kDone      optimize finished
//   kFailed    optimize failed; ProblemStatus::error says how
//   kNotTimed  no GPU: the seed was built, nothing timed
enum class ProblemState { kPending, kRunning, kDone, kFailed, kNotTimed };
// "pending", "running", "done", "failed", "not_timed"
const char* to_string(ProblemState s);
std::optional<ProblemState> problem_state_from_string(std::string_view s);  // nullopt for any other name
// Done, failed or not_timed: the problem's optimize has ended and will not run again by itself.
bool is_finished(ProblemState s);

// A problem's entry in the ledger.
struct ProblemStatus {
  ProblemState state = ProblemState::kPending;  // a status.json naming no known state reads as kPending
  int attempts = 0;
  std::string host, started, finished, lane, error;
  int pid = 0, exit_code = 0;
  double wall_s = 0;
  nlohmann::json result;  // `optimize --json`'s summary of the last attempt, when it printed one
  nlohmann::json to_json() const;
  static ProblemStatus from_json(const nlohmann::json& j);
};

// The problem's entry: its status.json, "pending" when there is none, and "running" while
// another process holds its claim.
ProblemStatus read_problem_status(const std::filesystem::path& campaign_dir, const CampaignProblem& p);
Status write_problem_status(const std::filesystem::path& campaign_dir, const CampaignProblem& p,
                            const ProblemStatus& status);

// An exclusive claim on a problem (an F_OFD_SETLK lock of runs/ID/claim.lock), held while the
// object lives.
class ProblemClaim {
 public:
  // The claim, or nullopt when another process holds it. kIo when the lock file cannot be made.
  static Result<std::optional<ProblemClaim>> try_take(const std::filesystem::path& campaign_dir,
                                                      const CampaignProblem& p);
  ProblemClaim(ProblemClaim&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ProblemClaim& operator=(ProblemClaim&& o) noexcept;
  ProblemClaim(const ProblemClaim&) = delete;
  ~ProblemClaim();

 private:
  explicit ProblemClaim(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// What one lane is doing, for the progress display.
struct LaneProgress {
  std::string lane;     // "gpu0", "cpu"
  std::string problem;  // "" when idle
  int candidates = 0;   // evaluated in the problem's store so far
  double best_speedup = 0;  // the best ok candidate against the reference; 0 when none yet
  double cost_usd = 0;      // LLM spend in the problem's store
  double elapsed_s = 0;     // on this problem
};

struct CampaignProgress {
  std::vector<LaneProgress> lanes;
  int total = 0, finished = 0;  // problems; finished: done, failed or not_timed
  double elapsed_s = 0;         // since this run started
  double eta_s = -1;            // -1: not known yet
  std::string event;            // a line to print above the lanes ("" when only the lanes changed)
};

struct CampaignOptions {
  std::filesystem::path dir;
  std::filesystem::path kernelpro;  // the binary each problem runs
  // One lane per entry, each a CUDA_VISIBLE_DEVICES value ("0", "2"); empty: one lane without a
  // GPU, whose problems end "not_timed". `inherit_gpu`: one lane that keeps the environment's
  // CUDA_VISIBLE_DEVICES (a Slurm task's own GPU).
  std::vector<std::string> gpus;
  bool inherit_gpu = false;
  std::vector<std::string> only_ids;  // run only these problems (a Slurm task's); empty: all
  bool retry_failed = false;
  int build_slots = 0;  // nvcc processes at once over every lane (KP_BUILD_SLOTS); 0: no limit
  std::vector<std::pair<std::string, std::string>> env;  // added to every child's environment
  std::function<bool()> interrupted;                    // stop: lanes finish (SIGINT their child) and stop
  std::function<void(const CampaignProgress&)> progress;
  double poll_s = 1.0;
  // After `interrupted`, a child still running this long is killed (its group); what its store
  // committed stays, the evaluation in flight is lost.
  double stop_grace_s = 60;
};

struct CampaignRun {
  int total = 0;
  int done = 0, failed = 0, not_timed = 0;  // of the campaign, after this run
  int ran = 0;                              // problems this run started
  int busy_elsewhere = 0;                   // claimed by another process when this run looked
  int pending = 0;                          // left to do
  bool interrupted = false;
};

// `optimize` counts --budget per invocation; a campaign's budget is per problem. A resumed run
// (a manual prompt answered, an interrupt, a held GPU) gets the campaign's --budget less the
// candidates its store already measured, at least 1 so that the run can settle.
std::vector<std::string> remaining_budget_args(std::vector<std::string> optimize_args, int measured);

// Runs the problems not yet done (and, with retry_failed, the failed ones), each lane taking the
// next in order, until none is left or `interrupted`. A problem whose optimize stopped before its
// budget (interrupted, the GPU was held by another process) stays pending: the next run resumes
// its store. Errors only for a campaign that cannot run (no campaign.json, a folder that cannot
// be written); a problem's failure is its ledger entry.
Result<CampaignRun> run_campaign(const CampaignSpec& spec, const CampaignOptions& options);

// The ledger as it stands: one status per problem, in the spec's order.
std::vector<ProblemStatus> campaign_ledger(const std::filesystem::path& dir, const CampaignSpec& spec);

}  // namespace kp::driver
