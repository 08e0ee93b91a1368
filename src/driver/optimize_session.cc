#include "driver/optimize_session.h"

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

}  // namespace

Result<OptimizeReport> run_optimize(const task::Task& task, const OptimizeHooks& hooks, const OptimizeOptions& o) {
  const auto t0 = Clock::now();
  auto say = [&](const std::string& s) {
    if (hooks.progress) hooks.progress(s);
  };
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
  store::RunStore& store = ledger.store();
  KP_TRY(auto rows, store.nodes());

  // One point: its candidate file, stored, evaluated. The store's verdict is committed with
  // the node, so a kill after this returns loses nothing.
  auto evaluate_point = [&](const TunePoint& p, bool seed, int64_t node) -> Result<eval::EvalResult> {
    const std::string source = seed ? seed_source : TuneSpace::apply(seed_source, p);
    KP_TRY(int64_t cand, store.add_candidate(source, ""));
    KP_TRY(auto file, ledger.write_candidate(cand, {source, ""}));
    KP_TRY(eval::EvalResult r, hooks.evaluate(file.cu));
    ledger.count_evaluation();
    ledger.add_times(r);
    const auto m = measurement_of(r);
    if (node >= 0 && !eval::is_machine_outcome(r.outcome)) {
      KP_TRY_STATUS(store.record_evaluation(node,
                                            {cand, eval::to_string(r.outcome), r.reason, m.seconds, m.joules,
                                             r.speedup_vs_reference, hooks.record ? hooks.record(r) : "{}"},
                                            m.ok, m.seconds, m.joules));
    }
    return r;
  };

  if (rows.empty()) {
    say(fmt::format("seed: {} ({} points in the tuning space)", TuneSpace::describe(space.defaults()), space.size()));
    KP_TRY(eval::EvalResult r, evaluate_point(space.defaults(), true, -1));
    if (eval::is_machine_outcome(r.outcome)) return ledger.stop_at_seed(stop_for(r.outcome));
    if (r.outcome != eval::Outcome::kOk)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("the seed does not pass ({}: {}): fix it before tuning it",
                                    eval::to_string(r.outcome), r.reason));
    KP_TRY(int64_t cand, store.add_candidate(seed_source, ""));
    KP_TRY_STATUS(ledger.record_root(task, RunMode::kTuner, cand, TuneSpace::describe(space.defaults()), r,
                                     hooks.record ? hooks.record(r) : "{}"));
    KP_TRY(rows, store.nodes());
  }

  // The tree, rebuilt from the store: measurements replayed in the order they were made.
  std::vector<int64_t> db_id;
  std::vector<TunePoint> point;
  std::set<std::string> tried;
  KP_TRY(search::Tree tree,
         replay_tree(
             rows, ledger.reference(), o.reward,
             [](const std::string& kind) {
               return search::edge_kind_from_string(kind) == search::EdgeKind::kRepair ? search::EdgeKind::kRepair
                                                                                       : search::EdgeKind::kTune;
             },
             [&](const store::NodeRow& r, int) {
               db_id.push_back(r.id);
               point.push_back(parse_point(r.direction));
               tried.insert(r.direction);
               return ok_status();
             }));
  if (rows.size() > 1) say(fmt::format("resume: {} candidates measured before", tree.size()));

  // The status of the progress lines: the best so far and the budget used. `just`: a
  // measurement not in the tree yet.
  auto status = [&](const search::Tree& t, const search::Measurement* just = nullptr) {
    return ledger.status(t, just);
  };
  KP_TRY(auto strategy, search::make_strategy(o.strategy, o.search));
  std::optional<Error> failure;
  std::optional<StopReason> machine_stop;  // the GPU went away or is held: stop here
  std::optional<std::pair<int64_t, TunePoint>> pending;

  // Compiling ahead: before `now` is evaluated, the points likely to come next are written and
  // handed to a thread that compiles them. The thread is joined before the next evaluation, so
  // nvcc never builds one source twice at once.
  std::future<std::pair<int, double>> ahead;
  std::set<std::string> queued;
  auto join_ahead = [&]() {
    if (!ahead.valid()) return;
    const auto [built, seconds] = ahead.get();
    ledger.report().built_ahead += built;
    ledger.report().ahead_s += seconds;
  };
  auto build_ahead = [&](const TunePoint& parent, const TunePoint& now) -> Status {
    join_ahead();
    if (!hooks.prebuild || o.build_ahead <= 0) return ok_status();
    std::vector<fs::path> files;
    auto consider = [&](const std::vector<TunePoint>& points) -> Status {
      for (const TunePoint& p : points) {
        if (static_cast<int>(files.size()) >= o.build_ahead) break;
        const std::string text = TuneSpace::describe(p);
        if (tried.count(text) || !queued.insert(text).second) continue;
        const std::string source = TuneSpace::apply(seed_source, p);
        KP_TRY(int64_t cand, store.add_candidate(source, ""));
        KP_TRY(auto written, ledger.write_candidate(cand, {source, ""}));
        files.push_back(written.cu);
      }
      return ok_status();
    };
    KP_TRY_STATUS(consider(space.neighbours(parent)));
    KP_TRY_STATUS(consider(space.neighbours(now)));
    if (files.empty()) return ok_status();
    ahead = std::async(std::launch::async, [files, &hooks]() {
      const auto ta = Clock::now();
      for (const auto& f : files) hooks.prebuild(f);
      return std::make_pair(static_cast<int>(files.size()), std::chrono::duration<double>(Clock::now() - ta).count());
    });
    return ok_status();
  };
  auto expand = [&](const search::Tree& t,
                    const search::Expansion& e) -> std::optional<std::pair<search::Direction, search::Measurement>> {
    for (const TunePoint& n : space.neighbours(point[static_cast<size_t>(e.parent)])) {
      const std::string text = TuneSpace::describe(n);
      if (!tried.insert(text).second) continue;
      auto node =
          store.add_node({0, db_id[static_cast<size_t>(e.parent)],
                          search::to_string(e.repair ? search::EdgeKind::kRepair : search::EdgeKind::kTune), text, 0,
                          false});
      if (!node) {
        failure = node.error();
        return std::nullopt;
      }
      say(fmt::format("evaluating {} | {}", text, status(t)));
      if (Status s = build_ahead(point[static_cast<size_t>(e.parent)], n); !s) {
        failure = s.error();
        return std::nullopt;
      }
      auto r = evaluate_point(n, false, *node);
      if (!r) {
        failure = r.error();
        return std::nullopt;
      }
      if (eval::is_machine_outcome(r->outcome)) {  // the machine's, not the point's: stop, resume later
        say(fmt::format("{}: {} ({})", text, eval::to_string(r->outcome), r->reason));
        machine_stop = stop_for(r->outcome);
        return std::nullopt;
      }
      pending = {{*node, n}};
      const auto m = measurement_of(*r);
      // The lesson of this change: what moved, and what it did to the time and the energy.
      const search::Measurement& before = *t.node(e.parent).measured;
      std::string moved;
      for (const auto& [name, value] : n)
        if (point[static_cast<size_t>(e.parent)].at(name) != value)
          moved = fmt::format("{} {} -> {}", name, point[static_cast<size_t>(e.parent)].at(name), value);
      store::Lesson lesson{task.name,
                           task.category,
                           "",
                           moved,
                           "tune",
                           eval::to_string(r->outcome),
                           0,
                           0,
                           m.ok ? fmt::format("{:.4g} ms -> {:.4g} ms", before.seconds * 1e3, m.seconds * 1e3)
                                : r->reason.substr(0, 200)};
      set_change_ratios(lesson, before, m);
      if (auto l = store.add_lesson(lesson); !l) {
        failure = l.error();
        return std::nullopt;
      }
      say(measured_line(text, eval::to_string(r->outcome), m, t.node(0).measured->seconds, r->reason, status(t, &m)));
      return std::make_pair(search::Direction{search::EdgeKind::kTune, text}, m);
    }
    return std::nullopt;
  };
  search::LoopHooks loop;
  auto over_budget = [&]() { return ledger.over_budget(false, hooks.interrupted); };
  loop.stop = [&]() { return failure.has_value() || machine_stop.has_value() || over_budget().has_value(); };
  loop.after = [&](const search::Tree& t, int child) {
    db_id.push_back(pending->first);
    point.push_back(pending->second);
    const search::Node& parent = t.node(t.node(child).parent);
    if (auto s = store.set_node_flags(db_id[static_cast<size_t>(parent.id)], parent.closed, parent.exhausted); !s)
      failure = s.error();
  };
  search::run_search(*strategy, tree, expand, o.max_evaluations, o.search, loop);
  join_ahead();
  if (failure) return *failure;

  // The best, with its verdict.
  const int best = ledger.settle(tree, machine_stop ? *machine_stop : over_budget().value_or(StopReason::kExhausted));
  OptimizeReport& report = ledger.report();
  report.best_point = TuneSpace::describe(point[static_cast<size_t>(best)]);
  report.best_source = o.run_dir / "best.cu";
  const std::string best_text =
      best == 0 ? seed_source : TuneSpace::apply(seed_source, point[static_cast<size_t>(best)]);
  KP_TRY_STATUS(write_file(report.best_source.string(), best_text));
  return ledger.write_summary(task, json::object());
}
}  // namespace kp::driver
