#include "campaign/ledger.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(ProblemState s) {
  switch (s) {
    case ProblemState::kPending: return "pending";
    case ProblemState::kRunning: return "running";
    case ProblemState::kDone: return "done";
    case ProblemState::kFailed: return "failed";
    case ProblemState::kNotTimed: return "not_timed";
  }
  return "?";
}

std::optional<ProblemState> problem_state_from_string(std::string_view s) {
  for (ProblemState p : {ProblemState::kPending, ProblemState::kRunning, ProblemState::kDone, ProblemState::kFailed,
                         ProblemState::kNotTimed})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

bool is_finished(ProblemState s) {
  return s == ProblemState::kDone || s == ProblemState::kFailed || s == ProblemState::kNotTimed;
}

json ProblemStatus::to_json() const {
  return {{"state", to_string(state)},
          {"attempts", attempts},
          {"host", host},
          {"pid", pid},
          {"lane", lane},
          {"started", started},
          {"finished", finished},
          {"exit_code", exit_code},
          {"wall_s", wall_s},
          {"error", error},
          {"result", result}};
}

ProblemStatus ProblemStatus::from_json(const json& j) {
  ProblemStatus s;
  if (!j.is_object()) return s;
  // A name this build does not know (a hand edit, a newer kernelpro) reads as pending: the problem
  // runs again, as any state other than done, failed and not_timed always has.
  s.state = problem_state_from_string(j.value("state", "pending")).value_or(ProblemState::kPending);
  s.attempts = j.value("attempts", 0);
  s.host = j.value("host", "");
  s.pid = j.value("pid", 0);
  s.lane = j.value("lane", "");
  s.started = j.value("started", "");
  s.finished = j.value("finished", "");
  s.exit_code = j.value("exit_code", 0);
  s.wall_s = j.value("wall_s", 0.0);
  s.error = j.value("error", "");
  if (j.contains("result")) s.result = j["result"];
  return s;
}

ProblemStatus read_status_file(const fs::path& campaign_dir, const CampaignProblem& p) {
  ProblemStatus s;
  if (auto text = read_file((campaign_dir / "runs" / p.folder() / kProblemStatusFile).string()); text.ok()) {
    json j = json::parse(*text, nullptr, false);
    if (!j.is_discarded()) s = ProblemStatus::from_json(j);
  }
  return s;
}

namespace {

// An exclusive whole-file lock of the open file description (F_OFD_*): like flock(2) it belongs
// to the descriptor and ends with its last close, and unlike flock it can be tested without
// being taken, so a reader of the ledger never holds a claim for an instant that a lane wants.
struct ::flock whole_file(short type) {
  struct ::flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  return fl;
}

}  // namespace

ProblemStatus read_problem_status(const fs::path& campaign_dir, const CampaignProblem& p) {
  ProblemStatus s = read_status_file(campaign_dir, p);
  const fs::path lock = campaign_dir / "runs" / p.folder() / "claim.lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    struct ::flock fl = whole_file(F_WRLCK);
    if (::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) s.state = ProblemState::kRunning;
    ::close(fd);
  }
  return s;
}

Status write_problem_status(const fs::path& campaign_dir, const CampaignProblem& p, const ProblemStatus& status) {
  const fs::path run = campaign_dir / "runs" / p.folder();
  std::error_code ec;
  fs::create_directories(run, ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("cannot create {}: {}", run.string(), ec.message()));
  return write_file_atomic((run / kProblemStatusFile).string(), status.to_json().dump(2) + "\n");
}

Result<std::optional<ProblemClaim>> ProblemClaim::try_take(const fs::path& campaign_dir, const CampaignProblem& p) {
  const fs::path run = campaign_dir / "runs" / p.folder();
  std::error_code ec;
  fs::create_directories(run, ec);
  const fs::path lock = run / "claim.lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorCode::kIo, fmt::format("cannot open {}: {}", lock.string(), std::strerror(errno)));
  struct ::flock fl = whole_file(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    ::close(fd);
    return std::optional<ProblemClaim>{};
  }
  return std::optional<ProblemClaim>{ProblemClaim(fd)};
}

ProblemClaim& ProblemClaim::operator=(ProblemClaim&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

ProblemClaim::~ProblemClaim() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

std::vector<ProblemStatus> campaign_ledger(const fs::path& dir, const CampaignSpec& spec) {
  std::vector<ProblemStatus> out;
  for (const auto& p : spec.problems) out.push_back(read_problem_status(dir, p));
  return out;
}

}  // namespace kp::campaign
