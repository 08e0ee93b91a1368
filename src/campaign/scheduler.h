// The scheduler of `kernelpro bench run`: lanes, one per GPU (or one on the CPU, or one on the GPU
// a Slurm task inherits), each taking the next problem the ledger leaves and running it as a
// `kernelpro optimize` child, until none is left or the run is interrupted.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "campaign/campaign.h"
#include "campaign/ledger.h"
#include "util/result.h"

namespace kp::campaign {

// Where a lane runs its problems: on one GPU of the host (the child's CUDA_VISIBLE_DEVICES is
// `gpu`), on the GPU the environment gives (a Slurm task's: CUDA_VISIBLE_DEVICES left as it is),
// or with no GPU (CUDA_VISIBLE_DEVICES empty: the seed is built, nothing is timed).
struct Lane {
  enum class Kind { kGpu, kInheritedGpu, kCpu };
  Kind kind = Kind::kCpu;
  std::string gpu;  // kGpu: a CUDA_VISIBLE_DEVICES value ("0", "2")
  // Its name in the progress display and the ledger: "gpu0", "gpu" (inherited), "cpu".
  std::string name() const;
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

// The lanes of a run: one per entry of `gpus`, one that inherits the GPU, or one on the CPU.
std::vector<Lane> campaign_lanes(const CampaignOptions& o);

// Runs the problems not yet done (and, with retry_failed, the failed ones), each lane taking the
// next in order, until none is left or `interrupted`. A problem whose optimize stopped before its
// budget (interrupted, the GPU was held by another process) stays pending: the next run resumes
// its store. Errors only for a campaign that cannot run (no campaign.json, a folder that cannot
// be written); a problem's failure is its ledger entry.
Result<CampaignRun> run_campaign(const CampaignSpec& spec, const CampaignOptions& options);

}  // namespace kp::campaign
