#include "driver/optimize_session.h"

#include "eval/result_json.h"
#include "driver/run_ledger.h"

#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "search/tune_space.h"
#include "store/run_store.h"
#include "task/tune_params.h"
#include "util/strings.h"
#include "task/work_kind.h"

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;
using search::TunePoint;
using search::TuneSpace;

json OptimizeReport::to_json() const {
  json j = {{"stopped", stopped},
          {"evaluated", evaluated},
          {"nodes", nodes},
          {"seed_seconds", seed_seconds},
          {"best_seconds", best_seconds},
          {"reference_seconds", reference_seconds},
          {"best_joules", best_joules},
          {"fastest_seconds", fastest_seconds},
          {"fastest_joules", fastest_joules},
          {"speedup_vs_seed", best_seconds > 0 ? seed_seconds / best_seconds : 0.0},
          {"speedup_vs_reference", best_seconds > 0 ? reference_seconds / best_seconds : 0.0},
          {"best_point", best_point},
          {"best_source", best_source.string()},
          {"time_s",
           {{"build", build_s},
            {"worker", worker_s},
            {"wall", wall_s},
            {"ahead", ahead_s},
            {"llm", llm_s},
            {"analyze", analyze_s},
            {"search_and_store", wall_s - build_s - worker_s - llm_s - analyze_s}}}};
  if (!analyze_parts_s.empty()) j["time_s"]["analyze_parts"] = analyze_parts_s;
  if (!best_direction.empty()) j["best_direction"] = best_direction;
  if (duplicates > 0) j["duplicates"] = duplicates;
  if (unprofiled > 0) j["unprofiled"] = {{"candidates", unprofiled}, {"first_why", unprofiled_why}};
  if (built_ahead > 0) j["built_ahead"] = built_ahead;
  if (!pending.empty()) j["pending"] = pending;
  return j;
}

namespace {

using Clock = std::chrono::steady_clock;

// "BLOCK=512 VEC=4" back to a point.
TunePoint parse_point(const std::string& text) {
  TunePoint p;
  for (const auto& part : split(text, ' ')) {
    const size_t eq = part.find('=');
    if (eq == std::string::npos) continue;
    try {
      p[part.substr(0, eq)] = std::stoll(part.substr(eq + 1));
    } catch (...) {
    }
  }
  return p;
}

// One run of the tuner: the seed and its space, the run's ledger, the tree's nodes by id (their
// store ids and points), and what the search loop's callbacks leave for the run (a failure, a
// machine stop, the child just measured).
class Tuner {
 public:
  Tuner(const task::Task& task, Workbench& bench, const LoopControls& controls, const OptimizeOptions& o, RunLedger& ledger,
        const std::string& seed_source, const TuneSpace& space)
      : task_(task),
        bench_(bench),
        controls_(controls),
        o_(o),
        ledger_(ledger),
        store_(ledger.store()),
        seed_source_(seed_source),
        space_(space) {}

  store::RunStore& store() { return store_; }
  void say(const std::string& s) const { controls_.say(s); }
  // The seed evaluated and stored as the root. A report when the run stops at the seed (its
  // evaluation needs the machine), else nothing.
  Result<std::optional<OptimizeReport>> measure_seed();
  // The tree, rebuilt from the store: measurements replayed in the order they were made.
  Result<search::Tree> replay(const std::vector<store::NodeRow>& rows);
  search::LoopHooks loop_hooks();
  // The search's expansion of `e`: the parent's first untried neighbour, stored, evaluated and
  // measured; nothing when it has none left, or when the run must stop (failure_, machine_stop_).
  std::optional<std::pair<search::Direction, search::Measurement>> expand(const search::Tree& t,
                                                                          const search::Expansion& e);
  // After the search: the compiles ahead joined, then the search's failure, or the best point
  // written to RUN_DIR/best.cu and the summary.
  Result<OptimizeReport> finish(const search::Tree& tree);

 private:
  Result<eval::EvalResult> evaluate_point(const TunePoint& p, bool seed, int64_t node);
  store::Lesson lesson_of(const TunePoint& from, const TunePoint& n, const eval::EvalResult& r,
                          const search::Measurement& before, const search::Measurement& m) const;
  void join_ahead();
  Status build_ahead(const TunePoint& parent, const TunePoint& now);
  Status write_ahead(const std::vector<TunePoint>& points, std::vector<fs::path>& files);
  std::optional<StopReason> over_budget() const { return ledger_.over_budget(false, controls_.interrupted); }
  void after(const search::Tree& t, int child);

  const task::Task& task_;
  Workbench& bench_;
  const LoopControls& controls_;
  const OptimizeOptions& o_;
  RunLedger& ledger_;
  store::RunStore& store_;
  const std::string& seed_source_;
  const TuneSpace& space_;
  // The tree's nodes by id: their store ids and points; and the points tried, by description.
  std::vector<int64_t> db_id_;
  std::vector<TunePoint> point_;
  std::set<std::string> tried_;
  std::optional<Error> failure_;
  std::optional<StopReason> machine_stop_;  // the GPU went away or is held: stop here
  std::optional<std::pair<int64_t, TunePoint>> pending_;
  // The compiles ahead in flight (build_ahead) and the points handed to them.
  std::future<std::pair<int, double>> ahead_;
  std::set<std::string> queued_;
};

// One point: its candidate file, stored, evaluated. The store's verdict is committed with
// the node, so a kill after this returns loses nothing.
Result<eval::EvalResult> Tuner::evaluate_point(const TunePoint& p, bool seed, int64_t node) {
  const std::string source = seed ? seed_source_ : TuneSpace::apply(seed_source_, p);
  KP_TRY(int64_t cand, store_.add_candidate(source, ""));
  KP_TRY(auto file, ledger_.write_candidate(cand, {source, ""}));
  KP_TRY(eval::EvalResult r, bench_.evaluate({file.cu, {}, seed}));
  ledger_.count_evaluation();
  ledger_.add_times(r);
  const auto m = measurement_of(r);
  if (node >= 0 && !eval::is_machine_outcome(r.outcome)) {
    KP_TRY_STATUS(store_.record_evaluation(node,
                                           {cand, eval::to_string(r.outcome), r.reason, m.seconds, m.joules,
                                            r.speedup_vs_reference, eval::result_to_json(task_, r).dump()},
                                           m.ok, m.seconds, m.joules));
  }
  return r;
}

Result<std::optional<OptimizeReport>> Tuner::measure_seed() {
  say(fmt::format("seed: {} ({} points in the tuning space)", TuneSpace::describe(space_.defaults()), space_.size()));
  KP_TRY(eval::EvalResult r, evaluate_point(space_.defaults(), true, -1));
  KP_TRY(std::optional<OptimizeReport> stopped, ledger_.gate_seed(r, "tuning it"));
  if (stopped) return stopped;
  KP_TRY(int64_t cand, store_.add_candidate(seed_source_, ""));
  KP_TRY_STATUS(ledger_.record_root(task_, RunMode::kTuner, cand, TuneSpace::describe(space_.defaults()), r,
                                    eval::result_to_json(task_, r).dump()));
  return std::optional<OptimizeReport>();
}

Result<search::Tree> Tuner::replay(const std::vector<store::NodeRow>& rows) {
  return replay_tree(
      rows, ledger_.reference(), o_.reward,
      [](const std::string& kind) {
        return search::edge_kind_from_string(kind) == search::EdgeKind::kRepair ? search::EdgeKind::kRepair
                                                                                : search::EdgeKind::kTune;
      },
      [&](const store::NodeRow& r, int) {
        db_id_.push_back(r.id);
        point_.push_back(parse_point(r.direction));
        tried_.insert(r.direction);
        return ok_status();
      });
}

// Compiling ahead: before `now` is evaluated, the points likely to come next are written and
// handed to a thread that compiles them. The thread is joined before the next evaluation, so
// nvcc never builds one source twice at once.
void Tuner::join_ahead() {
  if (!ahead_.valid()) return;
  const auto [built, seconds] = ahead_.get();
  ledger_.report().built_ahead += built;
  ledger_.report().ahead_s += seconds;
}

Status Tuner::build_ahead(const TunePoint& parent, const TunePoint& now) {
  join_ahead();
  if (!bench_.builds_ahead() || o_.build_ahead <= 0) return ok_status();
  std::vector<fs::path> files;
  KP_TRY_STATUS(write_ahead(space_.neighbours(parent), files));
  KP_TRY_STATUS(write_ahead(space_.neighbours(now), files));
  if (files.empty()) return ok_status();
  ahead_ = std::async(std::launch::async, [files, &bench = bench_]() {
    const auto ta = Clock::now();
    for (const auto& f : files) bench.build_ahead(f);
    return std::make_pair(static_cast<int>(files.size()), std::chrono::duration<double>(Clock::now() - ta).count());
  });
  return ok_status();
}

// The candidate files of those of `points` neither tried nor queued yet, written and added to
// `files` while it holds fewer than OptimizeOptions::build_ahead.
Status Tuner::write_ahead(const std::vector<TunePoint>& points, std::vector<fs::path>& files) {
  for (const TunePoint& p : points) {
    if (static_cast<int>(files.size()) >= o_.build_ahead) break;
    const std::string text = TuneSpace::describe(p);
    if (tried_.count(text) || !queued_.insert(text).second) continue;
    const std::string source = TuneSpace::apply(seed_source_, p);
    KP_TRY(int64_t cand, store_.add_candidate(source, ""));
    KP_TRY(auto written, ledger_.write_candidate(cand, {source, ""}));
    files.push_back(written.cu);
  }
  return ok_status();
}

// The lesson of the change from `from` to `n`: what moved, and what it did to the time and the
// energy.
store::Lesson Tuner::lesson_of(const TunePoint& from, const TunePoint& n, const eval::EvalResult& r,
                               const search::Measurement& before, const search::Measurement& m) const {
  std::string moved;
  for (const auto& [name, value] : n)
    if (from.at(name) != value) moved = fmt::format("{} {} -> {}", name, from.at(name), value);
  store::Lesson lesson{
      task_.name,
      task::work_kind(task_),
      "",
      moved,
      "tune",
      eval::to_string(r.outcome),
      0,
      0,
      m.ok ? fmt::format("{:.4g} ms -> {:.4g} ms", before.seconds * 1e3, m.seconds * 1e3) : r.reason.substr(0, 200)};
  set_change_ratios(lesson, before, m);
  return lesson;
}

std::optional<std::pair<search::Direction, search::Measurement>> Tuner::expand(const search::Tree& t,
                                                                               const search::Expansion& e) {
  const TunePoint& from = point_[static_cast<size_t>(e.parent)];
  for (const TunePoint& n : space_.neighbours(from)) {
    const std::string text = TuneSpace::describe(n);
    if (!tried_.insert(text).second) continue;
    auto node = store_.add_node({0, db_id_[static_cast<size_t>(e.parent)],
                                 search::to_string(e.repair ? search::EdgeKind::kRepair : search::EdgeKind::kTune),
                                 text, 0, false});
    if (!node) {
      failure_ = node.error();
      return std::nullopt;
    }
    say(fmt::format("evaluating {} | {}", text, ledger_.status(t)));
    if (Status s = build_ahead(from, n); !s) {
      failure_ = s.error();
      return std::nullopt;
    }
    auto r = evaluate_point(n, false, *node);
    if (!r) {
      failure_ = r.error();
      return std::nullopt;
    }
    if (eval::is_machine_outcome(r->outcome)) {  // the machine's, not the point's: stop, resume later
      say(fmt::format("{}: {} ({})", text, eval::to_string(r->outcome), r->reason));
      machine_stop_ = stop_for(r->outcome);
      return std::nullopt;
    }
    pending_ = {{*node, n}};
    const auto m = measurement_of(*r);
    if (auto l = store_.add_lesson(lesson_of(from, n, *r, *t.node(e.parent).measured, m)); !l) {
      failure_ = l.error();
      return std::nullopt;
    }
    say(measured_line(text, eval::to_string(r->outcome), m, t.node(0).measured->seconds, r->reason,
                      ledger_.status(t, &m)));
    return std::make_pair(search::Direction{search::EdgeKind::kTune, text}, m);
  }
  return std::nullopt;
}

// The child just recorded takes its store id and point; its parent's flags are stored.
void Tuner::after(const search::Tree& t, int child) {
  db_id_.push_back(pending_->first);
  point_.push_back(pending_->second);
  const search::Node& parent = t.node(t.node(child).parent);
  if (auto s = store_.set_node_flags(db_id_[static_cast<size_t>(parent.id)], parent.closed, parent.exhausted); !s)
    failure_ = s.error();
}

search::LoopHooks Tuner::loop_hooks() {
  search::LoopHooks loop;
  loop.stop = [this]() { return failure_.has_value() || machine_stop_.has_value() || over_budget().has_value(); };
  loop.after = [this](const search::Tree& t, int child) { after(t, child); };
  return loop;
}

Result<OptimizeReport> Tuner::finish(const search::Tree& tree) {
  join_ahead();
  if (failure_) return *failure_;

  // The best, with its verdict.
  const int best =
      ledger_.settle(tree, machine_stop_ ? *machine_stop_ : over_budget().value_or(StopReason::kExhausted));
  OptimizeReport& report = ledger_.report();
  report.best_point = TuneSpace::describe(point_[static_cast<size_t>(best)]);
  report.best_source = o_.run_dir / "best.cu";
  const std::string best_text =
      best == 0 ? seed_source_ : TuneSpace::apply(seed_source_, point_[static_cast<size_t>(best)]);
  KP_TRY_STATUS(write_file(report.best_source.string(), best_text));
  return ledger_.write_summary(task_, json::object());
}

}  // namespace

Result<OptimizeReport> run_optimize(const task::Task& task, Workbench& bench, const LoopControls& controls,
                                    const OptimizeOptions& o) {
  const auto t0 = Clock::now();
  if (!task.seed_path)
    return make_error(
        ErrorCode::kInvalidInput,
        fmt::format("{}: no seed.cu. Without a model, optimize tunes the KP_TUNE parameters of the task's "
                    "seed: add one, or configure a model (--provider) to write candidates",
                    task.name));
  KP_TRY(std::string seed_source, read_file(task.seed_path->string()));
  KP_TRY(auto params, task::parse_tune_params(seed_source));
  TuneSpace space(params);
  if (space.empty())
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: the seed declares no KP_TUNE parameters, so there is nothing to tune without a "
                                  "model; declare some (KP_TUNE(NAME, default, alternatives...)) or configure a model",
                                  task.seed_path->string()));
  KP_TRY(RunLedger ledger, RunLedger::open(task, o, RunMode::kTuner, t0));
  Tuner tuner(task, bench, controls, o, ledger, seed_source, space);
  KP_TRY(RunLedger::Start start, ledger.start([&] { return tuner.measure_seed(); }));
  if (start.stopped) return std::move(*start.stopped);
  const auto& rows = start.rows;
  KP_TRY(search::Tree tree, tuner.replay(rows));
  if (rows.size() > 1) tuner.say(fmt::format("resume: {} candidates measured before", tree.size()));
  KP_TRY(auto strategy, search::make_strategy(o.strategy, o.search));
  search::run_search(
      *strategy, tree, [&](const search::Tree& t, const search::Expansion& e) { return tuner.expand(t, e); },
      o.max_evaluations, o.search, tuner.loop_hooks());
  return tuner.finish(tree);
}
}  // namespace kp::driver
