#include "eval/result_json.h"

namespace kp::eval {

using nlohmann::json;

namespace {

json build_json(const build::BuildResult& b) {
  json kernels = json::array();
  for (const auto& k : b.resources.kernels) {
    kernels.push_back({{"name", k.name}, {"mangled_name", k.mangled_name}, {"registers", k.registers},
                       {"barriers", k.barriers}, {"shared_bytes", k.shared_bytes}, {"stack_frame_bytes", k.stack_frame_bytes},
                       {"spill_store_bytes", k.spill_store_bytes}, {"spill_load_bytes", k.spill_load_bytes}});
  }
  json diags = json::array();
  for (const auto& d : b.diagnostics) {
    diags.push_back({{"file", d.file}, {"line", d.line}, {"column", d.column},
                     {"severity", build::to_string(d.severity)}, {"message", d.message}});
  }
  return {{"ok", b.ok}, {"cache_hit", b.cache_hit}, {"seconds", b.seconds}, {"key", b.key},
          {"artifact", b.artifact.string()}, {"tune", b.tune}, {"kernels", kernels}, {"diagnostics", diags}};
}

}  // namespace

json result_to_json(const task::Task& task, const EvalResult& r) {
  json j = {{"task", task.name},
            {"kind", task::to_string(task.kind)},
            {"candidate", r.candidate.string()},
            {"outcome", to_string(r.outcome)},
            {"reason", r.reason},
            {"cheat", r.cheat},
            {"candidate_stdout", r.candidate_stdout},
            {"candidate_stderr", r.candidate_stderr},
            {"seconds", {{"total", r.total_seconds}, {"build", r.build_seconds}, {"worker_start", r.worker_start_seconds},
                         {"evaluation", r.worker_seconds}}}};
  if (task.kind == task::TaskKind::kKernelBench) {
    j["problem"] = {{"name", task.name},   {"path", task.reference_path.string()}, {"level", task.level},
                    {"problem_id", task.problem_id}, {"description", task.description}};
    j["candidate_form"] = to_string(r.form);
    if (!r.library_source.empty()) j["library_source"] = r.library_source.string();
  }
  if (r.report) {
    j["physics_floor_s"] = r.report->physics_floor_s;
    j["physics_floor_basis"] = r.report->physics_floor_basis;
    j["kernels"] = r.report->kernels;
  }
  if (r.device) j["device"] = to_json(*r.device);
  if (r.candidate_build) j["build"] = build_json(*r.candidate_build);
  if (r.reference_build) j["reference_build"] = build_json(*r.reference_build);
  if (r.report) j["worker"] = to_json(*r.report);
  if (r.time.count > 0) {
    j["time"] = {{"median_s", r.time.median}, {"mean_s", r.time.mean}, {"stddev_s", r.time.stddev}, {"min_s", r.time.min},
                 {"max_s", r.time.max}, {"q1_s", r.time.q1}, {"q3_s", r.time.q3}, {"p10_s", r.time.p10},
                 {"p90_s", r.time.p90}, {"samples", r.time.count}};
    j["reference_median_s"] = r.reference_seconds;
    if (!r.reference_gpu_check.empty()) j["reference_gpu_check"] = r.reference_gpu_check;
    j["speedup_vs_reference"] = r.speedup_vs_reference;
    j["achieved_bytes_per_s"] = r.achieved_bytes_per_s;
    j["achieved_flops_per_s"] = r.achieved_flops_per_s;
  }
  return j;
}

}  // namespace kp::eval
