#include "driver/run_ledger.h"

#include <thread>

#include <fmt/format.h>

#include "util/source_text.h"
#include "util/strings.h"

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(RunMode m) {
  switch (m) {
    case RunMode::kTuner: return "tuner";
    case RunMode::kModel: return "model";
  }
  return "?";
}

std::optional<RunMode> run_mode_from_string(std::string_view s) {
  for (RunMode m : {RunMode::kTuner, RunMode::kModel})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::kExhausted: return "exhausted";
    case StopReason::kBudget: return "budget";
    case StopReason::kInterrupted: return "interrupted";
    case StopReason::kNoGpu: return "no_gpu";
    case StopReason::kPending: return "pending";
    case StopReason::kGpuUnavailable: return "gpu_unavailable";
  }
  return "?";
}

std::optional<StopReason> stop_reason_from_string(std::string_view s) {
  for (StopReason r : {StopReason::kExhausted, StopReason::kBudget, StopReason::kInterrupted, StopReason::kNoGpu,
                       StopReason::kPending, StopReason::kGpuUnavailable})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

StopReason stop_for(eval::Outcome machine_outcome) {
  return machine_outcome == eval::Outcome::kGpuUnavailable ? StopReason::kGpuUnavailable : StopReason::kNoGpu;
}

StopReason first_to_act_on(StopReason a, StopReason b) {
  auto rank = [](StopReason r) {
    switch (r) {
      case StopReason::kNoGpu:
      case StopReason::kGpuUnavailable: return 0;
      case StopReason::kPending: return 1;
      case StopReason::kBudget: return 2;
      default: return 3;
    }
  };
  return rank(b) < rank(a) ? b : a;
}

std::optional<StopReason> over_budget(const Spent& s, const OptimizeOptions& o, const std::function<bool()>& interrupted) {
  if (s.evaluated >= o.max_evaluations) return StopReason::kBudget;
  if (o.max_wall_s > 0 && s.wall_s >= o.max_wall_s) return StopReason::kBudget;
  if (o.max_gpu_s > 0 && s.worker_s >= o.max_gpu_s) return StopReason::kBudget;
  if (s.llm_over) return StopReason::kBudget;
  if (interrupted && interrupted()) return StopReason::kInterrupted;
  return std::nullopt;
}

search::Measurement measurement_of(const eval::EvalResult& r) {
  search::Measurement m;
  m.ok = r.outcome == eval::Outcome::kOk;
  m.seconds = r.time.median;
  if (r.report && r.report->energy && r.report->energy->measured) m.joules = r.report->energy->joules_per_call;
  return m;
}

void set_change_ratios(store::Lesson& l, const search::Measurement& before, const search::Measurement& m) {
  l.time_ratio = m.ok && before.ok && m.seconds > 0 ? before.seconds / m.seconds : 0;
  l.energy_ratio = m.ok && m.joules > 0 && before.joules > 0 ? before.joules / m.joules : 0;
}

std::string measured_line(const std::string& text, const std::string& outcome, const search::Measurement& m,
                          double seed_seconds, const std::string& reason, const std::string& status) {
  return fmt::format("{}: {}{} | {}", text, outcome,
                     m.ok ? fmt::format(" {:.4g} ms, {:.2f}x the seed", m.seconds * 1e3, seed_seconds / m.seconds)
                          : " (" + reason.substr(0, 120) + ")",
                     status);
}

Result<int> share_lessons(store::RunStore& run, const fs::path& memory) {
  KP_TRY(auto all, run.lessons_in_order());
  const size_t done = static_cast<size_t>(std::stoll(run.meta("lessons_shared").value_or("0")));
  if (done >= all.size()) return 0;
  Result<store::RunStore> mem = make_error(ErrorCode::kUnavailable, "");
  for (int attempt = 0; attempt < 20; ++attempt) {
    mem = store::RunStore::open(memory);
    if (mem.ok() || mem.error().code != ErrorCode::kUnavailable) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!mem.ok()) return mem.error().code == ErrorCode::kUnavailable ? Result<int>(0) : Result<int>(mem.error());
  for (size_t i = done; i < all.size(); ++i) {
    KP_TRY(int64_t id, mem->add_lesson(all[i]));
    (void)id;
  }
  KP_TRY_STATUS(run.set_meta("lessons_shared", std::to_string(all.size())));
  return static_cast<int>(all.size() - done);
}

Result<store::RunStore> open_run_store(const task::Task& task, const OptimizeOptions& o, RunMode mode) {
  KP_TRY(auto store, store::RunStore::open(o.run_dir / "store.db"));
  KP_TRY(auto rows, store.nodes());
  if (rows.empty()) return store;
  if (!o.resume)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{} holds an earlier run: add --resume to continue it, or choose another --run-dir",
                                  o.run_dir.string()));
  if (auto kept = store.meta("task"); kept && *kept != task.name)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{} holds a run of task {}, not {}", o.run_dir.string(), *kept, task.name));
  // Runs of the tuner made before the mode was kept are the tuner's.
  const std::string kept = store.meta("mode").value_or(to_string(RunMode::kTuner));
  if (kept != to_string(mode)) {
    auto words = [](bool model) { return model ? "model-driven search" : "offline tuner"; };
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{} holds a run of the {}, not of the {}: give this run a --run-dir of its own",
                                  o.run_dir.string(), words(run_mode_from_string(kept) == RunMode::kModel),
                                  words(mode == RunMode::kModel)));
  }
  return store;
}

Result<CandidatePaths> write_candidate_files(const agent::CandidateFiles& f, const fs::path& dir,
                                             const std::string& stem) {
  CandidatePaths p;
  if (!f.cuda.empty()) {
    p.cu = dir / (stem + ".cu");
    KP_TRY_STATUS(write_file(p.cu.string(), f.cuda));
  }
  if (!f.python.empty()) {
    p.py = dir / (stem + ".py");
    KP_TRY_STATUS(write_file(p.py.string(), f.python));
  }
  return p;
}

Result<search::Tree> replay_tree(const std::vector<store::NodeRow>& rows, const search::Measurement& reference,
                                 const search::RewardOptions& reward,
                                 const std::function<search::EdgeKind(const std::string& kind)>& kind_of,
                                 const std::function<Status(const store::NodeRow& row, int id)>& each) {
  if (rows.empty()) return make_error(ErrorCode::kInvalidInput, "the run store holds no root node to resume from");
  const auto& root = rows.front();
  search::Tree tree({root.ok, root.seconds, root.joules}, reference, reward);
  KP_TRY_STATUS(each(root, 0));
  std::map<int64_t, int> tree_id{{root.id, 0}};
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (!r.measured) continue;  // in flight when the run stopped: proposed again
    auto parent = tree_id.find(r.parent);
    if (parent == tree_id.end()) continue;
    const int id = tree.add(parent->second, {kind_of(r.kind), r.direction});
    tree.measure(id, {r.ok, r.seconds, r.joules});
    tree.node(id).closed = r.closed;
    tree.node(id).exhausted = r.exhausted;
    tree_id[r.id] = id;
    KP_TRY_STATUS(each(r, id));
  }
  tree.node(0).closed = root.closed;
  tree.node(0).exhausted = root.exhausted;
  return tree;
}

Result<KnownVerdicts> KnownVerdicts::load(store::RunStore& store) {
  KnownVerdicts k;
  KP_TRY(auto evals, store.evaluations());
  for (auto& e : evals) k.by_candidate_[e.candidate] = std::move(e);
  for (const auto& [id, row] : k.by_candidate_) {
    KP_TRY(auto files, store.candidate(id));
    k.by_code_.emplace(code_key(files.first, files.second), id);
  }
  return k;
}

void KnownVerdicts::add(int64_t candidate, store::EvaluationRow row, const agent::CandidateFiles* files) {
  by_candidate_[candidate] = std::move(row);
  if (files) by_code_.emplace(code_key(files->cuda, files->python), candidate);
}

const store::EvaluationRow* KnownVerdicts::find(int64_t candidate, const agent::CandidateFiles& files) const {
  if (not_for_children_.count(candidate)) return nullptr;
  if (const auto* v = of(candidate)) return v;
  if (auto c = by_code_.find(code_key(files.cuda, files.python)); c != by_code_.end())
    return not_for_children_.count(c->second) ? nullptr : of(c->second);
  return nullptr;
}

const store::EvaluationRow* KnownVerdicts::of(int64_t candidate) const {
  auto v = by_candidate_.find(candidate);
  return v == by_candidate_.end() ? nullptr : &v->second;
}

Result<RunLedger> RunLedger::open(const task::Task& task, const OptimizeOptions& options, RunMode mode,
                                  Clock::time_point start) {
  KP_TRY(auto store, open_run_store(task, options, mode));
  std::error_code ec;
  fs::create_directories(options.run_dir / "candidates", ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("creating {}: {}", options.run_dir.string(), ec.message()));
  return RunLedger(std::move(store), options, start);
}

Result<CandidatePaths> RunLedger::write_candidate(int64_t candidate, const agent::CandidateFiles& files) {
  return write_candidate_files(files, options_->run_dir / "candidates", std::to_string(candidate));
}

void RunLedger::add_times(const eval::EvalResult& r) {
  report_.build_s += r.build_seconds;
  report_.worker_s += r.worker_seconds;
}

double RunLedger::wall_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

std::optional<StopReason> RunLedger::over_budget(bool llm_over, const std::function<bool()>& interrupted) const {
  return driver::over_budget({evaluated_, wall_s(), report_.worker_s, llm_over}, *options_, interrupted);
}

std::string RunLedger::status(const search::Tree& t, const search::Measurement* just, const std::string& suffix) const {
  double best = t.node(t.best()).measured->seconds;
  if (just && just->ok && just->seconds > 0 && just->seconds < best) best = just->seconds;
  return fmt::format("best {:.2f}x the seed | {}/{} evaluated, {:.0f} s, GPU {:.0f} s{}",
                     t.node(0).measured->seconds / best, evaluated_, options_->max_evaluations, wall_s(),
                     report_.worker_s, suffix);
}

OptimizeReport RunLedger::stop_at_seed(StopReason why) {
  report_.stopped = to_string(why);
  report_.evaluated = evaluated_;
  return report_;
}

Result<RunLedger::Start> RunLedger::start(
    const std::function<Result<std::optional<OptimizeReport>>()>& measure_seed) {
  Start st;
  KP_TRY(st.rows, store_.nodes());
  if (!st.rows.empty()) return st;
  KP_TRY(st.stopped, measure_seed());
  if (st.stopped) return st;
  KP_TRY(st.rows, store_.nodes());
  if (st.rows.empty()) return make_error(ErrorCode::kInternal, "the seed was measured but not stored");
  return st;
}

Result<std::optional<OptimizeReport>> RunLedger::gate_seed(const eval::EvalResult& r, const std::string& doing) {
  if (eval::is_machine_outcome(r.outcome)) return std::optional<OptimizeReport>(stop_at_seed(stop_for(r.outcome)));
  if (r.outcome != eval::Outcome::kOk)
    return make_error(ErrorCode::kInvalidInput, fmt::format("the seed does not pass ({}: {}): fix it before {}",
                                                            eval::to_string(r.outcome), r.reason, doing));
  return std::optional<OptimizeReport>();
}

Status RunLedger::record_root(const task::Task& task, RunMode mode, int64_t candidate, const std::string& direction,
                              const eval::EvalResult& seed, const std::string& report_json,
                              const std::vector<std::pair<std::string, std::string>>& meta) {
  KP_TRY_STATUS(store_.set_meta("task", task.name));
  KP_TRY_STATUS(store_.set_meta("mode", to_string(mode)));
  for (const auto& [key, value] : meta) KP_TRY_STATUS(store_.set_meta(key, value));
  KP_TRY_STATUS(store_.set_meta("reference_seconds", fmt::format("{:.17g}", seed.reference_seconds)));
  const auto m = measurement_of(seed);
  KP_TRY(int64_t root, store_.add_node({0, -1, "root", direction, candidate, false}));
  return store_.record_evaluation(
      root, {candidate, "ok", "", m.seconds, m.joules, seed.speedup_vs_reference, report_json}, true, m.seconds,
      m.joules);
}

search::Measurement RunLedger::reference() {
  return {true, std::stod(store_.meta("reference_seconds").value_or("0")), 0};
}

int RunLedger::settle(const search::Tree& tree, StopReason stopped) {
  const int best = tree.best();
  report_.stopped = to_string(stopped);
  report_.nodes = 0;  // measured: those in flight when the run stopped are not in the store
  for (size_t i = 0; i < tree.size(); ++i) report_.nodes += tree.node(static_cast<int>(i)).measured ? 1 : 0;
  report_.evaluated = evaluated_;
  report_.seed_seconds = tree.node(0).measured->seconds;
  report_.best_seconds = tree.node(best).measured->seconds;
  report_.best_joules = tree.node(best).measured->joules;
  const int fastest = tree.fastest();
  report_.fastest_seconds = fastest < 0 ? 0 : tree.node(fastest).measured->seconds;
  report_.fastest_joules = fastest < 0 ? 0 : tree.node(fastest).measured->joules;
  report_.reference_seconds = tree.reference().seconds;
  return best;
}

Result<OptimizeReport> RunLedger::write_summary(const task::Task& task, const json& extra) {
  report_.wall_s = wall_s();
  json j = report_.to_json();
  j["task"] = task.name;
  j["strategy"] = options_->strategy;
  j["objective"] = search::to_string(options_->reward.objective);
  for (const auto& [key, value] : extra.items()) j[key] = value;
  if (!options_->memory.empty()) {
    KP_TRY(report_.lessons_shared, share_lessons(store_, options_->memory));
    j["lessons_shared"] = report_.lessons_shared;
  }
  KP_TRY_STATUS(write_file((options_->run_dir / "best.json").string(), j.dump(2) + "\n"));
  return report_;
}

}  // namespace kp::driver
