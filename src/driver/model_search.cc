#include "driver/model_search.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "search/strategy.h"
#include "store/run_store.h"
#include "util/source_text.h"
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
  const agent::CandidateFiles seed_files =
      kernelbench ? agent::CandidateFiles{"", seed_text} : agent::CandidateFiles{seed_text, ""};

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
    KP_TRY_STATUS(store.record_evaluation(root,
                                          {cand, "ok", "", m.seconds, m.joules, r.speedup_vs_reference,
                                           facts_json(f, hooks.record ? hooks.record(r) : "")},
                                          true, m.seconds, m.joules));
    KP_TRY(rows, store.nodes());
  }

  // The tree and the facts, rebuilt from the store in the order they were made.
  std::map<int64_t, store::EvaluationRow> verdict;  // by candidate: a candidate is measured once
  std::map<std::string, int64_t> by_code;           // a measured candidate by its code_key
  {
    KP_TRY(auto evals, store.evaluations());
    for (auto& e : evals) verdict[e.candidate] = std::move(e);
    for (const auto& [id, row] : verdict) {
      KP_TRY(auto files, store.candidate(id));
      by_code.emplace(code_key(files.first, files.second), id);
    }
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
    for (int c : t.node(id).children) {
      const search::Node& ch = t.node(c);
      if (!ch.measured) {
        // In flight: its direction once the planner gave it, so that the next is another.
        if (!ch.via.text.empty()) out += fmt::format("- (being tried now from this candidate) {}\n", ch.via.text);
        continue;
      }
      out += fmt::format("- (tried from this candidate) {}: {}\n", ch.via.text,
                         result_words(ch, t.node(0), facts[static_cast<size_t>(c)].outcome));
    }
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
  std::optional<Error> failure;
  std::string stopped_here;  // "no_gpu", "pending", "budget": a step in flight cannot finish here
  // Lanes may stop for different reasons at once: the one the user must act on first is kept (a
  // GPU to evaluate on, then a prompt to answer).
  auto stop_here = [&](const std::string& why) {
    static const std::vector<std::string> rank = {"no_gpu", "pending", "budget"};
    auto at = [&](const std::string& w) { return std::find(rank.begin(), rank.end(), w) - rank.begin(); };
    if (stopped_here.empty() || at(why) < at(stopped_here)) stopped_here = why;
  };
  // The client is used by the model lane only while it runs; this thread reads what it spent
  // from these, updated after each of the lane's steps.
  std::mutex spend_mu;
  llm::Spend spend_now = hooks.llm_spent ? hooks.llm_spent() : llm::Spend{};
  bool llm_over = hooks.llm_budget_spent && hooks.llm_budget_spent();
  auto status = [&](const search::Tree& t, const search::Measurement* just = nullptr) {
    double best = t.node(t.best()).measured->seconds;
    if (just && just->ok && just->seconds > 0 && just->seconds < best) best = just->seconds;
    std::string llm;
    if (hooks.llm_spent) {
      std::lock_guard lock(spend_mu);
      llm = fmt::format(", LLM {} calls ${:.2f}", spend_now.calls, spend_now.cost_usd);
    }
    return fmt::format("best {:.2f}x the seed | {}/{} evaluated, {:.0f} s, GPU {:.0f} s{}",
                       t.node(0).measured->seconds / best, evaluated, o.max_evaluations, since(t0), report.worker_s,
                       llm);
  };
  auto over_budget = [&]() -> std::string {
    if (evaluated >= o.max_evaluations) return "budget";
    if (o.max_wall_s > 0 && since(t0) >= o.max_wall_s) return "budget";
    if (o.max_gpu_s > 0 && report.worker_s >= o.max_gpu_s) return "budget";
    {
      std::lock_guard lock(spend_mu);
      if (llm_over) return "budget";
    }
    if (hooks.interrupted && hooks.interrupted()) return "interrupted";
    return "";
  };
  // An error from the model: a manual prompt unanswered or the LLM budget spent stop the run
  // cleanly (resumable); anything else is the run's error.
  auto model_failed = [&](const Error& e) {
    std::lock_guard lock(spend_mu);
    if (e.code == ErrorCode::kPending) {
      stop_here("pending");
      report.pending = e.message;
    } else if (llm_over) {
      stop_here("budget");
    } else {
      failure = e;
    }
  };
  auto stopping = [&] { return failure.has_value() || !stopped_here.empty() || !over_budget().empty(); };

  KP_TRY(auto strategy, search::make_strategy(o.strategy, o.search));
  // The pipeline (OptimizeOptions::in_flight): up to that many children at once, each a job that
  // goes through the model (plan and write, or debug), the compiler (into the build cache) and
  // the GPU (evaluate, then analyze). Each stage is a lane that works on one job at a time on a
  // thread of its own, so the model writes one candidate while the GPU measures another. This
  // thread alone touches the tree, the store and the facts: it prepares each lane's work (the
  // prompts are rendered here, from the tree as it is then) and takes back what the lane made.
  // Jobs go through each lane oldest first. A job in flight is a child in the tree, unmeasured,
  // so that the strategy counts it against its parent's widening.
  enum class Stage { kModel, kBuild, kGpu };
  struct Job {
    int child = 0, parent = 0;
    bool repair = false, planned = false;
    Stage stage = Stage::kModel;
    search::Direction dir;
    std::vector<std::string> actions;
    agent::CandidateFiles files;
    int64_t cand = 0;
    fs::path cu, py;
    // Handed back by the lanes.
    std::optional<Result<agent::Plan>> plan;
    std::optional<Result<agent::CoderResult>> written;
    std::optional<Result<eval::EvalResult>> result;
    std::optional<Result<Analysis>> analysis;
    double model_s = 0, build_s = 0, analyze_s = 0;
  };
  struct Lane {
    Job* job = nullptr;
    std::future<void> work;
  };
  // Declared before the lanes, whose work uses them: a lane's future waits for its work when
  // it is destroyed.
  std::list<Job> jobs;
  std::mutex lane_mu;
  std::condition_variable lane_cv;
  int lanes_done = 0;  // lanes finished and not yet taken back
  Lane model_lane, build_lane, gpu_lane;
  auto launch = [&](Lane& lane, Job& job, std::function<void()> work) {
    lane.job = &job;
    lane.work = std::async(std::launch::async, [&, work = std::move(work)] {
      work();
      {
        std::lock_guard lock(lane_mu);
        ++lanes_done;
      }
      lane_cv.notify_one();
    });
  };
  const int width = std::max(1, o.in_flight);
  const int max_children = 4 * o.max_evaluations;  // duplicates cost no evaluation: counted apart
  int made = 0;

  // A measured child: into the tree and the store (the node and its verdict in one transaction:
  // a kill after this loses nothing), with its lesson.
  auto record = [&](Job& j, const store::EvaluationRow& row, NodeFacts f, bool known) -> Status {
    read_facts(row, f);
    const search::Measurement m{row.outcome == "ok", row.seconds, row.joules};
    const NodeFacts& parent = facts[static_cast<size_t>(j.parent)];
    KP_TRY(int64_t node, store.add_node({0, parent.db_id, search::to_string(j.dir.kind), j.dir.text, j.cand, false}));
    KP_TRY_STATUS(store.record_evaluation(node, row, m.ok, m.seconds, m.joules));
    f.db_id = node;
    if (known) ++report.duplicates;
    const search::Measurement& before = *tree.node(j.parent).measured;
    store::Lesson lesson{task.name,
                         task.category,
                         parent.bottleneck_class,
                         j.dir.text,
                         join(j.actions, ","),
                         row.outcome,
                         m.ok && before.ok && m.seconds > 0 ? before.seconds / m.seconds : 0,
                         m.ok && m.joules > 0 && before.joules > 0 ? before.joules / m.joules : 0,
                         !m.ok       ? row.reason.substr(0, 200)
                         : before.ok ? fmt::format("{:.4g} ms -> {:.4g} ms", before.seconds * 1e3, m.seconds * 1e3)
                                     : fmt::format("fixed: {:.4g} ms", m.seconds * 1e3)};
    KP_TRY(int64_t lesson_id, store.add_lesson(lesson));
    (void)lesson_id;
    say(fmt::format(
        "{}: {}{} | {}", j.dir.text.substr(0, 80), row.outcome,
        m.ok ? fmt::format(" {:.4g} ms, {:.2f}x the seed", m.seconds * 1e3, tree.node(0).measured->seconds / m.seconds)
             : " (" + row.reason.substr(0, 120) + ")",
        status(tree, &m)));
    tree.node(j.child).via = j.dir;
    tree.measure(j.child, m);
    search::prune(tree, j.parent, o.search);
    facts[static_cast<size_t>(j.child)] = std::move(f);
    const search::Node& p = tree.node(j.parent);
    KP_TRY_STATUS(store.set_node_flags(parent.db_id, p.closed, p.exhausted));
    return ok_status();
  };
  // The verdict of a measured candidate with the same files, or the same code (comments and
  // spacing aside: util/source_text.h); null when there is none and the job must be measured.
  auto known_verdict = [&](const Job& j) -> const store::EvaluationRow* {
    if (auto v = verdict.find(j.cand); v != verdict.end()) return &v->second;
    if (auto c = by_code.find(code_key(j.files.cuda, j.files.python)); c != by_code.end()) return &verdict.at(c->second);
    return nullptr;
  };
  // A job whose code was measured: a node with that verdict, and no evaluation.
  auto record_known = [&](Job& j, const store::EvaluationRow& of) -> Status {
    say(of.candidate == j.cand
            ? fmt::format("candidate {} has the files of one already evaluated: its verdict stands", j.cand)
            : fmt::format("candidate {} has the code of candidate {} (comments and spacing aside): its verdict stands",
                          j.cand, of.candidate));
    NodeFacts f;
    f.files = j.files;
    f.candidate = j.cand;
    store::EvaluationRow row = of;
    row.candidate = j.cand;
    verdict[j.cand] = row;
    return record(j, row, std::move(f), true);
  };
  auto drop = [&](Job& j) { jobs.remove_if([&](const Job& x) { return &x == &j; }); };

  // The strategy's next expansions, while there is room in the pipeline and the budget.
  auto fill = [&]() {
    while (!stopping() && static_cast<int>(jobs.size()) < width &&
           evaluated + static_cast<int>(jobs.size()) < o.max_evaluations && made < max_children) {
      auto e = strategy->next(tree);
      if (!e) return;
      Job j;
      j.parent = e->parent;
      j.repair = e->repair;
      if (e->repair)
        j.dir = {search::EdgeKind::kRepair, "repair the " + facts[static_cast<size_t>(e->parent)].outcome +
                                                " of: " + tree.node(e->parent).via.text};
      else
        j.dir = {search::EdgeKind::kIdea, ""};  // the planner's direction, once it has one
      j.child = tree.add(e->parent, j.dir);
      facts.resize(tree.size());
      ++made;
      jobs.push_back(std::move(j));
    }
  };
  auto first_in = [&](Stage s) -> Job* {
    for (auto& j : jobs)
      if (j.stage == s) return &j;
    return nullptr;
  };
  // Starts each free lane on its oldest job; false when none could start.
  auto dispatch = [&]() -> Result<bool> {
    bool started = false;
    if (!model_lane.job) {
      if (Job* j = first_in(Stage::kModel)) {
        const NodeFacts& parent = facts[static_cast<size_t>(j->parent)];
        agent::TaskBrief b = brief;
        b.current = agent::show_files(parent.files, kind);
        const std::string feedback = o.feedback == "tools"         ? parent.feedback
                                     : o.feedback == "raw-metrics" ? parent.raw_metrics
                                                                   : std::string();
        std::function<void()> work;
        if (j->repair) {
          say(fmt::format("debugger: fixing the {} | {}", parent.outcome, status(tree)));
          work = [&, j, b, files = parent.files, outcome = parent.outcome, diag = parent.diagnostics] {
            const auto tl = Clock::now();
            j->written = agents.debug(b, files, outcome, diag);
            j->model_s = since(tl);
          };
        } else if (!j->planned) {
          KP_TRY(std::string lessons, lessons_text());
          say(fmt::format("planner: choosing a direction from node {} | {}", j->parent, status(tree)));
          work = [&, j, b, feedback, lessons, past = history(tree, j->parent)] {
            const auto tl = Clock::now();
            j->plan = agents.plan(b, feedback, lessons, past);
            j->model_s = since(tl);
          };
        } else {
          say(fmt::format("coder: {} | {}", j->dir.text.substr(0, 100), status(tree)));
          work = [&, j, b, feedback] {
            const auto tl = Clock::now();
            j->written = agents.write(b, j->dir.text, feedback, hooks.tools);
            j->model_s = since(tl);
          };
        }
        launch(model_lane, *j, [&, work = std::move(work)] {
          work();
          std::lock_guard lock(spend_mu);
          if (hooks.llm_spent) spend_now = hooks.llm_spent();
          if (hooks.llm_budget_spent) llm_over = hooks.llm_budget_spent();
        });
        started = true;
      }
    }
    if (!build_lane.job) {
      if (Job* j = first_in(Stage::kBuild)) {
        launch(build_lane, *j, [&, j] {
          const auto tb = Clock::now();
          hooks.prebuild(j->cu);
          j->build_s = since(tb);
        });
        started = true;
      }
    }
    while (!gpu_lane.job) {
      Job* j = first_in(Stage::kGpu);
      if (!j) break;
      // Another job with the same code may have been measured since this one was written.
      if (const store::EvaluationRow* of = known_verdict(*j)) {
        KP_TRY_STATUS(record_known(*j, *of));
        drop(*j);
        started = true;
        continue;
      }
      say(fmt::format("evaluating candidate {} | {}", j->cand, status(tree)));
      const bool profile = hooks.analyze && o.feedback != "none";
      launch(gpu_lane, *j, [&, j, profile] {
        j->result = hooks.evaluate(j->cu, j->py, false);
        if (profile && *j->result && (*j->result)->outcome == eval::Outcome::kOk) {
          const auto ta = Clock::now();
          j->analysis = hooks.analyze(j->cu, j->py, false);
          j->analyze_s = since(ta);
        }
      });
      started = true;
    }
    return started;
  };

  // Takes back what a finished lane made.
  auto take_model = [&](Job& j) -> Status {
    report.llm_s += j.model_s;
    if (!j.planned && !j.repair) {
      auto plan = std::move(*j.plan);
      j.plan.reset();
      if (!plan) {
        model_failed(plan.error());
        drop(j);
        return ok_status();
      }
      j.planned = true;
      j.dir.text = plan->direction;
      j.actions = plan->actions;
      tree.node(j.child).via.text = plan->direction;
      return ok_status();
    }
    auto written = std::move(*j.written);
    j.written.reset();
    if (!written) {
      model_failed(written.error());
      drop(j);
      return ok_status();
    }
    j.files = written->files;
    KP_TRY(j.cand, store.add_candidate(j.files.cuda, j.files.python));
    if (const store::EvaluationRow* of = known_verdict(j)) {
      KP_TRY_STATUS(record_known(j, *of));
      drop(j);
      return ok_status();
    }
    KP_TRY(auto paths, write_files(j.cand, j.files));
    j.cu = paths.first;
    j.py = paths.second;
    j.stage = hooks.prebuild && !j.cu.empty() ? Stage::kBuild : Stage::kGpu;
    return ok_status();
  };
  auto take_gpu = [&](Job& j) -> Status {
    auto result = std::move(*j.result);
    if (!result) {
      failure = result.error();
      drop(j);
      return ok_status();
    }
    const eval::EvalResult& r = *result;
    report.build_s += r.build_seconds;
    report.worker_s += r.worker_seconds;
    if (r.outcome == eval::Outcome::kNotRun) {
      stop_here("no_gpu");
      drop(j);
      return ok_status();
    }
    ++evaluated;
    const auto m = measurement_of(r);
    NodeFacts f;
    f.files = j.files;
    f.candidate = j.cand;
    f.outcome = eval::to_string(r.outcome);
    if (m.ok) {
      report.analyze_s += j.analyze_s;
      if (j.analysis && *j.analysis) {
        f.feedback = (*j.analysis)->feedback;
        f.raw_metrics = (*j.analysis)->raw_metrics;
        f.bottleneck_class = (*j.analysis)->bottleneck_class;
      } else if (j.analysis) {
        say("analyze: not profiled (" + j.analysis->error().message + ")");
      }
    } else {
      f.diagnostics = failure_diagnostics(r);
      // A failure has no class: its repair's lesson is of its parent's.
      f.bottleneck_class = facts[static_cast<size_t>(j.parent)].bottleneck_class;
    }
    store::EvaluationRow row{j.cand,
                             f.outcome,
                             r.reason,
                             m.seconds,
                             m.joules,
                             r.speedup_vs_reference,
                             facts_json(f, hooks.record ? hooks.record(r) : "")};
    verdict[j.cand] = row;
    by_code.emplace(code_key(j.files.cuda, j.files.python), j.cand);
    KP_TRY_STATUS(record(j, row, std::move(f), false));
    drop(j);
    return ok_status();
  };

  for (;;) {
    if (!stopping()) {
      fill();
      auto started = dispatch();
      if (!started) {
        failure = started.error();
      }
    }
    if (!model_lane.job && !build_lane.job && !gpu_lane.job) {
      if (stopping() || jobs.empty()) break;
      continue;  // dispatch can start a lane for any job left: it does on the next turn
    }
    {
      std::unique_lock lock(lane_mu);
      lane_cv.wait(lock, [&] { return lanes_done > 0; });
    }
    auto ready = [](Lane& l) { return l.job && l.work.wait_for(std::chrono::seconds(0)) == std::future_status::ready; };
    Status taken = ok_status();
    if (ready(model_lane)) {
      model_lane.work.get();
      Job& j = *std::exchange(model_lane.job, nullptr);
      {
        std::lock_guard lock(lane_mu);
        --lanes_done;
      }
      taken = take_model(j);
    }
    if (taken && ready(build_lane)) {
      build_lane.work.get();
      Job& j = *std::exchange(build_lane.job, nullptr);
      {
        std::lock_guard lock(lane_mu);
        --lanes_done;
      }
      report.ahead_s += j.build_s;
      ++report.built_ahead;
      j.stage = Stage::kGpu;
    }
    if (taken && ready(gpu_lane)) {
      gpu_lane.work.get();
      Job& j = *std::exchange(gpu_lane.job, nullptr);
      {
        std::lock_guard lock(lane_mu);
        --lanes_done;
      }
      taken = take_gpu(j);
    }
    if (!taken) failure = taken.error();
  }
  if (failure) return *failure;
  report.stopped = !stopped_here.empty() ? stopped_here : !over_budget().empty() ? over_budget() : "exhausted";

  // The best so far, with its verdict.
  const int best = tree.best();
  const NodeFacts& bf = facts[static_cast<size_t>(best)];
  report.nodes = 0;  // measured: those in flight when the run stopped are not in the store
  for (size_t i = 0; i < tree.size(); ++i) report.nodes += tree.node(static_cast<int>(i)).measured ? 1 : 0;
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
  j["in_flight"] = width;
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
