#include "campaign/scheduler.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "store/run_store.h"
#include "sys/subprocess.h"
#include "util/strings.h"

namespace kp::campaign {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

}  // namespace

std::string Lane::name() const {
  switch (kind) {
    case Kind::kGpu: return "gpu" + gpu;
    case Kind::kInheritedGpu: return "gpu";
    case Kind::kCpu: return "cpu";
  }
  return "cpu";
}

std::vector<Lane> campaign_lanes(const CampaignOptions& o) {
  if (o.inherit_gpu) return {Lane{Lane::Kind::kInheritedGpu, ""}};
  if (o.gpus.empty()) return {Lane{Lane::Kind::kCpu, ""}};
  std::vector<Lane> lanes;
  for (const auto& g : o.gpus) lanes.push_back(Lane{Lane::Kind::kGpu, g});
  return lanes;
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

// What one finished `kernelpro optimize` means for the ledger. `interrupted`: the campaign was
// stopping when the child ended, so a child that a signal ended (the campaign's SIGINT before its
// handler was in place, a SIGTERM to the whole group, the kill after the grace; not a crash's
// SIGSEGV or SIGABRT) was stopped, not
// failed: its store keeps what it committed and the next run resumes the problem.
void settle(ProblemStatus& st, const sys::Completed& c, const std::string& out, const std::string& log_tail,
            bool interrupted) {
  st.exit_code = c.exit_code;
  json j = json::parse(out, nullptr, false);
  st.result = j.is_object() ? j : json();
  const std::string stopped = j.is_object() ? j.value("stopped", "") : "";
  st.error.clear();
  const bool stop_signal = c.signal == SIGINT || c.signal == SIGTERM || c.signal == SIGKILL;
  if (stop_signal && interrupted) {
    st.state = ProblemState::kPending;
    st.error = fmt::format("stopped with the campaign ({}); the next run resumes it; {}", c.describe(), log_tail);
  } else if (c.signal != 0 || c.timed_out) {
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


// One run of a campaign: what its lanes share, and the steps of one lane.
struct CampaignLanes {
  CampaignLanes(const CampaignSpec& spec, const CampaignOptions& o, std::vector<Lane> lanes,
                std::set<std::string> only)
      : spec(spec), o(o), lanes(std::move(lanes)), only(std::move(only)), progress(this->lanes.size()) {
    run.total = static_cast<int>(spec.problems.size());
    for (size_t i = 0; i < this->lanes.size(); ++i) progress[i].lane = this->lanes[i].name();
  }

  void report(const std::string& event);
  const CampaignProblem* take(std::optional<ProblemClaim>& claim, ProblemStatus& st);
  void lane_main(size_t lane_index);
  void mark_running(const CampaignProblem& p, const Lane& lane, ProblemStatus& st);
  sys::Command optimize_command(const CampaignProblem& p, const fs::path& run_dir, const Lane& lane);
  void run_problem(size_t lane_index, const CampaignProblem& p, ProblemStatus& st);
  sys::Completed watch(sys::Process& child, size_t lane_index, const CampaignProblem& p, const fs::path& run_dir,
                       Clock::time_point started);
  void record_finish(size_t lane_index, const CampaignProblem& p, const ProblemStatus& st);

  const CampaignSpec& spec;
  const CampaignOptions& o;
  const std::vector<Lane> lanes;
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
  const Lane& lane = lanes[lane_index];
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

void CampaignLanes::mark_running(const CampaignProblem& p, const Lane& lane, ProblemStatus& st) {
  st.state = ProblemState::kRunning;
  st.attempts += 1;
  st.host = hostname();
  st.pid = getpid();
  st.lane = lane.name();
  st.started = utc_now_iso8601();
  st.finished.clear();
  (void)write_problem_status(o.dir, p, st);
}

// The problem's `kernelpro optimize`, resuming its store when it has one.
sys::Command CampaignLanes::optimize_command(const CampaignProblem& p, const fs::path& run_dir,
                                             const Lane& lane) {
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
  if (lane.kind == Lane::Kind::kCpu)
    cmd.env_set.push_back({"CUDA_VISIBLE_DEVICES", ""});
  else if (lane.kind == Lane::Kind::kGpu)
    cmd.env_set.push_back({"CUDA_VISIBLE_DEVICES", lane.gpu});
  if (o.build_slots > 0)
    cmd.env_set.push_back({"KP_BUILD_SLOTS", fmt::format("{}:{}", (o.dir / ".build-slots").string(), o.build_slots)});
  cmd.stdout_path = (run_dir / "optimize.json").string();
  cmd.stderr_path = (run_dir / "optimize.log").string();
  return cmd;
}

// Runs the problem's optimize to its end and settles `st` from what it left.
void CampaignLanes::run_problem(size_t lane_index, const CampaignProblem& p, ProblemStatus& st) {
  const Lane& lane_at = lanes[lane_index];
  const std::string lane = lane_at.name();
  const fs::path run_dir = o.dir / "runs" / p.folder();
  const sys::Command cmd = optimize_command(p, run_dir, lane_at);
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
  if (child.ok()) settle(st, done, out, std::string(trim(tail_lines(log, 3))), o.interrupted && o.interrupted());
  else st.state = ProblemState::kFailed;
}

// Polls the child until it ends, updating the lane's progress; on `interrupted` asks it to stop,
// and kills it when it has not within the grace.
sys::Completed CampaignLanes::watch(sys::Process& child, size_t lane_index, const CampaignProblem& p,
                                    const fs::path& run_dir, Clock::time_point started) {
  const std::string lane = lanes[lane_index].name();
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
  const std::string lane = lanes[lane_index].name();
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
  std::vector<Lane> lanes = campaign_lanes(o);
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

}  // namespace kp::campaign
