#include "driver/optimize_session.h"

#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <thread>

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

search::Measurement measurement_of(const eval::EvalResult& r) {
  search::Measurement m;
  m.ok = r.outcome == eval::Outcome::kOk;
  m.seconds = r.time.median;
  if (r.report && r.report->energy && r.report->energy->measured) m.joules = r.report->energy->joules_per_call;
  return m;
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

Result<store::RunStore> open_run_store(const task::Task& task, const OptimizeOptions& o, const std::string& mode) {
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
  if (const std::string kept = store.meta("mode").value_or("tuner"); kept != mode)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{} holds a run of the {}, not of the {}: give this run a --run-dir of its own",
                                  o.run_dir.string(), kept == "model" ? "model-driven search" : "offline tuner",
                                  mode == "model" ? "model-driven search" : "offline tuner"));
  return store;
}

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
  KP_TRY(auto store, open_run_store(task, o, "tuner"));
  KP_TRY(auto rows, store.nodes());

  OptimizeReport report;
  int evaluated = 0;
  std::error_code ec;
  fs::create_directories(o.run_dir / "candidates", ec);

  // One point: its candidate file, stored, evaluated. The store's verdict is committed with
  // the node, so a kill after this returns loses nothing.
  auto evaluate_point = [&](const TunePoint& p, bool seed, int64_t node) -> Result<eval::EvalResult> {
    const std::string source = seed ? seed_source : TuneSpace::apply(seed_source, p);
    KP_TRY(int64_t cand, store.add_candidate(source, ""));
    const fs::path file = o.run_dir / "candidates" / fmt::format("{}.cu", cand);
    KP_TRY_STATUS(write_file(file.string(), source));
    KP_TRY(eval::EvalResult r, hooks.evaluate(file));
    ++evaluated;
    report.build_s += r.build_seconds;
    report.worker_s += r.worker_seconds;
    const auto m = measurement_of(r);
    if (node >= 0 && r.outcome != eval::Outcome::kNotRun) {
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
    if (r.outcome == eval::Outcome::kNotRun) {
      report.stopped = "no_gpu";
      report.evaluated = evaluated;
      return report;
    }
    if (r.outcome != eval::Outcome::kOk)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("the seed does not pass ({}: {}): fix it before tuning it",
                                    eval::to_string(r.outcome), r.reason));
    KP_TRY_STATUS(store.set_meta("task", task.name));
    KP_TRY_STATUS(store.set_meta("mode", "tuner"));
    KP_TRY_STATUS(store.set_meta("reference_seconds", fmt::format("{:.17g}", r.reference_seconds)));
    KP_TRY(int64_t cand, store.add_candidate(seed_source, ""));
    const auto m = measurement_of(r);
    KP_TRY(int64_t root, store.add_node({0, -1, "root", TuneSpace::describe(space.defaults()), cand, false}));
    const std::string record = hooks.record ? hooks.record(r) : "{}";
    KP_TRY_STATUS(store.record_evaluation(root, {cand, "ok", "", m.seconds, m.joules, r.speedup_vs_reference, record},
                                          true, m.seconds, m.joules));
    KP_TRY(rows, store.nodes());
  }

  // The tree, rebuilt from the store: measurements replayed in the order they were made.
  const search::Measurement reference{true, std::stod(store.meta("reference_seconds").value_or("0")), 0};
  const auto& root_row = rows.front();
  search::Tree tree({root_row.ok, root_row.seconds, root_row.joules}, reference, o.reward);
  std::map<int64_t, int> tree_id{{root_row.id, 0}};
  std::vector<int64_t> db_id{root_row.id};
  std::vector<TunePoint> point{parse_point(root_row.direction)};
  std::set<std::string> tried{root_row.direction};
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (!r.measured) continue;  // in flight when the run stopped: proposed again
    auto parent = tree_id.find(r.parent);
    if (parent == tree_id.end()) continue;
    const int id = tree.add(parent->second,
                            {r.kind == "repair" ? search::EdgeKind::kRepair : search::EdgeKind::kTune, r.direction});
    tree.measure(id, {r.ok, r.seconds, r.joules});
    tree.node(id).closed = r.closed;
    tree.node(id).exhausted = r.exhausted;
    tree_id[r.id] = id;
    db_id.push_back(r.id);
    point.push_back(parse_point(r.direction));
    tried.insert(r.direction);
  }
  tree.node(0).closed = root_row.closed;
  tree.node(0).exhausted = root_row.exhausted;
  if (rows.size() > 1) say(fmt::format("resume: {} candidates measured before", tree.size()));

  // The search, with a status for the progress lines: the best so far and the budget used.
  // `just`: a measurement not in the tree yet.
  auto status = [&](const search::Tree& t, const search::Measurement* just = nullptr) {
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    double best = t.node(t.best()).measured->seconds;
    if (just && just->ok && just->seconds > 0 && just->seconds < best) best = just->seconds;
    return fmt::format("best {:.2f}x the seed | {}/{} evaluated, {:.0f} s, GPU {:.0f} s",
                       t.node(0).measured->seconds / best, evaluated, o.max_evaluations, wall, report.worker_s);
  };
  KP_TRY(auto strategy, search::make_strategy(o.strategy, o.search));
  std::optional<Error> failure;
  std::optional<std::pair<int64_t, TunePoint>> pending;

  // Compiling ahead: before `now` is evaluated, the points likely to come next are written and
  // handed to a thread that compiles them. The thread is joined before the next evaluation, so
  // nvcc never builds one source twice at once.
  std::future<std::pair<int, double>> ahead;
  std::set<std::string> queued;
  auto join_ahead = [&]() {
    if (!ahead.valid()) return;
    const auto [built, seconds] = ahead.get();
    report.built_ahead += built;
    report.ahead_s += seconds;
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
        files.push_back(o.run_dir / "candidates" / fmt::format("{}.cu", cand));
        KP_TRY_STATUS(write_file(files.back().string(), source));
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
          store.add_node({0, db_id[static_cast<size_t>(e.parent)], e.repair ? "repair" : "tune", text, 0, false});
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
                           m.ok && before.ok && m.seconds > 0 ? before.seconds / m.seconds : 0,
                           m.ok && m.joules > 0 && before.joules > 0 ? before.joules / m.joules : 0,
                           m.ok ? fmt::format("{:.4g} ms -> {:.4g} ms", before.seconds * 1e3, m.seconds * 1e3)
                                : r->reason.substr(0, 200)};
      if (auto l = store.add_lesson(lesson); !l) {
        failure = l.error();
        return std::nullopt;
      }
      say(fmt::format(
          "{}: {}{} | {}", text, eval::to_string(r->outcome),
          m.ok ? fmt::format(" {:.4g} ms, {:.2f}x the seed", m.seconds * 1e3, t.node(0).measured->seconds / m.seconds)
               : " (" + r->reason.substr(0, 120) + ")",
          status(t, &m)));
      return std::make_pair(search::Direction{search::EdgeKind::kTune, text}, m);
    }
    return std::nullopt;
  };
  search::LoopHooks loop;
  auto over_budget = [&]() {
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    if (evaluated >= o.max_evaluations) return "budget";
    if (o.max_wall_s > 0 && wall >= o.max_wall_s) return "budget";
    if (o.max_gpu_s > 0 && report.worker_s >= o.max_gpu_s) return "budget";
    if (hooks.interrupted && hooks.interrupted()) return "interrupted";
    return "";
  };
  loop.stop = [&]() { return failure.has_value() || *over_budget() != '\0'; };
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
  report.stopped = *over_budget() ? over_budget() : "exhausted";

  // The best, with its verdict.
  const int best = tree.best();
  report.nodes = static_cast<int>(tree.size());
  report.evaluated = evaluated;
  report.seed_seconds = tree.node(0).measured->seconds;
  report.best_seconds = tree.node(best).measured->seconds;
  report.reference_seconds = reference.seconds;
  report.best_point = TuneSpace::describe(point[static_cast<size_t>(best)]);
  report.best_source = o.run_dir / "best.cu";
  const std::string best_text =
      best == 0 ? seed_source : TuneSpace::apply(seed_source, point[static_cast<size_t>(best)]);
  KP_TRY_STATUS(write_file(report.best_source.string(), best_text));
  report.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  json j = report.to_json();
  j["task"] = task.name;
  j["strategy"] = o.strategy;
  j["objective"] = search::to_string(o.reward.objective);
  if (!o.memory.empty()) {
    KP_TRY(report.lessons_shared, share_lessons(store, o.memory));
    j["lessons_shared"] = report.lessons_shared;
  }
  KP_TRY_STATUS(write_file((o.run_dir / "best.json").string(), j.dump(2) + "\n"));
  return report;
}

}  // namespace kp::driver
