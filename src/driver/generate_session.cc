#include "driver/generate_session.h"

#include "build/diagnostics.h"
#include "driver/run_ledger.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "util/hash.h"
#include "util/strings.h"

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;

json GenerateReport::to_json() const {
  json a = json::array();
  for (const auto& x : attempts)
    a.push_back({{"role", x.role},
                 {"dir", x.dir.string()},
                 {"outcome", eval::to_string(x.outcome)},
                 {"reason", x.reason},
                 {"speedup", x.speedup},
                 {"repairs", x.repairs},
                 {"tool_calls", x.tool_calls}});
  return {{"direction", direction},
          {"attempts", a},
          {"outcome", eval::to_string(outcome)},
          {"feedback", feedback},
          {"note", note}};
}

Result<agent::TaskBrief> task_brief(const task::Task& task, const std::string& gpu) {
  agent::TaskBrief b;
  b.kind = task.kind == task::TaskKind::kNative ? agent::TaskKind::kNative : agent::TaskKind::kKernelBench;
  b.name = task.name;
  b.description = task.description;
  b.gpu = gpu;
  if (b.kind == agent::TaskKind::kNative) {
    auto toml = read_file((task.dir / "task.toml").string());
    if (!toml) return toml.error();
    b.interface = "task.toml:\n```toml\n" + *toml + "```";
    auto ref = read_file(task.reference_path.string());
    if (!ref) return ref.error();
    b.reference = *ref;
    if (task.seed_path) {
      auto seed = read_file(task.seed_path->string());
      if (seed) b.current = "```cuda\n" + *seed + "```";
    }
  } else {
    auto problem = read_file(task.reference_path.string());
    if (!problem) return problem.error();
    b.interface = *problem;
    b.reference = *problem;
  }
  return b;
}

std::string failure_diagnostics(const eval::EvalResult& r) {
  std::string out;
  // A compile error, cut to what matters (deep CuTe/CUTLASS instantiation chains are most of
  // a log); the raw log only when nothing in it parsed as a diagnostic.
  if (r.candidate_build && !r.candidate_build->ok) {
    const std::string summary = build::summarize_diagnostics(r.candidate_build->diagnostics, 5);
    return summary.empty() ? r.candidate_build->log : "compile errors:\n" + summary;
  }
  out = r.reason + "\n";
  if (!r.candidate_stderr.empty()) out += "stderr of the candidate:\n" + r.candidate_stderr + "\n";
  if (r.report)
    for (size_t i = 0; i < r.report->checks.size(); ++i) {
      const auto& c = r.report->checks[i];
      if (c.passed) continue;
      const std::string name = i < r.report->output_names.size() ? r.report->output_names[i] : std::to_string(i);
      out += fmt::format(
          "output {}: {} of {} elements off, {} unwritten, {} NaN/Inf; max abs error {:.3g}, max rel error "
          "{:.3g}{}\n",
          name, c.mismatches, c.elements, c.unwritten, c.nonfinite, c.max_abs_error, c.max_rel_error,
          c.reason.empty() || r.reason.find(c.reason) != std::string::npos ? "" : "; " + c.reason);
    }
  return out;
}

namespace {

// What the prompts of a run were written from: the GPU in words, the seed's analysis, the
// analyst's choice of tools and the analysis with them. Kept in RUN_DIR/session.json, step by
// step, so that a resumed run, on this machine or another, asks the model the same questions
// (the replay finds its answers only for the same requests) and profiles nothing twice.
struct SessionFacts {
  std::string gpu;
  bool seed_analyzed = false;
  std::string seed_feedback;
  std::vector<std::string> seed_tools;  // the tools that made seed_feedback
  bool tools_chosen = false;
  std::vector<std::string> analyst_tools;
  std::string feedback;  // what the planner and coder get

  json to_json() const {
    return {{"gpu", gpu},
            {"seed_analyzed", seed_analyzed},
            {"seed_feedback", seed_feedback},
            {"seed_tools", seed_tools},
            {"tools_chosen", tools_chosen},
            {"analyst_tools", analyst_tools},
            {"feedback", feedback}};
  }
};

std::optional<SessionFacts> load_facts(const fs::path& file) {
  auto text = read_file(file.string());
  if (!text) return std::nullopt;
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  SessionFacts f;
  f.gpu = j.value("gpu", "");
  f.seed_analyzed = j.value("seed_analyzed", false);
  f.seed_feedback = j.value("seed_feedback", "");
  f.seed_tools = j.value("seed_tools", std::vector<std::string>{});
  f.tools_chosen = j.value("tools_chosen", false);
  f.analyst_tools = j.value("analyst_tools", std::vector<std::string>{});
  f.feedback = j.value("feedback", "");
  return f;
}

// The verdict of one attempt, kept in attempt-N/verdict.json beside the candidate it is for, so
// that a resumed run does not evaluate (or profile) the same files again. "not_run" is not kept:
// a run resumed on a GPU evaluates what a machine without one only built.
struct Verdict {
  std::string files_sha;
  eval::Outcome outcome = eval::Outcome::kNotRun;
  std::string reason;
  double speedup = 0;
  std::string diagnostics;  // for the debugger, when it failed
  std::string analysis;     // analyze's feedback, when it passed
};

std::string files_sha(const agent::CandidateFiles& f) { return sha256_hex(f.cuda + std::string(1, '\0') + f.python); }

std::optional<Verdict> load_verdict(const fs::path& file, const std::string& sha) {
  auto text = read_file(file.string());
  if (!text) return std::nullopt;
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object() || j.value("files_sha", "") != sha) return std::nullopt;
  auto outcome = eval::outcome_from_string(j.value("outcome", ""));
  if (!outcome || eval::is_machine_outcome(*outcome)) return std::nullopt;  // said nothing of the candidate
  return Verdict{sha,
                 *outcome,
                 j.value("reason", ""),
                 j.value("speedup", 0.0),
                 j.value("diagnostics", ""),
                 j.value("analysis", "")};
}

Status save_verdict(const fs::path& file, const Verdict& v) {
  json j = {{"files_sha", v.files_sha}, {"outcome", eval::to_string(v.outcome)}, {"reason", v.reason},
            {"speedup", v.speedup},     {"diagnostics", v.diagnostics},          {"analysis", v.analysis}};
  return write_file(file.string(), j.dump(2) + "\n");
}

// The seed's analysis, then the analyst's tools on it, each step kept in `file` as it is done.
// Returns why the session must stop here (empty: go on).
Result<std::string> settle_facts(const task::Task& task, const agent::TaskBrief& brief, agent::Agents& agents,
                                 Workbench& bench, const LoopControls& controls, const GenerateOptions& o,
                                 const fs::path& file, SessionFacts& facts) {
  auto say = [&](const std::string& s) { controls.say(s); };
  auto keep = [&]() { return write_file(file.string(), facts.to_json().dump(2) + "\n"); };
  auto analyze_seed_with = [&](const std::vector<std::string>& extra) {
    const fs::path& seed = *task.seed_path;
    return task.kind == task::TaskKind::kNative ? bench.analyze({seed, {}, true}, extra)
                                                : bench.analyze({{}, seed, true}, extra);
  };
  // Done once, where the run starts: a run started without a GPU keeps its seed unprofiled, so
  // that resuming it on one asks the questions already answered.
  if (!facts.seed_analyzed) {
    if (facts.feedback.empty() && o.analyze_seed && task.seed_path && bench.analyzes()) {
      say("analyze: profiling the seed, for the coder");
      if (auto a = analyze_seed_with({})) {
        facts.seed_feedback = a->feedback;
        facts.seed_tools = a->tools_run;
      } else {
        say("analyze: the seed was not profiled (" + a.error().message + ")");
      }
      facts.feedback = facts.seed_feedback;
    }
    facts.seed_analyzed = true;
    if (Status s = keep(); !s) return s.error();
  }
  if (facts.tools_chosen) return std::string();
  // The analyst informs the plan: with a direction given, there is none to make.
  std::vector<agent::ToolOffer> offers = bench.tool_offers();
  if (!facts.seed_feedback.empty() && !offers.empty() && o.direction.empty() && o.plan) {
    for (auto& t : offers)
      t.ran = std::find(facts.seed_tools.begin(), facts.seed_tools.end(), t.name) != facts.seed_tools.end();
    say("analyst: choosing extra tools for the seed");
    auto chosen = agents.choose_tools(brief, facts.seed_feedback, offers);
    if (!chosen) return chosen.error();
    facts.analyst_tools = *chosen;
    if (!chosen->empty()) {
      if (!o.analyze_seed)  // resumed where the seed cannot be profiled: stop until a GPU can
        return "the analyst's tools (" + join(*chosen, ", ") + ") profile the seed, which needs a GPU";
      say("analyze: the seed again, with " + join(*chosen, ", "));
      if (auto a = analyze_seed_with(*chosen))
        facts.feedback = a->feedback;
      else
        say("analyze: the extra tools did not run (" + a.error().message + ")");
    }
  }
  facts.tools_chosen = true;
  if (Status s = keep(); !s) return s.error();
  return std::string();
}

bool retryable(eval::Outcome o) {
  using eval::Outcome;
  return o == Outcome::kCompileError || o == Outcome::kLoadError || o == Outcome::kRuntimeError ||
         o == Outcome::kCrash || o == Outcome::kTimeout || o == Outcome::kIncorrect;
}

}  // namespace

Result<GenerateReport> run_generate(const task::Task& task, agent::Agents& agents, Workbench& bench,
                                    const LoopControls& controls, const GenerateOptions& o) {
  auto say = [&](const std::string& s) { controls.say(s); };
  std::error_code ec;
  fs::create_directories(o.run_dir, ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("creating {}: {}", o.run_dir.string(), ec.message()));
  const fs::path facts_file = o.run_dir / "session.json";
  SessionFacts facts;
  if (auto kept = load_facts(facts_file)) {
    facts = *kept;
    if (facts.gpu != o.gpu) say("resume: the prompts keep the GPU of the first run (" + facts.gpu + ")");
  } else {
    facts.gpu = o.gpu;
    facts.feedback = o.feedback;
  }
  auto brief = task_brief(task, facts.gpu);
  if (!brief) return brief.error();
  GenerateReport report;
  auto settled = settle_facts(task, *brief, agents, bench, controls, o, facts_file, facts);
  if (!settled) return settled.error();
  if (!settled->empty()) {
    report.note = *settled;
    return report;
  }
  const std::string& feedback = facts.feedback;
  auto save = [&]() -> Status {
    return write_file((o.run_dir / "generate.json").string(), report.to_json().dump(2) + "\n");
  };

  report.direction = o.direction;
  if (report.direction.empty() && o.plan && !feedback.empty()) {
    say("planner: choosing a direction from the seed's analysis");
    auto plan = agents.plan(*brief, feedback, "", "");
    if (!plan) return plan.error();
    report.direction = plan->direction + (plan->why.empty() ? "" : " (why: " + plan->why + ")");
    say("planner: " + report.direction);
  }
  say("coder: writing a candidate");
  auto written = agents.write(*brief, report.direction, feedback, bench.coder_tools());
  if (!written) return written.error();
  agent::CandidateFiles files = written->files;
  GenerateAttempt attempt{"coder", {}, eval::Outcome::kNotRun, "", 0, written->repairs, written->tool_calls};
  for (int round = 0;; ++round) {
    attempt.dir = o.run_dir / fmt::format("attempt-{}", report.attempts.size() + 1);
    fs::create_directories(attempt.dir, ec);
    auto paths = write_candidate_files(files, attempt.dir, "candidate");
    if (!paths) return paths.error();
    const fs::path& cu = paths->cu;
    const fs::path& py = paths->py;
    const fs::path verdict_file = attempt.dir / "verdict.json";
    const std::string sha = files_sha(files);
    Verdict v;
    if (auto kept = load_verdict(verdict_file, sha)) {
      v = *kept;
      say(fmt::format("{}: {} holds its verdict from an earlier run", attempt.role, attempt.dir.string()));
    } else {
      say(fmt::format("{}: evaluating {}", attempt.role, attempt.dir.string()));
      auto result = bench.evaluate({cu, py, false});
      if (!result) return result.error();
      v = Verdict{sha,
                  result->outcome,
                  result->reason,
                  result->speedup_vs_reference,
                  result->outcome == eval::Outcome::kOk ? "" : failure_diagnostics(*result),
                  ""};
      if (v.outcome == eval::Outcome::kOk && bench.analyzes()) {
        auto a = bench.analyze({cu, py, false}, {});
        if (a)
          v.analysis = a->feedback;
        else
          say("analyze: " + a.error().message);
      }
      if (Status s = save_verdict(verdict_file, v); !s) return s.error();
    }
    attempt.outcome = v.outcome;
    attempt.reason = v.reason;
    attempt.speedup = v.speedup;
    report.attempts.push_back(attempt);
    report.outcome = v.outcome;
    report.feedback = v.analysis;
    if (Status s = save(); !s) return s.error();
    say(fmt::format("{}: {}{}", attempt.role, eval::to_string(v.outcome),
                    v.reason.empty() ? "" : " (" + v.reason.substr(0, 200) + ")"));
    if (v.outcome == eval::Outcome::kOk) return report;
    if (!retryable(v.outcome) || round >= o.max_debug_rounds) return report;
    say(fmt::format("debugger: fixing the {}", eval::to_string(v.outcome)));
    auto fixed = agents.debug(*brief, files, eval::to_string(v.outcome), v.diagnostics);
    if (!fixed) return fixed.error();
    files = fixed->files;
    attempt = GenerateAttempt{"debugger", {}, eval::Outcome::kNotRun, "", 0, fixed->repairs, 0};
  }
}

}  // namespace kp::driver
