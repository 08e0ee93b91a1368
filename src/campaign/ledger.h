// The ledger of a campaign: where each problem stands (runs/ID/status.json, replaced whole by a
// rename) and who runs it now (a whole-file lock on runs/ID/claim.lock). Both work on the shared
// file systems a cluster's nodes mount, where one SQLite file written from many nodes would not.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "campaign/campaign.h"
#include "util/result.h"

namespace kp::campaign {

inline constexpr const char* kProblemStatusFile = "status.json";

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
// The problem's status.json as written ("pending" when there is none), without asking who holds
// its claim: what the holder of the claim reads.
ProblemStatus read_status_file(const std::filesystem::path& campaign_dir, const CampaignProblem& p);
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

// The ledger as it stands: one status per problem, in the spec's order.
std::vector<ProblemStatus> campaign_ledger(const std::filesystem::path& dir, const CampaignSpec& spec);

}  // namespace kp::campaign
