#include "driver/generate_session.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::driver {

namespace fs = std::filesystem;
using nlohmann::json;

json GenerateReport::to_json() const {
  json a = json::array();
  for (const auto& x : attempts)
    a.push_back({{"role", x.role}, {"dir", x.dir.string()}, {"outcome", eval::to_string(x.outcome)}, {"reason", x.reason},
                 {"speedup", x.speedup}, {"repairs", x.repairs}, {"tool_calls", x.tool_calls}});
  return {{"direction", direction}, {"attempts", a}, {"outcome", eval::to_string(outcome)}, {"feedback", feedback}};
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
  if (r.candidate_build && !r.candidate_build->ok) return r.candidate_build->log;
  out = r.reason + "\n";
  if (!r.candidate_stderr.empty()) out += "stderr of the candidate:\n" + r.candidate_stderr + "\n";
  if (r.report)
    for (size_t i = 0; i < r.report->checks.size(); ++i) {
      const auto& c = r.report->checks[i];
      if (c.passed) continue;
      const std::string name = i < r.report->output_names.size() ? r.report->output_names[i] : std::to_string(i);
      out += fmt::format("output {}: {} of {} elements off, {} unwritten, {} NaN/Inf; max abs error {:.3g}, max rel error "
                         "{:.3g}{}\n",
                         name, c.mismatches, c.elements, c.unwritten, c.nonfinite, c.max_abs_error, c.max_rel_error,
                         c.reason.empty() ? "" : "; " + c.reason);
    }
  return out;
}

namespace {

bool retryable(eval::Outcome o) {
  using eval::Outcome;
  return o == Outcome::kCompileError || o == Outcome::kLoadError || o == Outcome::kRuntimeError || o == Outcome::kCrash ||
         o == Outcome::kTimeout || o == Outcome::kIncorrect;
}

}  // namespace

Result<GenerateReport> run_generate(const task::Task& task, agent::Agents& agents, const GenerateHooks& hooks,
                                    const GenerateOptions& o, const agent::CoderTools* tools) {
  auto say = [&](const std::string& s) {
    if (hooks.progress) hooks.progress(s);
  };
  auto brief = task_brief(task, o.gpu);
  if (!brief) return brief.error();
  std::string feedback = o.feedback;
  if (feedback.empty() && o.analyze_seed && task.seed_path && hooks.analyze) {
    say("analyze: profiling the seed, for the coder");
    auto fb = task.kind == task::TaskKind::kNative ? hooks.analyze(*task.seed_path, {}) : hooks.analyze({}, *task.seed_path);
    if (fb) feedback = *fb;
    else say("analyze: the seed was not profiled (" + fb.error().message + ")");
  }
  GenerateReport report;
  std::error_code ec;
  fs::create_directories(o.run_dir, ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("creating {}: {}", o.run_dir.string(), ec.message()));
  auto save = [&]() -> Status { return write_file((o.run_dir / "generate.json").string(), report.to_json().dump(2) + "\n"); };

  report.direction = o.direction;
  if (report.direction.empty() && o.plan && !feedback.empty()) {
    say("planner: choosing a direction from the seed's analysis");
    auto plan = agents.plan(*brief, feedback, "", "");
    if (!plan) return plan.error();
    report.direction = plan->direction + (plan->why.empty() ? "" : " (why: " + plan->why + ")");
    say("planner: " + report.direction);
  }
  say("coder: writing a candidate");
  auto written = agents.write(*brief, report.direction, feedback, tools);
  if (!written) return written.error();
  agent::CandidateFiles files = written->files;
  GenerateAttempt attempt{"coder", {}, eval::Outcome::kNotRun, "", 0, written->repairs, written->tool_calls};
  for (int round = 0;; ++round) {
    attempt.dir = o.run_dir / fmt::format("attempt-{}", report.attempts.size() + 1);
    fs::create_directories(attempt.dir, ec);
    const fs::path cu = files.cuda.empty() ? fs::path() : attempt.dir / "candidate.cu";
    const fs::path py = files.python.empty() ? fs::path() : attempt.dir / "candidate.py";
    if (!cu.empty())
      if (Status s = write_file(cu.string(), files.cuda); !s) return s.error();
    if (!py.empty())
      if (Status s = write_file(py.string(), files.python); !s) return s.error();
    say(fmt::format("{}: evaluating {}", attempt.role, attempt.dir.string()));
    auto result = hooks.evaluate(cu, py);
    if (!result) return result.error();
    attempt.outcome = result->outcome;
    attempt.reason = result->reason;
    attempt.speedup = result->speedup_vs_reference;
    report.attempts.push_back(attempt);
    report.outcome = result->outcome;
    if (Status s = save(); !s) return s.error();
    say(fmt::format("{}: {}{}", attempt.role, eval::to_string(result->outcome),
                    result->reason.empty() ? "" : " (" + result->reason.substr(0, 200) + ")"));
    if (result->outcome == eval::Outcome::kOk) {
      if (hooks.analyze) {
        auto fb = hooks.analyze(cu, py);
        if (fb) report.feedback = *fb;
        else say("analyze: " + fb.error().message);
        if (Status s = save(); !s) return s.error();
      }
      return report;
    }
    if (!retryable(result->outcome) || round >= o.max_debug_rounds) return report;
    say(fmt::format("debugger: fixing the {}", eval::to_string(result->outcome)));
    auto fixed = agents.debug(*brief, files, eval::to_string(result->outcome), failure_diagnostics(*result));
    if (!fixed) return fixed.error();
    files = fixed->files;
    attempt = GenerateAttempt{"debugger", {}, eval::Outcome::kNotRun, "", 0, fixed->repairs, 0};
  }
}

}  // namespace kp::driver
