// A campaign as a Slurm job array (`kernelpro bench run C --slurm`): task i of the array runs
// `kernelpro bench run C --problem ID --gpus inherit` for line i+1 of its problem list, so every
// task shares the campaign folder's ledger and claims like the lanes of one host. Kept in
// CAMPAIGN/slurm/: submit-N.sh and submit-N.list per submission, jobs.txt ("JOB LIST COUNT DATE"
// per line), and each task's output.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "campaign/campaign.h"
#include "util/result.h"

namespace kp::campaign {

// The Slurm commands (tests put fakes in their place).
struct SlurmTools {
  std::string sbatch = "sbatch", squeue = "squeue", sacct = "sacct";
};

struct SlurmSubmitOptions {
  std::filesystem::path kernelpro;  // the binary each task runs
  std::string sbatch_options;       // more sbatch options, split at spaces ("-p gpu --time=4:00:00")
  int gpus_per_task = 0;            // --gpus-per-task; 0: sbatch's default
  bool retry_failed = false;        // failed problems are submitted again
  int jobs = 0;                     // each task's --jobs (nvcc processes); 0: its default
  SlurmTools tools;
};

struct SlurmSubmission {
  std::string job;                    // the array's job id; "" when nothing was submitted
  std::vector<std::string> problems;  // one per task, in task order; empty: nothing left to submit
};

// Submits an array of the problems that are neither done, failed (unless retry_failed), not
// timed, running, nor held by an earlier array's queued task. Nothing to submit is no error.
// kTool when sbatch fails (its files are removed, so the next submission takes their number);
// kIo when the campaign's slurm/ folder cannot be written.
Result<SlurmSubmission> submit_slurm_array(const std::filesystem::path& dir, const CampaignSpec& spec,
                                           const SlurmSubmitOptions& o);

// The campaign's submitted jobs (slurm/jobs.txt): job id -> its problem list's file name.
std::vector<std::pair<std::string, std::string>> submitted_jobs(const std::filesystem::path& dir);

// The problems whose array tasks Slurm still holds (pending or running), from squeue and the
// lists the jobs were submitted with; empty when squeue cannot say.
std::set<std::string> queued_problems(const std::filesystem::path& dir, const std::string& squeue);

// What squeue (queued, running, lately ended) and sacct (finished) say of the campaign's jobs, a
// line per task prefixed "squeue: " or "sacct: ", or a line saying why one could not say.
std::vector<std::string> slurm_job_lines(const std::filesystem::path& dir, const SlurmTools& tools);

}  // namespace kp::campaign
