#include "driver/model_search.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "driver/pipeline.h"
#include "eval/result_json.h"
#include "driver/prompt_context.h"
#include "driver/run_ledger.h"
#include "search/strategy.h"
#include "store/run_store.h"
#include "task/work_kind.h"
#include "util/strings.h"

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void add_parts(OptimizeReport& report, const Analysis& a) {
  for (const auto& [part, s] : a.seconds) report.analyze_parts_s[part] += s;
}

// The loop of a run whose root is in the store: the strategy's picks become jobs in the
// pipeline (pipeline.h), whose results this thread takes back into the tree, the ledger
// (run_ledger.h) and the facts the prompts are made of (prompt_context.h).
// A passing candidate the analysis could not profile: said in the run's log, kept in its facts (its
// prompts say it has no profile and why) and counted in the run's report.
void not_profiled(OptimizeReport& report, NodeFacts& f, const std::string& why,
                  const std::function<void(const std::string&)>& say) {
  f.unprofiled = why;
  if (report.unprofiled++ == 0) report.unprofiled_why = why;
  if (say) say("analyze: NOT PROFILED, the prompts will say so (" + why + ")");
}

class ModelLoop {
 public:
  ModelLoop(const task::Task& task, agent::Agents& agents, Workbench& bench, const LoopControls& controls,
            const OptimizeOptions& o,
            RunLedger& ledger, KnownVerdicts& verdicts, search::Tree& tree, PromptContext& prompts,
            std::unique_ptr<search::Strategy> strategy)
      : task_(task),
        agents_(agents),
        bench_(bench),
        controls_(controls),
        o_(o),
        ledger_(ledger),
        verdicts_(verdicts),
        tree_(tree),
        prompts_(prompts),
        strategy_(std::move(strategy)),
        spend_([&c = agents.client()] { return c.spent(); }, [&c = agents.client()] { return c.budget_exhausted(); }),
        pipeline_(pipeline_limits(o.in_flight, o.max_evaluations)) {}

  // Runs until the strategy, the budget or a stage stops it. Returns why, or the run's error.
  Result<StopReason> run();

  // KernelBench: the problem's own reference, the seed's candidate (0: none). A coder that hands it
  // back wrote no candidate.
  int64_t reference_candidate = 0;

 private:
  void say(const std::string& s) const { controls_.say(s); }
  std::function<void(const std::string&)> say_fn() const {
    return [this](const std::string& s) { say(s); };
  }
  std::string status(const search::Measurement* just = nullptr) const {
    std::string llm;
    if (spend_.tracked()) {
      const llm::Spend s = spend_.spend();
      llm = fmt::format(", LLM {} calls ${:.2f}", s.calls, s.cost_usd);
    }
    return ledger_.status(tree_, just, llm);
  }
  std::optional<StopReason> over_budget() const { return ledger_.over_budget(spend_.over(), controls_.interrupted); }
  bool stopping() const { return failure_.has_value() || stopped_here_.has_value() || over_budget().has_value(); }
  // A stage's step cannot finish here: the reason the user must act on first is kept.
  void stop_here(StopReason why) { stopped_here_ = stopped_here_ ? first_to_act_on(*stopped_here_, why) : why; }
  // An error from the model: a manual prompt unanswered or the LLM budget spent stop the run
  // cleanly (resumable); anything else is the run's error.
  void model_failed(const Error& e);
  // A model step of `j` that came back pending: parked in waves (the other jobs go on), else
  // the run stops here. True when it was handled so (the job stays or goes as it says).
  bool parked(Job& j, const Error& e);
  void add_pending(const std::string& message) {
    std::string& p = ledger_.report().pending;
    p += (p.empty() ? "" : "\n") + message;
  }
  // In waves: "proposal k of n" for a plan job among the wave's plan jobs of the same parent.
  std::string wave_note(const Job& j) const;
  // Whether the wave's every model step is answered (always true outside waves): until then its
  // candidates wait, so that a resume finds the tree, and so the wave's prompts, as they were.
  bool wave_answered() const {
    if (!o_.waves) return true;
    for (const Job& x : pipeline_.jobs())
      if (x.waiting || x.stage == Stage::kModel) return false;
    return true;
  }

  void fill();
  Result<bool> dispatch();
  void start_model(Job& j, const std::string& lessons);
  Status take_model(Job& j);
  Status take_gpu(Job& j);
  Status record(Job& j, const store::EvaluationRow& row, NodeFacts f, bool known);
  Status record_known(Job& j, const store::EvaluationRow& of);

  const task::Task& task_;
  agent::Agents& agents_;
  Workbench& bench_;
  const LoopControls& controls_;
  const OptimizeOptions& o_;
  RunLedger& ledger_;
  KnownVerdicts& verdicts_;
  search::Tree& tree_;
  PromptContext& prompts_;
  std::unique_ptr<search::Strategy> strategy_;
  std::optional<Error> failure_;
  std::optional<StopReason> stopped_here_;
  SpendSnapshot spend_;
  int wave_start_ = 0;        // waves: the first node of the wave in the making
  std::string wave_lessons_;  // waves: the planner's lessons as the wave began
  Pipeline pipeline_;  // last: its stages' work uses the members above, and is waited for first
};

void ModelLoop::model_failed(const Error& e) {
  if (e.code == ErrorCode::kPending) {
    stop_here(StopReason::kPending);
    add_pending(e.message);
  } else if (spend_.over()) {
    stop_here(StopReason::kBudget);
  } else {
    failure_ = e;
  }
}

// The strategy's next expansions, while there is room in the pipeline and the budget. A job in
// flight is a child in the tree, unmeasured, so that the strategy counts it against its
// parent's widening.
void ModelLoop::fill() {
  // In waves, a wave starts from the tree as the store has it: only once the last one is done.
  if (o_.waves && !pipeline_.empty()) return;
  if (o_.waves) {
    wave_start_ = static_cast<int>(tree_.size());
    auto all = ledger_.store().lessons_in_order();
    if (!all) {
      failure_ = all.error();
      return;
    }
    wave_lessons_ = prompts_.lessons(*all);
  }
  while (!stopping() && pipeline_.has_room(ledger_.evaluated())) {
    auto e = strategy_->next(tree_);
    if (!e) break;
    Job j;
    j.parent = e->parent;
    if (e->repair) {
      j.step = ModelStep::kDebug;
      j.dir = {search::EdgeKind::kRepair, prompts_.repair_direction(tree_, e->parent)};
    } else {
      j.step = ModelStep::kPlan;
      j.dir = {search::EdgeKind::kIdea, ""};  // the planner's direction, once it has one
    }
    j.child = tree_.add(e->parent, j.dir);
    prompts_.grow(tree_.size());
    pipeline_.add(std::move(j));
  }
  if (!o_.waves) return;
  std::map<int, int> ideas;  // per parent, the plan jobs of the wave
  for (const Job& x : pipeline_.jobs())
    if (x.step == ModelStep::kPlan) ++ideas[x.parent];
  std::map<int, int> seen;
  for (Job& x : pipeline_.jobs())
    if (x.step == ModelStep::kPlan) {
      x.wave_k = ++seen[x.parent];
      x.wave_n = ideas[x.parent];
    }
}

// The model stage's next step for `j`, its prompt rendered here from the tree as it is now.
// `lessons`: what the planner gets of the lessons (a plan step only).
void ModelLoop::start_model(Job& j, const std::string& lessons) {
  agent::TaskBrief b = prompts_.brief_for(j.parent);
  const std::string feedback = prompts_.feedback_for(j.parent);
  Job* job = &j;
  std::function<void()> work;
  switch (j.step) {
    case ModelStep::kDebug: {
      const NodeFacts& parent = prompts_.facts(j.parent);
      say(fmt::format("debugger: fixing the {} | {}", parent.outcome, status()));
      work = [this, job, b, files = parent.files, outcome = parent.outcome, diag = parent.diagnostics] {
        const auto tl = Clock::now();
        job->written = agents_.debug(b, files, outcome, diag);
        job->model_s = since(tl);
      };
      break;
    }
    case ModelStep::kPlan: {
      say(fmt::format("planner: choosing a direction from node {} | {}", j.parent, status()));
      work = [this, job, b, feedback, lessons, measured = PromptContext::measured(tree_, j.parent, ledger_.reference().seconds),
              past = o_.waves ? prompts_.history(tree_, j.parent, false, wave_start_) + wave_note(j)
                              : prompts_.history(tree_, j.parent)] {
        const auto tl = Clock::now();
        job->plan = agents_.plan(b, feedback, lessons, past, measured);
        job->model_s = since(tl);
      };
      break;
    }
    case ModelStep::kWrite: {
      say(fmt::format("coder: {} | {}", j.dir.text.substr(0, 100), status()));
      work = [this, job, b, feedback] {
        const auto tl = Clock::now();
        job->written = agents_.write(b, job->dir.text, feedback, bench_.coder_tools());
        job->model_s = since(tl);
      };
      break;
    }
  }
  pipeline_.start(Stage::kModel, j, [this, work = std::move(work)] {
    work();
    spend_.update();
  });
}

// Starts each free stage on its oldest job; false when none could start.
Result<bool> ModelLoop::dispatch() {
  bool started = false;
  if (!pipeline_.busy(Stage::kModel)) {
    if (Job* j = pipeline_.oldest_in(Stage::kModel)) {
      std::string lessons;
      if (j->step == ModelStep::kPlan && o_.waves) {
        lessons = wave_lessons_;  // as the wave began: not what its own children taught since
      } else if (j->step == ModelStep::kPlan) {
        KP_TRY(auto all, ledger_.store().lessons_in_order());
        lessons = prompts_.lessons(all);
      }
      start_model(*j, lessons);
      started = true;
    }
  }
  if (!wave_answered()) return started;  // waves: nothing is measured until the whole wave is answered
  if (!pipeline_.busy(Stage::kBuild)) {
    if (Job* j = pipeline_.oldest_in(Stage::kBuild)) {
      pipeline_.start(Stage::kBuild, *j, [this, j] {
        const auto tb = Clock::now();
        bench_.build_ahead(j->cu);
        j->build_s = since(tb);
      });
      started = true;
    }
  }
  while (!pipeline_.busy(Stage::kGpu)) {
    Job* j = pipeline_.oldest_in(Stage::kGpu);
    if (!j) break;
    // Another job with the same code may have been measured since this one was written.
    if (const store::EvaluationRow* of = verdicts_.find(j->cand, j->files)) {
      KP_TRY_STATUS(record_known(*j, *of));
      pipeline_.drop(*j);
      started = true;
      continue;
    }
    say(fmt::format("evaluating candidate {} | {}", j->cand, status()));
    const bool profile = bench_.analyzes() && prompts_.profiles();
    pipeline_.start(Stage::kGpu, *j, [this, j, profile] {
      j->result = bench_.evaluate({j->cu, j->py, false});
      if (profile && *j->result && (*j->result)->outcome == eval::Outcome::kOk) {
        const auto ta = Clock::now();
        j->analysis = bench_.analyze({j->cu, j->py, false}, {});
        j->analyze_s = since(ta);
      }
    });
    started = true;
  }
  return started;
}

// A measured child: into the tree and the store (the node and its verdict in one transaction:
// a kill after this loses nothing), with its lesson.
Status ModelLoop::record(Job& j, const store::EvaluationRow& row, NodeFacts f, bool known) {
  store::RunStore& store = ledger_.store();
  read_facts(row, f);
  const search::Measurement m{eval::outcome_from_string(row.outcome) == eval::Outcome::kOk, row.seconds, row.joules};
  const NodeFacts& parent = prompts_.facts(j.parent);
  KP_TRY(int64_t node, store.add_node({0, parent.db_id, search::to_string(j.dir.kind), j.dir.text, j.cand, false}));
  KP_TRY_STATUS(store.record_evaluation(node, row, m.ok, m.seconds, m.joules));
  f.db_id = node;
  if (known) ++ledger_.report().duplicates;
  const search::Measurement& before = *tree_.node(j.parent).measured;
  store::Lesson lesson{task_.name,
                       task::work_kind(task_),
                       parent.bottleneck_class,
                       j.dir.text,
                       join(j.actions, ","),
                       row.outcome,
                       0,
                       0,
                       !m.ok       ? row.reason.substr(0, 200)
                       : before.ok ? fmt::format("{:.4g} ms -> {:.4g} ms", before.seconds * 1e3, m.seconds * 1e3)
                                   : fmt::format("fixed: {:.4g} ms", m.seconds * 1e3)};
  set_change_ratios(lesson, before, m);
  KP_TRY(int64_t lesson_id, store.add_lesson(lesson));
  (void)lesson_id;
  say(measured_line(j.dir.text.substr(0, 80), row.outcome, m, tree_.node(0).measured->seconds, row.reason,
                    status(&m)));
  tree_.node(j.child).via = j.dir;
  tree_.measure(j.child, m);
  search::prune(tree_, j.parent, o_.search);
  prompts_.facts(j.child) = std::move(f);
  const search::Node& p = tree_.node(j.parent);
  return store.set_node_flags(prompts_.facts(j.parent).db_id, p.closed, p.exhausted);
}

// A job whose code was measured: a node with that verdict, and no evaluation.
Status ModelLoop::record_known(Job& j, const store::EvaluationRow& of) {
  say(of.candidate == j.cand
          ? fmt::format("candidate {} has the files of one already evaluated: its verdict stands", j.cand)
          : fmt::format("candidate {} has the code of candidate {} (comments and spacing aside): its verdict stands",
                        j.cand, of.candidate));
  NodeFacts f;
  f.files = j.files;
  f.candidate = j.cand;
  store::EvaluationRow row = of;
  row.candidate = j.cand;
  verdicts_.add(j.cand, row);
  return record(j, row, std::move(f), true);
}

// Takes back what the model stage made: a plan (the job waits for the coder), or files (the job
// goes to the compiler or the GPU, unless their code was measured).
bool ModelLoop::parked(Job& j, const Error& e) {
  if (!o_.waves || e.code != ErrorCode::kPending) return false;
  j.waiting = true;
  add_pending(e.message);
  return true;
}

std::string ModelLoop::wave_note(const Job& j) const {
  if (j.wave_n < 2) return "";
  return fmt::format("- (this is proposal {} of {} made in parallel from this candidate; the others are not known to "
                     "you: choose a direction they are less likely to take, say your idea ranked {} by promise)\n",
                     j.wave_k, j.wave_n, j.wave_k);
}

Status ModelLoop::take_model(Job& j) {
  ledger_.report().llm_s += j.model_s;
  if (j.step == ModelStep::kPlan) {
    auto plan = std::move(*j.plan);
    j.plan.reset();
    if (!plan && parked(j, plan.error())) return ok_status();
    if (!plan) {
      model_failed(plan.error());
      pipeline_.drop(j);
      return ok_status();
    }
    j.step = ModelStep::kWrite;
    j.dir.text = plan->direction;
    j.actions = plan->actions;
    tree_.node(j.child).via.text = plan->direction;
    return ok_status();
  }
  auto written = std::move(*j.written);
  j.written.reset();
  if (!written && parked(j, written.error())) return ok_status();
  if (!written) {
    model_failed(written.error());
    pipeline_.drop(j);
    return ok_status();
  }
  j.files = written->files;
  KP_TRY(j.cand, ledger_.store().add_candidate(j.files.cuda, j.files.python));
  if (reference_candidate != 0 && j.cand == reference_candidate) {
    say("the coder handed back the problem's own reference code: no candidate (no kernel of its own); dropped");
    pipeline_.drop(j);
    return ok_status();
  }
  // A duplicate is recorded at once, but in waves with the rest of its wave (the GPU stage's turn).
  if (const store::EvaluationRow* of = o_.waves ? nullptr : verdicts_.find(j.cand, j.files)) {
    KP_TRY_STATUS(record_known(j, *of));
    pipeline_.drop(j);
    return ok_status();
  }
  KP_TRY(auto paths, ledger_.write_candidate(j.cand, j.files));
  j.cu = paths.cu;
  j.py = paths.py;
  j.stage = bench_.builds_ahead() && !j.cu.empty() ? Stage::kBuild : Stage::kGpu;
  return ok_status();
}

// Takes back what the GPU stage made: the verdict (and analysis) of a candidate.
Status ModelLoop::take_gpu(Job& j) {
  auto result = std::move(*j.result);
  if (!result) {
    failure_ = result.error();
    pipeline_.drop(j);
    return ok_status();
  }
  const eval::EvalResult& r = *result;
  ledger_.add_times(r);
  if (eval::is_machine_outcome(r.outcome)) {  // the machine's failure: never a verdict or a lesson
    if (r.outcome == eval::Outcome::kGpuUnavailable) say("the GPU is held elsewhere: " + r.reason);
    stop_here(stop_for(r.outcome));
    pipeline_.drop(j);
    return ok_status();
  }
  ledger_.count_evaluation();
  const auto m = measurement_of(r);
  NodeFacts f;
  f.files = j.files;
  f.candidate = j.cand;
  f.outcome = eval::to_string(r.outcome);
  if (m.ok) {
    ledger_.report().analyze_s += j.analyze_s;
    if (j.analysis && *j.analysis) {
      add_parts(ledger_.report(), **j.analysis);
      f.set_analysis(**j.analysis);
    } else if (j.analysis) {
      not_profiled(ledger_.report(), f, j.analysis->error().message, say_fn());
    }
  } else {
    f.diagnostics = failure_diagnostics(r);
    // A failure has no class: its repair's lesson is of its parent's.
    f.bottleneck_class = prompts_.facts(j.parent).bottleneck_class;
  }
  store::EvaluationRow row{j.cand,
                           f.outcome,
                           r.reason,
                           m.seconds,
                           m.joules,
                           r.speedup_vs_reference,
                           facts_json(f, eval::result_to_json(task_, r).dump())};
  verdicts_.add(j.cand, row, &j.files);
  KP_TRY_STATUS(record(j, row, std::move(f), false));
  pipeline_.drop(j);
  return ok_status();
}

Result<StopReason> ModelLoop::run() {
  for (;;) {
    if (!stopping()) {
      fill();
      auto started = dispatch();
      if (!started) failure_ = started.error();
    }
    if (pipeline_.idle()) {
      if (stopping() || pipeline_.empty()) break;
      if (pipeline_.any_parked()) {  // waves: an answer is missing, and nothing else can move
        stop_here(StopReason::kPending);
        break;
      }
      continue;  // dispatch can start a stage for any job left: it does on the next turn
    }
    pipeline_.wait();
    Status taken = ok_status();
    if (Job* j = pipeline_.take(Stage::kModel)) taken = take_model(*j);
    if (taken) {
      if (Job* j = pipeline_.take(Stage::kBuild)) {
        ledger_.report().ahead_s += j->build_s;
        ++ledger_.report().built_ahead;
        j->stage = Stage::kGpu;
      }
    }
    if (taken) {
      if (Job* j = pipeline_.take(Stage::kGpu)) taken = take_gpu(*j);
    }
    if (!taken) failure_ = taken.error();
  }
  if (failure_) return *failure_;
  if (stopped_here_) return *stopped_here_;
  return over_budget().value_or(StopReason::kExhausted);
}

// The seed of a fresh run: evaluated, profiled for the prompts (not with --feedback none) and
// stored as the root with the lessons of earlier runs chosen by its class; or the report of a run
// that stops at it.
Result<std::optional<OptimizeReport>> measure_seed(const task::Task& task, Workbench& bench, RunLedger& ledger,
                                                   const OptimizeOptions& o, FeedbackMode feedback,
                                                   const agent::CandidateFiles& seed_files,
                                                   const std::function<void(const std::string&)>& say) {
  store::RunStore& store = ledger.store();
  say(fmt::format("seed: evaluating {}", task.seed_path->string()));
  KP_TRY(int64_t cand, store.add_candidate(seed_files.cuda, seed_files.python));
  KP_TRY(auto paths, ledger.write_candidate(cand, seed_files));
  KP_TRY(eval::EvalResult r, bench.evaluate({paths.cu, paths.py, true}));
  ledger.count_evaluation();
  ledger.add_times(r);
  KP_TRY(std::optional<OptimizeReport> stopped, ledger.gate_seed(r, "optimizing from it"));
  if (stopped) return stopped;
  NodeFacts f;
  if (bench.analyzes() && feedback != FeedbackMode::kNone) {
    const auto ta = Clock::now();
    say("analyze: profiling the seed for the planner");
    if (auto a = bench.analyze({paths.cu, paths.py, true}, {})) {
      add_parts(ledger.report(), *a);
      f.set_analysis(*a);
    } else {
      not_profiled(ledger.report(), f, a.error().message, say);
    }
    ledger.report().analyze_s += since(ta);
  }
  // The lessons of earlier runs, chosen once by the seed's class: a resumed run prompts with
  // the same ones, whatever the memory has learned since.
  const std::string memory_lessons =
      memory_lessons_text(o.memory, f.bottleneck_class, task::work_kind(task), o.memory_lessons, say);
  KP_TRY_STATUS(ledger.record_root(task, RunMode::kModel, cand, "the seed", r,
                                   facts_json(f, eval::result_to_json(task, r).dump()),
                                   {{"gpu", o.gpu}, {"memory_lessons", memory_lessons}}));
  return std::optional<OptimizeReport>();
}

}  // namespace

Result<OptimizeReport> run_model_optimize(const task::Task& task, agent::Agents& agents, Workbench& bench,
                                          const LoopControls& controls, const OptimizeOptions& o) {
  const auto t0 = Clock::now();
  auto say = [&](const std::string& s) { controls.say(s); };
  KP_TRY(const FeedbackMode feedback, feedback_mode_from_string(o.feedback));
  if (!task.seed_path)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{}: no seed to start from (a native task needs seed.cu)", task.name));
  const bool kernelbench = task.kind == task::TaskKind::kKernelBench;
  const agent::TaskKind kind = kernelbench ? agent::TaskKind::kKernelBench : agent::TaskKind::kNative;
  KP_TRY(std::string seed_text, read_file(task.seed_path->string()));
  const agent::CandidateFiles seed_files =
      kernelbench ? agent::CandidateFiles{"", seed_text} : agent::CandidateFiles{seed_text, ""};

  KP_TRY(RunLedger ledger, RunLedger::open(task, o, RunMode::kModel, t0));
  store::RunStore& store = ledger.store();
  KP_TRY(RunLedger::Start start, ledger.start([&] {
    return measure_seed(task, bench, ledger, o, feedback, seed_files, say);
  }));
  if (start.stopped) return std::move(*start.stopped);
  const std::vector<store::NodeRow>& rows = start.rows;

  // The tree and the facts, rebuilt from the store in the order they were made.
  KP_TRY(KnownVerdicts verdicts, KnownVerdicts::load(store));
  int64_t reference_candidate = 0;
  if (kernelbench)
    for (const auto& row : rows)
      if (row.parent < 0) verdicts.not_for_children(reference_candidate = row.candidate);
  KP_TRY(agent::TaskBrief brief, task_brief(task, store.meta("gpu").value_or(o.gpu)));
  if (const std::string kind = task::work_kind(task); !kind.empty())
    if (auto playbook = agents.prompts().render("playbook_" + kind, {})) brief.playbook = *playbook;
  PromptContext prompts(std::move(brief), kind, feedback, store.meta("memory_lessons").value_or(""));
  KP_TRY(search::Tree tree, replay_tree(
                                rows, ledger.reference(), o.reward,
                                [](const std::string& k) {
                                  const auto e = search::edge_kind_from_string(k);
                                  return e && *e != search::EdgeKind::kRoot ? *e : search::EdgeKind::kIdea;
                                },
                                [&](const store::NodeRow& row, int) -> Status {
                                  NodeFacts f;
                                  f.db_id = row.id;
                                  f.candidate = row.candidate;
                                  KP_TRY(auto files, store.candidate(row.candidate));
                                  f.files = {files.first, files.second};
                                  if (const auto* v = verdicts.of(row.candidate)) read_facts(*v, f);
                                  prompts.add(std::move(f));
                                  return ok_status();
                                }));
  if (tree.size() > 1) say(fmt::format("resume: {} candidates measured before", tree.size()));

  KP_TRY(auto strategy, search::make_strategy(o.strategy, o.search));
  StopReason stopped;
  {
    ModelLoop loop(task, agents, bench, controls, o, ledger, verdicts, tree, prompts, std::move(strategy));
    loop.reference_candidate = reference_candidate;
    KP_TRY(stopped, loop.run());
  }

  // The best so far, with its verdict.
  const int best = ledger.settle(tree, stopped);
  const NodeFacts& bf = prompts.facts(best);
  OptimizeReport& report = ledger.report();
  report.best_direction = best == 0 ? "the seed" : tree.node(best).via.text;
  report.best_point = report.best_direction;
  report.best_source = o.run_dir / (bf.files.python.empty() ? "best.cu" : "best.py");
  if (!bf.files.cuda.empty()) KP_TRY_STATUS(write_file((o.run_dir / "best.cu").string(), bf.files.cuda));
  if (!bf.files.python.empty()) KP_TRY_STATUS(write_file((o.run_dir / "best.py").string(), bf.files.python));
  json extra = {{"feedback", to_string(feedback)}, {"in_flight", std::max(1, o.in_flight)}};
  const llm::Spend s = agents.client().spent();
  extra["llm"] = {{"calls", s.calls}, {"tokens", s.tokens}, {"cost_usd", s.cost_usd}};
  if (const auto* v = verdicts.of(bf.candidate))
    extra["verdict"] = json::parse(v->report_json, nullptr, false).value("eval", json::object());
  return ledger.write_summary(task, extra);
}

}  // namespace kp::driver
