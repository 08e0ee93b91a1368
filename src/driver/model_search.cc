#include "driver/model_search.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "search/strategy.h"
#include "store/run_store.h"
#include "util/strings.h"

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What the loop knows of a node beyond its measurement: its files and what its evaluation and
// analysis said. Kept in the evaluation's report_json, so that a resumed run prompts the same.
struct NodeFacts {
  int64_t db_id = 0;
  int64_t candidate = 0;
  agent::CandidateFiles files;
  std::string outcome = "ok";  // eval::Outcome by name
  std::string reason;
  std::string diagnostics;  // a failure's, for the debugger
  std::string feedback;     // analyze's text on a passing candidate
  std::string raw_metrics;  // its measured lines and raw counters
  std::string bottleneck_class;
};

std::string facts_json(const NodeFacts& f, const std::string& record) {
  json j = {{"eval", json::parse(record.empty() ? "{}" : record, nullptr, false)},
            {"diagnostics", f.diagnostics},
            {"feedback", f.feedback},
            {"raw_metrics", f.raw_metrics},
            {"bottleneck_class", f.bottleneck_class}};
  return j.dump();
}

void read_facts(const store::EvaluationRow& row, NodeFacts& f) {
  f.outcome = row.outcome;
  f.reason = row.reason;
  const json j = json::parse(row.report_json, nullptr, false);
  if (!j.is_object()) return;
  f.diagnostics = j.value("diagnostics", "");
  f.feedback = j.value("feedback", "");
  f.raw_metrics = j.value("raw_metrics", "");
  f.bottleneck_class = j.value("bottleneck_class", "");
}

search::EdgeKind edge_kind(const std::string& name) {
  if (name == "repair") return search::EdgeKind::kRepair;
  if (name == "finding") return search::EdgeKind::kFinding;
  if (name == "tune") return search::EdgeKind::kTune;
  return search::EdgeKind::kIdea;
}

std::string lesson_line(const store::Lesson& l) {
  std::string result = l.outcome;
  if (l.time_ratio > 0) result += fmt::format(", {:.2f}x the time of its parent", 1.0 / l.time_ratio);
  if (l.energy_ratio > 0) result += fmt::format(", {:.2f}x the energy", 1.0 / l.energy_ratio);
  return fmt::format("- {}{}: {} ({}){}", l.task.empty() ? "" : "[" + l.task + "] ", l.direction, result,
                     l.bottleneck_class.empty() ? "class unknown" : l.bottleneck_class,
                     l.evidence.empty() ? "" : "; " + l.evidence);
}

std::string result_words(const search::Node& n, const search::Node& root, const std::string& outcome) {
  if (!n.measured) return "in flight";
  if (!n.measured->ok) return outcome;
  return fmt::format("ok, {:.4g} ms, {:.2f}x the seed", n.measured->seconds * 1e3,
                     root.measured->seconds / n.measured->seconds);
}

}  // namespace

Result<OptimizeReport> run_model_optimize(const task::Task& task, agent::Agents& agents, const ModelSearchHooks& hooks,
                                          const OptimizeOptions& o) {
  const auto t0 = Clock::now();
  auto say = [&](const std::string& s) {
    if (hooks.progress) hooks.progress(s);
  };
  if (o.feedback != "tools" && o.feedback != "raw-metrics" && o.feedback != "none")
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("--feedback {}: expected tools, raw-metrics or none", o.feedback));
  if (!task.seed_path)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: no seed to start from (a native task needs seed.cu)", task.name));
  const bool kernelbench = task.kind == task::TaskKind::kKernelBench;
  const agent::TaskKind kind = kernelbench ? agent::TaskKind::kKernelBench : agent::TaskKind::kNative;
  KP_TRY(std::string seed_text, read_file(task.seed_path->string()));
  const agent::CandidateFiles seed_files = kernelbench ? agent::CandidateFiles{"", seed_text}
                                                       : agent::CandidateFiles{seed_text, ""};

  KP_TRY(auto store, open_run_store(task, o, "model"));
  KP_TRY(auto rows, store.nodes());

  OptimizeReport report;
  int evaluated = 0;
  std::error_code ec;
  fs::create_directories(o.run_dir / "candidates", ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("creating {}: {}", o.run_dir.string(), ec.message()));

  // A candidate's files on disk, named by its store id.
  auto write_files = [&](int64_t cand, const agent::CandidateFiles& f) -> Result<std::pair<fs::path, fs::path>> {
    fs::path cu, py;
    if (!f.cuda.empty()) {
      cu = o.run_dir / "candidates" / fmt::format("{}.cu", cand);
      KP_TRY_STATUS(write_file(cu.string(), f.cuda));
    }
    if (!f.python.empty()) {
      py = o.run_dir / "candidates" / fmt::format("{}.py", cand);
      KP_TRY_STATUS(write_file(py.string(), f.python));
    }
    return std::make_pair(cu, py);
  };
  // Profiles a passing candidate for the prompts (not with --feedback none).
  auto analyze_into = [&](const fs::path& cu, const fs::path& py, bool root, NodeFacts& f) {
    if (!hooks.analyze || o.feedback == "none") return;
    const auto ta = Clock::now();
    say(fmt::format("analyze: profiling {} for the planner", root ? "the seed" : "the candidate"));
    if (auto a = hooks.analyze(cu, py, root)) {
      f.feedback = a->feedback;
      f.raw_metrics = a->raw_metrics;
      f.bottleneck_class = a->bottleneck_class;
    } else {
      say("analyze: not profiled (" + a.error().message + ")");
    }
    report.analyze_s += since(ta);
  };

  if (rows.empty()) {
    say(fmt::format("seed: evaluating {}", task.seed_path->string()));
    KP_TRY(int64_t cand, store.add_candidate(seed_files.cuda, seed_files.python));
    KP_TRY(auto paths, write_files(cand, seed_files));
    KP_TRY(eval::EvalResult r, hooks.evaluate(paths.first, paths.second, true));
    ++evaluated;
    report.build_s += r.build_seconds;
    report.worker_s += r.worker_seconds;
    if (r.outcome == eval::Outcome::kNotRun) {
      report.stopped = "no_gpu";
      report.evaluated = evaluated;
      return report;
    }
    if (r.outcome != eval::Outcome::kOk)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("the seed does not pass ({}: {}): fix it before optimizing from it",
                                    eval::to_string(r.outcome), r.reason));
    NodeFacts f;
    analyze_into(paths.first, paths.second, true, f);
    // The lessons of earlier runs, chosen once by the seed's class: a resumed run prompts with
    // the same ones, whatever the memory has learned since.
    std::string memory_lessons;
    std::error_code mec;
    if (!o.memory.empty() && o.memory_lessons > 0 && fs::exists(o.memory, mec)) {
      if (auto mem = store::RunStore::open(o.memory, store::RunStore::Access::kReader)) {
        if (auto ls = mem->lessons(f.bottleneck_class, task.category, o.memory_lessons))
          for (const auto& l : *ls) memory_lessons += lesson_line(l) + "\n";
      } else {
        say("memory: not read (" + mem.error().message + ")");
      }
    }
    KP_TRY_STATUS(store.set_meta("task", task.name));
    KP_TRY_STATUS(store.set_meta("mode", "model"));
    KP_TRY_STATUS(store.set_meta("gpu", o.gpu));
    KP_TRY_STATUS(store.set_meta("memory_lessons", memory_lessons));
    KP_TRY_STATUS(store.set_meta("reference_seconds", fmt::format("{:.17g}", r.reference_seconds)));
    const auto m = measurement_of(r);
    KP_TRY(int64_t root, store.add_node({0, -1, "root", "the seed", cand, false}));
    KP_TRY_STATUS(store.record_evaluation(
        root,
        {cand, "ok", "", m.seconds, m.joules, r.speedup_vs_reference, facts_json(f, hooks.record ? hooks.record(r) : "")},
        true, m.seconds, m.joules));
    KP_TRY(rows, store.nodes());
  }

  // The tree and the facts, rebuilt from the store in the order they were made.
  std::map<int64_t, store::EvaluationRow> verdict;  // by candidate: a candidate is measured once
  {
    KP_TRY(auto evals, store.evaluations());
    for (auto& e : evals) verdict[e.candidate] = std::move(e);
  }
  const search::Measurement reference{true, std::stod(store.meta("reference_seconds").value_or("0")), 0};
  const std::string gpu = store.meta("gpu").value_or(o.gpu);
  const std::string memory_lessons = store.meta("memory_lessons").value_or("");
  const auto& root_row = rows.front();
  search::Tree tree({root_row.ok, root_row.seconds, root_row.joules}, reference, o.reward);
  std::vector<NodeFacts> facts;
  auto load_facts = [&](const store::NodeRow& row) -> Result<NodeFacts> {
    NodeFacts f;
    f.db_id = row.id;
    f.candidate = row.candidate;
    KP_TRY(auto files, store.candidate(row.candidate));
    f.files = {files.first, files.second};
    if (auto v = verdict.find(row.candidate); v != verdict.end()) read_facts(v->second, f);
    return f;
  };
  KP_TRY(NodeFacts root_facts, load_facts(root_row));
  facts.push_back(std::move(root_facts));
  std::map<int64_t, int> tree_id{{root_row.id, 0}};
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (!r.measured) continue;  // in flight when the run stopped: asked again
    auto parent = tree_id.find(r.parent);
    if (parent == tree_id.end()) continue;
    const int id = tree.add(parent->second, {edge_kind(r.kind), r.direction});
    tree.measure(id, {r.ok, r.seconds, r.joules});
    tree.node(id).closed = r.closed;
    tree.node(id).exhausted = r.exhausted;
    tree_id[r.id] = id;
    KP_TRY(NodeFacts f, load_facts(r));
    facts.push_back(std::move(f));
  }
  tree.node(0).closed = root_row.closed;
  tree.node(0).exhausted = root_row.exhausted;
  if (tree.size() > 1) say(fmt::format("resume: {} candidates measured before", tree.size()));

  KP_TRY(agent::TaskBrief brief, task_brief(task, gpu));
  // What was tried on the way to `id` and from it, for the planner.
  auto history = [&](const search::Tree& t, int id) {
    std::vector<int> path;
    for (int n = id; n > 0; n = t.node(n).parent) path.push_back(n);
    std::string out;
    for (auto it = path.rbegin(); it != path.rend(); ++it)
      out += fmt::format("- (how this candidate was made) {}: {}\n", t.node(*it).via.text,
                         result_words(t.node(*it), t.node(0), facts[static_cast<size_t>(*it)].outcome));
    for (int c : t.node(id).children)
      out += fmt::format("- (tried from this candidate) {}: {}\n", t.node(c).via.text,
                         result_words(t.node(c), t.node(0), facts[static_cast<size_t>(c)].outcome));
    return out;
  };
  auto lessons_text = [&]() -> Result<std::string> {
    KP_TRY(auto all, store.lessons_in_order());
    std::string out;
    const size_t from = all.size() > 12 ? all.size() - 12 : 0;
    for (size_t i = from; i < all.size(); ++i) out += lesson_line(all[i]) + "\n";
    if (!memory_lessons.empty()) out += "From earlier runs:\n" + memory_lessons;
    return out;
  };
  auto status = [&](const search::Tree& t, const search::Measurement* just = nullptr) {
    double best = t.node(t.best()).measured->seconds;
    if (just && just->ok && just->seconds > 0 && just->seconds < best) best = just->seconds;
    std::string llm;
    if (hooks.llm_spent) {
      const llm::Spend s = hooks.llm_spent();
      llm = fmt::format(", LLM {} calls ${:.2f}", s.calls, s.cost_usd);
    }
    return fmt::format("best {:.2f}x the seed | {}/{} evaluated, {:.0f} s, GPU {:.0f} s{}",
                       t.node(0).measured->seconds / best, evaluated, o.max_evaluations, since(t0), report.worker_s,
                       llm);
  };
  auto over_budget = [&]() -> std::string {
    if (evaluated >= o.max_evaluations) return "budget";
    if (o.max_wall_s > 0 && since(t0) >= o.max_wall_s) return "budget";
    if (o.max_gpu_s > 0 && report.worker_s >= o.max_gpu_s) return "budget";
    if (hooks.llm_budget_spent && hooks.llm_budget_spent()) return "budget";
    if (hooks.interrupted && hooks.interrupted()) return "interrupted";
    return "";
  };

  std::optional<Error> failure;
  std::string stopped_here;  // "no_gpu", "pending", "budget": the step in flight cannot finish here
  std::optional<NodeFacts> pending;
  // An error from the model: a manual prompt unanswered or the LLM budget spent stop the run
  // cleanly (resumable); anything else is the run's error.
  auto model_failed = [&](const Error& e) {
    if (e.code == ErrorCode::kPending) {
      stopped_here = "pending";
      report.pending = e.message;
    } else if (hooks.llm_budget_spent && hooks.llm_budget_spent()) {
      stopped_here = "budget";
    } else {
      failure = e;
    }
  };
  auto expand = [&](const search::Tree& t,
                    const search::Expansion& e) -> std::optional<std::pair<search::Direction, search::Measurement>> {
    const NodeFacts& parent = facts[static_cast<size_t>(e.parent)];
    agent::TaskBrief b = brief;
    b.current = agent::show_files(parent.files, kind);
    const std::string& feedback = o.feedback == "tools"         ? parent.feedback
                                  : o.feedback == "raw-metrics" ? parent.raw_metrics
                                                                : std::string();
    agent::CandidateFiles files;
    search::Direction dir;
    std::vector<std::string> actions;
    const auto tl = Clock::now();
    if (e.repair) {
      dir = {search::EdgeKind::kRepair, "repair the " + parent.outcome + " of: " + t.node(e.parent).via.text};
      say(fmt::format("debugger: fixing the {} | {}", parent.outcome, status(t)));
      auto fixed = agents.debug(b, parent.files, parent.outcome, parent.diagnostics);
      if (!fixed) {
        model_failed(fixed.error());
        return std::nullopt;
      }
      files = fixed->files;
    } else {
      auto lessons = lessons_text();
      if (!lessons) {
        failure = lessons.error();
        return std::nullopt;
      }
      say(fmt::format("planner: choosing a direction from node {} | {}", e.parent, status(t)));
      auto plan = agents.plan(b, feedback, *lessons, history(t, e.parent));
      if (!plan) {
        model_failed(plan.error());
        return std::nullopt;
      }
      dir = {search::EdgeKind::kIdea, plan->direction};
      actions = plan->actions;
      say(fmt::format("coder: {} | {}", plan->direction.substr(0, 100), status(t)));
      auto written = agents.write(b, plan->direction, feedback, hooks.tools);
      if (!written) {
        model_failed(written.error());
        return std::nullopt;
      }
      files = written->files;
    }
    report.llm_s += since(tl);

    auto step = [&]() -> Result<search::Measurement> {
      KP_TRY(int64_t cand, store.add_candidate(files.cuda, files.python));
      NodeFacts f;
      f.files = files;
      f.candidate = cand;
      store::EvaluationRow row;
      bool known = false;
      if (auto v = verdict.find(cand); v != verdict.end()) {
        row = v->second;
        known = true;
      } else {
        KP_TRY(auto paths, write_files(cand, files));
        say(fmt::format("evaluating candidate {} | {}", cand, status(t)));
        KP_TRY(eval::EvalResult r, hooks.evaluate(paths.first, paths.second, false));
        report.build_s += r.build_seconds;
        report.worker_s += r.worker_seconds;
        if (r.outcome == eval::Outcome::kNotRun) {
          stopped_here = "no_gpu";
          return search::Measurement{};
        }
        ++evaluated;
        const auto m = measurement_of(r);
        f.outcome = eval::to_string(r.outcome);
        if (m.ok) {
          analyze_into(paths.first, paths.second, false, f);
        } else {
          f.diagnostics = failure_diagnostics(r);
          f.bottleneck_class = parent.bottleneck_class;  // a failure has none: its repair's lesson is of this class
        }
        row = {cand,     f.outcome, r.reason, m.seconds, m.joules, r.speedup_vs_reference,
               facts_json(f, hooks.record ? hooks.record(r) : "")};
        verdict[cand] = row;
      }
      read_facts(row, f);
      const search::Measurement m{row.outcome == "ok", row.seconds, row.joules};
      KP_TRY(int64_t node, store.add_node({0, parent.db_id, search::to_string(dir.kind), dir.text, cand, false}));
      // The node and its verdict in one transaction: a kill after this loses nothing.
      KP_TRY_STATUS(store.record_evaluation(node, row, m.ok, m.seconds, m.joules));
      f.db_id = node;
      if (known) {
        ++report.duplicates;
        say(fmt::format("candidate {} has the files of one already evaluated: its verdict stands", cand));
      }
      const search::Measurement& before = *t.node(e.parent).measured;
      store::Lesson lesson{task.name,
                           task.category,
                           parent.bottleneck_class,
                           dir.text,
                           join(actions, ","),
                           row.outcome,
                           m.ok && before.ok && m.seconds > 0 ? before.seconds / m.seconds : 0,
                           m.ok && m.joules > 0 && before.joules > 0 ? before.joules / m.joules : 0,
                           !m.ok       ? row.reason.substr(0, 200)
                           : before.ok ? fmt::format("{:.4g} ms -> {:.4g} ms", before.seconds * 1e3, m.seconds * 1e3)
                                       : fmt::format("fixed: {:.4g} ms", m.seconds * 1e3)};
      KP_TRY(int64_t lesson_id, store.add_lesson(lesson));
      (void)lesson_id;
      say(fmt::format("{}: {}{} | {}", dir.text.substr(0, 80), row.outcome,
                      m.ok ? fmt::format(" {:.4g} ms, {:.2f}x the seed", m.seconds * 1e3,
                                         t.node(0).measured->seconds / m.seconds)
                           : " (" + row.reason.substr(0, 120) + ")",
                      status(t, &m)));
      pending = std::move(f);
      return m;
    };
    auto m = step();
    if (!m) {
      failure = m.error();
      return std::nullopt;
    }
    if (!stopped_here.empty()) return std::nullopt;
    return std::make_pair(dir, *m);
  };

  search::LoopHooks loop;
  loop.stop = [&]() { return failure.has_value() || !stopped_here.empty() || !over_budget().empty(); };
  loop.after = [&](const search::Tree& t, int child) {
    facts.push_back(std::move(*pending));
    pending.reset();
    const search::Node& parent = t.node(t.node(child).parent);
    if (auto s = store.set_node_flags(facts[static_cast<size_t>(parent.id)].db_id, parent.closed, parent.exhausted); !s)
      failure = s.error();
  };
  KP_TRY(auto strategy, search::make_strategy(o.strategy, o.search));
  // Children the search may make: duplicates cost no evaluation, so they are counted apart.
  search::run_search(*strategy, tree, expand, 4 * o.max_evaluations, o.search, loop);
  if (failure) return *failure;
  report.stopped = !stopped_here.empty() ? stopped_here : !over_budget().empty() ? over_budget() : "exhausted";

  // The best so far, with its verdict.
  const int best = tree.best();
  const NodeFacts& bf = facts[static_cast<size_t>(best)];
  report.nodes = static_cast<int>(tree.size());
  report.evaluated = evaluated;
  report.seed_seconds = tree.node(0).measured->seconds;
  report.best_seconds = tree.node(best).measured->seconds;
  report.reference_seconds = reference.seconds;
  report.best_direction = best == 0 ? "the seed" : tree.node(best).via.text;
  report.best_point = report.best_direction;
  report.best_source = o.run_dir / (bf.files.python.empty() ? "best.cu" : "best.py");
  if (!bf.files.cuda.empty()) KP_TRY_STATUS(write_file((o.run_dir / "best.cu").string(), bf.files.cuda));
  if (!bf.files.python.empty()) KP_TRY_STATUS(write_file((o.run_dir / "best.py").string(), bf.files.python));
  report.wall_s = since(t0);
  json j = report.to_json();
  j["task"] = task.name;
  j["strategy"] = o.strategy;
  j["objective"] = search::to_string(o.reward.objective);
  j["feedback"] = o.feedback;
  if (hooks.llm_spent) {
    const llm::Spend s = hooks.llm_spent();
    j["llm"] = {{"calls", s.calls}, {"tokens", s.tokens}, {"cost_usd", s.cost_usd}};
  }
  if (auto v = verdict.find(bf.candidate); v != verdict.end())
    j["verdict"] = json::parse(v->second.report_json, nullptr, false).value("eval", json::object());
  if (!o.memory.empty()) {
    KP_TRY(report.lessons_shared, share_lessons(store, o.memory));
    j["lessons_shared"] = report.lessons_shared;
  }
  KP_TRY_STATUS(write_file((o.run_dir / "best.json").string(), j.dump(2) + "\n"));
  return report;
}

}  // namespace kp::driver
