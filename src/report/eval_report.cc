#include "report/eval_report.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::report {

using nlohmann::json;

namespace {

// "(anonymous namespace)::gelu_seed(float const*, float*, long)" -> "gelu_seed": the table
// has one line per kernel; the full signature is in the JSON.
std::string short_kernel_name(std::string name) {
  const std::string anon = "(anonymous namespace)::";
  for (size_t p; (p = name.find(anon)) != std::string::npos;) name.erase(p, anon.size());
  if (size_t paren = name.find('('); paren != std::string::npos) name.resize(paren);
  return name.size() > 40 ? name.substr(0, 37) + "..." : name;
}

std::string resources_text(const build::BuildResult& b) {
  std::string out;
  for (const auto& k : b.resources.kernels) {
    out += fmt::format("  {:<40} {:>3} regs  {:>7} smem  {:>5} stack  spills {}/{} B{}\n",
                       short_kernel_name(k.name), k.registers,
                       format_bytes(static_cast<double>(k.shared_bytes)), k.stack_frame_bytes, k.spill_store_bytes,
                       k.spill_load_bytes, k.has_spills() ? "  <- spills" : "");
  }
  return out;
}

}  // namespace

std::string format_eval_text(const task::Task& task, const eval::EvalResult& r) {
  std::string o;
  const bool kb = task.kind == task::TaskKind::kKernelBench;
  if (kb) {
    std::string where = task.level > 0 ? fmt::format("KernelBench level {}, problem {}", task.level, task.problem_id)
                                       : std::string("KernelBench problem");
    o += fmt::format("problem    {}  ({}{})\n", task.name, where, task.description.empty() ? "" : ": " + task.description);
    o += fmt::format("candidate  {}\n", r.candidate.string());
    if (r.form == eval::CandidateForm::kPrebuilt)
      o += fmt::format("form       prebuilt: {} built by kernelpro's nvcc, loaded by the .py\n", r.library_source.string());
    else
      o += "form       load_inline: the .py builds its own CUDA (torch.utils.cpp_extension)\n";
  } else {
    o += fmt::format("task       {}  ({})\n", task.name, task.description);
    o += fmt::format("candidate  {}\n", r.candidate.string());
  }
  if (r.device) o += fmt::format("device     {} (sm_{}{}, {} SMs)\n", r.device->name, r.device->cc_major, r.device->cc_minor, r.device->sm_count);
  o += fmt::format("verdict    {}\n", eval::to_string(r.outcome));
  if (!r.reason.empty()) o += fmt::format("reason     {}\n", r.reason);
  if (!r.cheat.empty()) o += fmt::format("cheat      {}\n", r.cheat);
  if (r.candidate_build) {
    const auto& b = *r.candidate_build;
    o += fmt::format("\nbuild      {} in {}{}\n", b.ok ? "ok" : "failed", format_seconds(b.seconds), b.cache_hit ? " (cached)" : "");
    if (!b.tune.empty()) {
      std::vector<std::string> t;
      for (const auto& [k, v] : b.tune) t.push_back(fmt::format("{}={}", k, v));
      o += fmt::format("tuning     {}\n", join(t, " "));
    }
    if (b.ok && !b.resources.kernels.empty()) o += "resources (ptxas)\n" + resources_text(b);
  }
  if (r.report) {
    const auto& rep = *r.report;
    if (!rep.checks.empty()) {
      o += fmt::format("\ncorrectness ({} of {} trials passed)\n", rep.trials_run, rep.trials_run + (r.outcome == eval::Outcome::kIncorrect ? 1 : 0));
      for (size_t i = 0; i < rep.checks.size(); ++i) {
        const auto& c = rep.checks[i];
        o += fmt::format("  {:<12} {:<4} max abs err {:.3g}  max rel err {:.3g}  rel norm {:.3g}\n",
                         i < rep.output_names.size() ? rep.output_names[i] : "?", c.passed ? "ok" : "FAIL", c.max_abs_error,
                         c.max_rel_error, c.rel_norm_error);
      }
    }
    if (rep.timing && r.time.count > 0) {
      std::string method = rep.timing->method == "graph" ? "CUDA-graph replay"
                           : rep.timing->method != "events" ? rep.timing->method
                           : (!kb || rep.timing->l2_flush_bytes > 0) ? "events, L2 flushed"
                                                                     : "events";
      o += fmt::format("\ntime       {} median  (IQR {} .. {}, min {}, {} samples, {})\n", format_seconds(r.time.median),
                       format_seconds(r.time.q1), format_seconds(r.time.q3), format_seconds(r.time.min), r.time.count,
                       method);
      if (r.reference_seconds > 0)
        o += fmt::format("reference  {} median{}  -> speedup {:.2f}x\n", format_seconds(r.reference_seconds),
                         kb ? " (the problem's Model, same run)" : "", r.speedup_vs_reference);
      if (task.ideal_bytes > 0) o += fmt::format("bandwidth  {:.1f} GB/s of ideal bytes ({})\n", r.achieved_bytes_per_s / 1e9, format_bytes(task.ideal_bytes));
      if (task.ideal_flops > 0) o += fmt::format("compute    {:.2f} TFLOP/s of ideal FLOPs\n", r.achieved_flops_per_s / 1e12);
    }
    if (rep.physics_floor_s > 0)
      o += fmt::format("floor      {} per call is the physics floor ({})\n", format_seconds(rep.physics_floor_s),
                       rep.physics_floor_basis.empty() ? "basis not given" : rep.physics_floor_basis);
    if (rep.energy) {
      const auto& e = *rep.energy;
      if (e.measured)
        o += fmt::format("energy     {:.4g} J/call ({:.4g} J above idle), {:.0f} W average, idle {:.0f} W, {} calls over {}, SM {} MHz, {} C\n",
                         e.joules_per_call, e.dynamic_joules_per_call, e.average_watts, e.idle_watts, e.calls,
                         format_seconds(e.window_s), e.sm_clock_mhz, e.temperature_c);
      else
        o += fmt::format("energy     not measured: {}\n", e.unavailable_reason);
    }
    if (!rep.kernels.empty()) {
      o += fmt::format("kernels    {} launched per call (traced)\n", rep.kernels.size());
      for (const auto& k : rep.kernels) o += fmt::format("  {}\n", short_kernel_name(k));
    }
  }
  if (!r.candidate_stdout.empty()) o += "\ncandidate stdout:\n" + r.candidate_stdout;
  if (!r.candidate_stderr.empty()) o += "\ncandidate stderr:\n" + r.candidate_stderr;
  o += fmt::format("\nwall       {} total: build {}, worker start {}, evaluation {}\n", format_seconds(r.total_seconds),
                   format_seconds(r.build_seconds), format_seconds(r.worker_start_seconds), format_seconds(r.worker_seconds));
  return o;
}

}  // namespace kp::report
