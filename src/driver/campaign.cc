#include "driver/campaign.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "driver/baseline.h"
#include "store/run_store.h"
#include "sys/subprocess.h"
#include "task/kernelbench_loader.h"
#include "util/strings.h"

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool is_native_task_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / "task.toml", ec);
}

bool is_kernelbench_suite(const fs::path& p) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(p, ec))
    if (e.is_directory() && starts_with(e.path().filename().string(), "level")) return true;
  return false;
}

// A KernelBench problem file as a campaign problem: "levelN/STEM" when it sits in a levelN folder.
Result<CampaignProblem> kernelbench_problem(const fs::path& py) {
  KP_TRY(task::Task t, task::load_kernelbench_problem(py));
  CampaignProblem p;
  p.kind = "kernelbench";
  p.path = fs::absolute(py).lexically_normal();
  p.level = t.level;
  const std::string parent = p.path.parent_path().filename().string();
  p.id = starts_with(parent, "level") ? parent + "/" + p.path.stem().string() : p.path.stem().string();
  return p;
}

CampaignProblem native_problem(const fs::path& dir) {
  CampaignProblem p;
  p.kind = "native";
  p.path = fs::absolute(dir).lexically_normal();
  p.id = p.path.filename().string();
  return p;
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

}  // namespace

std::string CampaignProblem::folder() const {
  std::string f = id;
  std::replace(f.begin(), f.end(), '/', '-');
  return f;
}

Result<std::vector<CampaignProblem>> list_campaign_problems(const fs::path& suite, const std::vector<int>& levels,
                                                            const std::vector<std::string>& only) {
  std::error_code ec;
  std::vector<CampaignProblem> out;
  const fs::path abs = fs::absolute(suite).lexically_normal();
  auto keep = [&](const CampaignProblem& p) {
    if (only.empty()) return true;
    const std::string stem = fs::path(p.id).filename().string();
    for (const auto& o : only)
      if (o == p.id || o == stem || o == p.path.filename().string()) return true;
    return false;
  };
  if (fs::is_regular_file(abs, ec) && abs.extension() != ".py") {
    KP_TRY(std::string text, read_file(abs.string()));
    int line_no = 0;
    for (const auto& raw : split_lines(text)) {
      ++line_no;
      std::string line(trim(raw.substr(0, raw.find('#'))));
      if (line.empty()) continue;
      fs::path p = fs::path(line).is_absolute() ? fs::path(line) : abs.parent_path() / line;
      if (p.extension() == ".py" && fs::is_regular_file(p, ec)) {
        auto kb = kernelbench_problem(p);
        if (!kb.ok()) return std::move(kb).error().wrap(fmt::format("{}:{}", abs.string(), line_no));
        out.push_back(*kb);
      } else if (is_native_task_dir(p)) {
        out.push_back(native_problem(p));
      } else {
        return make_error(ErrorCode::kInvalidInput,
                          fmt::format("{}:{}: '{}' is neither a native task folder (with task.toml) nor a KernelBench "
                                      "problem .py; fix or remove the line",
                                      abs.string(), line_no, line));
      }
    }
  } else if (abs.extension() == ".py") {
    KP_TRY(CampaignProblem p, kernelbench_problem(abs));
    out.push_back(p);
  } else if (is_native_task_dir(abs)) {
    out.push_back(native_problem(abs));
  } else if (fs::is_directory(abs, ec) && is_kernelbench_suite(abs)) {
    KP_TRY(SuiteListing listing, list_suite(abs, levels, only));
    for (const auto& sp : listing.problems) {
      KP_TRY(CampaignProblem p, kernelbench_problem(sp.path));
      out.push_back(p);
    }
  } else if (fs::is_directory(abs, ec)) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(abs, ec))
      if (e.is_directory() && is_native_task_dir(e.path())) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) out.push_back(native_problem(d));
    if (out.empty())
      return make_error(ErrorCode::kNotFound,
                        fmt::format("{}: no task folders (with task.toml) and no level1/, level2/... of KernelBench in it",
                                    abs.string()));
  } else {
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no such suite (a KernelBench folder, a folder of task folders, a task folder, "
                                  "a problem .py, or a list file of these)",
                                  suite.string()));
  }
  std::vector<CampaignProblem> kept;
  std::set<std::string> matched, ids;
  for (const auto& p : out) {
    if (!keep(p)) continue;
    if (!ids.insert(p.id).second)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("{}: two problems have the id '{}'; name each once", suite.string(), p.id));
    for (const auto& o : only)
      if (o == p.id || o == fs::path(p.id).filename().string() || o == p.path.filename().string()) matched.insert(o);
    kept.push_back(p);
  }
  for (const auto& o : only)
    if (!matched.count(o))
      return make_error(ErrorCode::kInvalidInput, fmt::format("--only {}: no problem of {} has that name", o, suite.string()));
  if (kept.empty()) return make_error(ErrorCode::kInvalidInput, fmt::format("{}: no problem to run", suite.string()));
  return kept;
}

json CampaignSpec::to_json() const {
  json probs = json::array();
  for (const auto& p : problems)
    probs.push_back({{"id", p.id}, {"kind", p.kind}, {"path", p.path.string()}, {"level", p.level}});
  return {{"format", "kernelpro-campaign"}, {"version", 1},     {"suite", suite},   {"problems", probs},
          {"optimize_args", optimize_args}, {"python", python}, {"created", created}};
}

Result<CampaignSpec> CampaignSpec::from_json(const json& j) {
  if (!j.is_object() || j.value("format", "") != "kernelpro-campaign")
    return make_error(ErrorCode::kInvalidInput, "not a kernelpro campaign (no \"format\": \"kernelpro-campaign\")");
  if (j.value("version", 0) != 1)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("campaign version {} is not one this kernelpro reads (1)", j.value("version", 0)));
  CampaignSpec s;
  try {
    s.suite = j.at("suite").get<std::string>();
    for (const auto& p : j.at("problems"))
      s.problems.push_back(CampaignProblem{p.at("id").get<std::string>(), p.at("kind").get<std::string>(),
                                           p.at("path").get<std::string>(), p.value("level", 0)});
    s.optimize_args = j.value("optimize_args", std::vector<std::string>{});
    s.python = j.value("python", "");
    s.created = j.value("created", "");
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kInvalidInput, fmt::format("campaign.json: {}", e.what()));
  }
  return s;
}

Status save_campaign(const fs::path& dir, const CampaignSpec& spec) {
  std::error_code ec;
  fs::create_directories(dir / "runs", ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("cannot create {}: {}", (dir / "runs").string(), ec.message()));
  return write_file_atomic((dir / kCampaignFile).string(), spec.to_json().dump(2) + "\n");
}

namespace {

// The candidates a problem's run has measured so far: distinct candidates with a verdict in its
// store (a duplicate the run measured once counts once); 0 when there is no store to read.
int measured_candidates(const fs::path& run_dir) {
  auto s = store::RunStore::open(run_dir / "store.db", store::RunStore::Access::kReader);
  if (!s.ok()) return 0;
  auto n = s->measured_candidates();
  return n.ok() ? *n : 0;
}

}  // namespace

std::vector<std::string> remaining_budget_args(std::vector<std::string> args, int measured) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--budget") continue;
    int budget = 0;
    try {
      budget = std::stoi(args[i + 1]);
    } catch (const std::exception&) {
      return args;
    }
    args[i + 1] = std::to_string(std::max(1, budget - measured));
  }
  return args;
}

Result<CampaignSpec> load_campaign(const fs::path& dir) {
  const fs::path f = dir / kCampaignFile;
  std::error_code ec;
  if (!fs::exists(f, ec))
    return make_error(ErrorCode::kNotFound,
                      fmt::format("{}: no campaign here (no {}); start one with `kernelpro bench run {} --suite SUITE`",
                                  dir.string(), kCampaignFile, dir.string()));
  KP_TRY(std::string text, read_file(f.string()));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return make_error(ErrorCode::kInvalidInput, fmt::format("{}: not JSON; fix or remove it", f.string()));
  auto spec = CampaignSpec::from_json(j);
  if (!spec.ok()) return std::move(spec).error().wrap(f.string());
  return spec;
}

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

namespace {

// The problem's status.json as written ("pending" when there is none), without asking who holds
// its claim.
ProblemStatus read_status_file(const fs::path& campaign_dir, const CampaignProblem& p) {
  ProblemStatus s;
  if (auto text = read_file((campaign_dir / "runs" / p.folder() / kProblemStatusFile).string()); text.ok()) {
    json j = json::parse(*text, nullptr, false);
    if (!j.is_discarded()) s = ProblemStatus::from_json(j);
  }
  return s;
}

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

namespace {

// The store's count of evaluations, best ok speedup and LLM spend, read without a lock (WAL).
void read_store_progress(const fs::path& store, LaneProgress& lane) {
  std::error_code ec;
  if (!fs::exists(store, ec)) return;
  auto s = store::RunStore::open(store, store::RunStore::Access::kReader);
  if (!s.ok()) return;
  if (auto evals = s->evaluations(); evals.ok()) {
    lane.candidates = static_cast<int>(evals->size());
    for (const auto& e : *evals)
      if (e.outcome == "ok") lane.best_speedup = std::max(lane.best_speedup, e.speedup);
  }
  if (auto spend = s->llm_spend(); spend.ok()) lane.cost_usd = spend->cost_usd;
}

// What one finished `kernelpro optimize` means for the ledger.
void settle(ProblemStatus& st, const sys::Completed& c, const std::string& out, const std::string& log_tail) {
  st.exit_code = c.exit_code;
  json j = json::parse(out, nullptr, false);
  st.result = j.is_object() ? j : json();
  const std::string stopped = j.is_object() ? j.value("stopped", "") : "";
  st.error.clear();
  if (c.signal != 0 || c.timed_out) {
    st.state = ProblemState::kFailed;
    st.error = fmt::format("kernelpro optimize {}; {}", c.describe(), log_tail);
  } else if (c.exit_code == 0 && (stopped == "interrupted" || stopped == "pending")) {
    st.state = ProblemState::kPending;
  } else if (c.exit_code == 0) {
    st.state = ProblemState::kDone;
  } else if (c.exit_code == 5) {
    st.state = ProblemState::kPending;  // the manual provider waits for an answer; the next run resumes
    st.error = "a prompt waits for its answer (the manual provider); answer it, then run the campaign again";
  } else if (c.exit_code == 3 && stopped == "no_gpu") {
    st.state = ProblemState::kNotTimed;
  } else if (c.exit_code == 3) {
    st.state = ProblemState::kPending;  // the GPU was held by another process: a matter of the machine, retried
    st.error = "the GPU was not available; the next run retries it";
  } else {
    st.state = ProblemState::kFailed;
    st.error = fmt::format("kernelpro optimize exited with status {}: {}", c.exit_code, log_tail);
  }
}

// The lanes a campaign runs: one per GPU asked for, one that inherits the GPU, or one on the CPU.
std::vector<std::string> campaign_lanes(const CampaignOptions& o) {
  std::vector<std::string> lanes;
  if (o.inherit_gpu) {
    lanes.push_back("gpu");
  } else if (o.gpus.empty()) {
    lanes.push_back("cpu");
  } else {
    for (const auto& g : o.gpus) lanes.push_back("gpu" + g);
  }
  return lanes;
}

// One run of a campaign: what its lanes share, and the steps of one lane.
struct CampaignLanes {
  CampaignLanes(const CampaignSpec& spec, const CampaignOptions& o, std::vector<std::string> lanes,
                std::set<std::string> only)
      : spec(spec), o(o), lanes(std::move(lanes)), only(std::move(only)), progress(this->lanes.size()) {
    run.total = static_cast<int>(spec.problems.size());
    for (size_t i = 0; i < this->lanes.size(); ++i) progress[i].lane = this->lanes[i];
  }

  void report(const std::string& event);
  const CampaignProblem* take(std::optional<ProblemClaim>& claim, ProblemStatus& st);
  void lane_main(size_t lane_index);
  void mark_running(const CampaignProblem& p, const std::string& lane, ProblemStatus& st);
  sys::Command optimize_command(const CampaignProblem& p, const fs::path& run_dir, const std::string& lane);
  void run_problem(size_t lane_index, const CampaignProblem& p, ProblemStatus& st);
  sys::Completed watch(sys::Process& child, size_t lane_index, const CampaignProblem& p, const fs::path& run_dir,
                       Clock::time_point started);
  void record_finish(size_t lane_index, const CampaignProblem& p, const ProblemStatus& st);

  const CampaignSpec& spec;
  const CampaignOptions& o;
  const std::vector<std::string> lanes;
  const std::set<std::string> only;

  std::mutex mu;  // guards everything below that the lanes share
  CampaignRun run;
  std::vector<LaneProgress> progress;
  std::map<std::string, int> gpu_retries;  // this run's retries of a problem whose GPU was held
  std::set<std::string> gave_up;           // problems this run will not take again
  int finished_here = 0;
  const Clock::time_point t0 = Clock::now();
  int finished_before = 0;
};

// With mu held.
void CampaignLanes::report(const std::string& event) {
  if (!o.progress) return;
  CampaignProgress p;
  p.lanes = progress;
  p.total = run.total;
  p.finished = finished_before + finished_here;
  p.elapsed_s = since(t0);
  const int left = p.total - p.finished;
  if (finished_here > 0) p.eta_s = p.elapsed_s / finished_here * left / static_cast<double>(lanes.size());
  p.event = event;
  o.progress(p);
}

// The next problem this lane may run, claimed, with its status as the file had it; nullptr
// when none is left. The file is read under the claim: no one else writes it then.
const CampaignProblem* CampaignLanes::take(std::optional<ProblemClaim>& claim, ProblemStatus& st) {
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& p : spec.problems) {
    if (!only.empty() && !only.count(p.id)) continue;
    if (gave_up.count(p.id)) continue;
    auto c = ProblemClaim::try_take(o.dir, p);
    if (!c.ok() || !c->has_value()) continue;  // running elsewhere
    st = read_status_file(o.dir, p);
    if (is_finished(st.state) && !(st.state == ProblemState::kFailed && o.retry_failed)) continue;
    claim = std::move(*c);
    gave_up.insert(p.id);  // taken: only a held GPU gives it back (record_finish)
    return &p;
  }
  return nullptr;
}

void CampaignLanes::lane_main(size_t lane_index) {
  const std::string lane = lanes[lane_index];
  while (!(o.interrupted && o.interrupted())) {
    std::optional<ProblemClaim> claim;
    ProblemStatus st;
    const CampaignProblem* p = take(claim, st);
    if (!p) break;
    mark_running(*p, lane, st);
    run_problem(lane_index, *p, st);
    (void)write_problem_status(o.dir, *p, st);
    claim.reset();
    record_finish(lane_index, *p, st);
  }
}

void CampaignLanes::mark_running(const CampaignProblem& p, const std::string& lane, ProblemStatus& st) {
  st.state = ProblemState::kRunning;
  st.attempts += 1;
  st.host = hostname();
  st.pid = getpid();
  st.lane = lane;
  st.started = utc_now_iso8601();
  st.finished.clear();
  (void)write_problem_status(o.dir, p, st);
}

// The problem's `kernelpro optimize`, resuming its store when it has one.
sys::Command CampaignLanes::optimize_command(const CampaignProblem& p, const fs::path& run_dir,
                                             const std::string& lane) {
  sys::Command cmd;
  cmd.argv = {o.kernelpro.string(), "optimize", p.path.string(), "--run-dir", run_dir.string(), "--json"};
  std::error_code ec;
  const bool resume = fs::exists(run_dir / "store.db", ec);
  if (resume) cmd.argv.push_back("--resume");
  if (p.kind == "kernelbench" && !spec.python.empty()) {
    cmd.argv.push_back("--python");
    cmd.argv.push_back(spec.python);
  }
  for (const auto& a : resume ? remaining_budget_args(spec.optimize_args, measured_candidates(run_dir))
                              : spec.optimize_args)
    cmd.argv.push_back(a);
  cmd.env_set = o.env;
  cmd.env_set.push_back({"KP_CAMPAIGN_PID", std::to_string(getpid())});
  // What a manual prompt's header tells whoever answers it to run next.
  cmd.env_set.push_back({"KP_RESUME_HINT", fmt::format("kernelpro bench run {} (or answer every waiting prompt first: "
                                                       "kernelpro bench prompts {})",
                                                       o.dir.string(), o.dir.string())});
  if (lane == "cpu")
    cmd.env_set.push_back({"CUDA_VISIBLE_DEVICES", ""});
  else if (!o.inherit_gpu)
    cmd.env_set.push_back({"CUDA_VISIBLE_DEVICES", lane.substr(3)});
  if (o.build_slots > 0)
    cmd.env_set.push_back({"KP_BUILD_SLOTS", fmt::format("{}:{}", (o.dir / ".build-slots").string(), o.build_slots)});
  cmd.stdout_path = (run_dir / "optimize.json").string();
  cmd.stderr_path = (run_dir / "optimize.log").string();
  return cmd;
}

// Runs the problem's optimize to its end and settles `st` from what it left.
void CampaignLanes::run_problem(size_t lane_index, const CampaignProblem& p, ProblemStatus& st) {
  const std::string& lane = lanes[lane_index];
  const fs::path run_dir = o.dir / "runs" / p.folder();
  const sys::Command cmd = optimize_command(p, run_dir, lane);
  {
    std::lock_guard<std::mutex> lock(mu);
    progress[lane_index] = LaneProgress{lane, p.id, 0, 0, 0, 0};
    ++run.ran;
    report(fmt::format("{}: {} started (attempt {})", lane, p.id, st.attempts));
  }
  const auto started = Clock::now();
  auto child = sys::Process::spawn(cmd);
  sys::Completed done;
  if (!child.ok()) {
    done.exit_code = 4;
    st.error = child.error().message;
  } else {
    done = watch(**child, lane_index, p, run_dir, started);
  }
  st.wall_s = since(started);
  st.finished = utc_now_iso8601();
  auto out_text = read_file((run_dir / "optimize.json").string());
  auto log_text = read_file((run_dir / "optimize.log").string());
  const std::string out = out_text.ok() ? *out_text : "";
  const std::string log = log_text.ok() ? *log_text : "";
  if (child.ok()) settle(st, done, out, std::string(trim(tail_lines(log, 3))));
  else st.state = ProblemState::kFailed;
}

// Polls the child until it ends, updating the lane's progress; on `interrupted` asks it to stop,
// and kills it when it has not within the grace.
sys::Completed CampaignLanes::watch(sys::Process& child, size_t lane_index, const CampaignProblem& p,
                                    const fs::path& run_dir, Clock::time_point started) {
  const std::string& lane = lanes[lane_index];
  std::optional<Clock::time_point> signalled;
  while (child.running()) {
    if (!signalled && o.interrupted && o.interrupted()) {
      ::kill(child.pid(), SIGINT);  // optimize stops after the evaluation in flight
      signalled = Clock::now();
    }
    if (signalled && since(*signalled) > o.stop_grace_s) {
      (void)child.kill();  // its evaluation did not end in time: the store keeps what it finished
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.poll_s * 1000)));
    LaneProgress lp{lane, p.id, 0, 0, 0, since(started)};
    read_store_progress(run_dir / "store.db", lp);
    std::lock_guard<std::mutex> lock(mu);
    progress[lane_index] = lp;
    report("");
  }
  return child.wait(std::chrono::seconds(5));
}

// The lane's problem has ended: gives a held GPU's problem back (twice at most), counts it and
// reports how it ended.
void CampaignLanes::record_finish(size_t lane_index, const CampaignProblem& p, const ProblemStatus& st) {
  const std::string& lane = lanes[lane_index];
  std::lock_guard<std::mutex> lock(mu);
  if (st.state == ProblemState::kPending && st.exit_code == 3 && ++gpu_retries[p.id] <= 2) gave_up.erase(p.id);
  if (is_finished(st.state)) ++finished_here;
  progress[lane_index] = LaneProgress{lane, "", 0, 0, 0, 0};
  std::string what = to_string(st.state);
  if (st.state == ProblemState::kDone && st.result.is_object())
    what = fmt::format("done: {:.2f}x the reference, {} candidate(s), stopped: {}",
                       st.result.value("speedup_vs_reference", 0.0), st.result.value("nodes", 0),
                       st.result.value("stopped", "?"));
  else if (!st.error.empty())
    what += ": " + st.error;
  report(fmt::format("{}: {} {} ({})", lane, p.id, what, format_seconds(st.wall_s)));
}

}  // namespace

Result<CampaignRun> run_campaign(const CampaignSpec& spec, const CampaignOptions& o) {
  std::error_code ec;
  fs::create_directories(o.dir / "runs", ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("cannot create {}: {}", (o.dir / "runs").string(), ec.message()));
  std::vector<std::string> lanes = campaign_lanes(o);
  std::set<std::string> only(o.only_ids.begin(), o.only_ids.end());
  for (const auto& id : only)
    if (std::none_of(spec.problems.begin(), spec.problems.end(), [&](const auto& p) { return p.id == id; }))
      return make_error(ErrorCode::kInvalidInput, fmt::format("--problem {}: not a problem of this campaign", id));

  CampaignLanes shared(spec, o, std::move(lanes), std::move(only));
  for (const auto& s : campaign_ledger(o.dir, spec))
    shared.finished_before += is_finished(s.state) && !(o.retry_failed && s.state == ProblemState::kFailed);

  std::vector<std::thread> threads;
  for (size_t i = 0; i < shared.lanes.size(); ++i) threads.emplace_back(&CampaignLanes::lane_main, &shared, i);
  for (auto& t : threads) t.join();

  CampaignRun run = std::move(shared.run);
  run.interrupted = o.interrupted && o.interrupted();
  for (const auto& s : campaign_ledger(o.dir, spec)) {
    if (s.state == ProblemState::kDone) ++run.done;
    else if (s.state == ProblemState::kFailed) ++run.failed;
    else if (s.state == ProblemState::kNotTimed) ++run.not_timed;
    else if (s.state == ProblemState::kRunning) ++run.busy_elsewhere;
    else ++run.pending;
  }
  return run;
}

}  // namespace kp::driver
