// kp-worker as an adapter of the judge core (judge/session.h): event timing and the energy
// window. The callbacks are plain C: a refresh draws a set's inputs in place with the core's seed
// (and poisons the candidate's outputs), a call is one kp_run on a set, outputs describe the
// buffers the call wrote. Everything the core decides (fresh inputs per call, the reference run
// after the candidate on the same inputs, the comparison, the tail, the samples) is the same code
// the KernelBench worker's verdicts come from.
#include "judge/session.h"
#include "worker/evaluation.h"

namespace kp::worker {

namespace {

kpj_tensor to_core(const kp_tensor& t) {
  kpj_tensor c{};
  c.data = t.data;
  c.dtype = t.dtype;
  c.rank = std::min<int32_t>(t.rank, KPJ_MAX_RANK);
  for (int i = 0; i < c.rank; ++i) c.shape[i] = t.shape[i];
  return c;
}

void describe_all(const std::vector<kp_tensor>& ts, kpj_tensors* out) {
  out->count = static_cast<int32_t>(std::min<size_t>(ts.size(), KPJ_MAX_TENSORS));
  for (int i = 0; i < out->count; ++i) out->t[i] = to_core(ts[static_cast<size_t>(i)]);
}

}  // namespace

struct CoreAdapter {
  NativeEvaluator::Impl* m = nullptr;
  const CandidateLibrary* cand = nullptr;
  const CandidateLibrary* ref = nullptr;
  std::vector<kp_args> cand_args, ref_args;
  std::vector<TensorSet> ref_views;  // set k's inputs, the reference's output buffers
  MaybeStop failure;
  bool reference_failed = false;
  int last_set = 0;

  static int refresh(void* ctx, int32_t k, uint64_t seed, kpj_tensors* ins) {
    auto* a = static_cast<CoreAdapter*>(ctx);
    NativeEvaluator::Impl& m = *a->m;
    TensorSet& set = m.sets[static_cast<size_t>(k)];
    for (size_t i = 0; i < m.task->inputs.size(); ++i) {
      const auto& s = m.task->inputs[i];
      if (cudaError_t e = fill_random(set.inputs[i].get(), s.dtype, s.numel(), s.init, seed, i, m.stream);
          e != cudaSuccess) {
        a->failure = m.harness(e, "generating input " + s.name);
        return KPJ_CALLBACK_FAILED;
      }
    }
    if ((a->failure = m.poison_outputs(set))) return KPJ_CALLBACK_FAILED;
    describe_all(set.in_desc, ins);
    return KPJ_CALL_OK;
  }

  static int call(void* ctx, int32_t role, int32_t k) {
    auto* a = static_cast<CoreAdapter*>(ctx);
    a->last_set = k;
    if (role == KPJ_CANDIDATE) {
      a->failure = a->m->call(*a->cand, a->cand_args[static_cast<size_t>(k)], "the candidate");
    } else {
      a->failure = a->m->call(*a->ref, a->ref_args[static_cast<size_t>(k)], "the reference");
      if (a->failure) {
        a->failure->reason = "the task's reference failed: " + a->failure->reason;
        a->reference_failed = true;
      }
    }
    return a->failure ? KPJ_CALLBACK_FAILED : KPJ_CALL_OK;
  }

  static int outputs(void* ctx, int32_t role, kpj_tensors* outs) {
    auto* a = static_cast<CoreAdapter*>(ctx);
    const size_t k = static_cast<size_t>(a->last_set);
    describe_all(role == KPJ_CANDIDATE ? a->m->sets[k].out_desc : a->ref_views[k].out_desc, outs);
    return KPJ_CALL_OK;
  }
};

std::unique_ptr<CoreAdapter> NativeEvaluator::Impl::core_adapter(const CandidateLibrary& ref,
                                                                const CandidateLibrary& cand) {
  auto a = std::make_unique<CoreAdapter>();
  a->m = this;
  a->cand = &cand;
  a->ref = &ref;
  for (size_t k = 0; k < sets.size(); ++k) {
    a->cand_args.push_back(make_args(sets[k], cand_workspace));
    TensorSet view;
    view.in_desc = sets[k].in_desc;
    for (size_t i = 0; i < task->outputs.size(); ++i)
      view.out_desc.push_back(describe(task->outputs[i], ref_outputs[k][i].get()));
    a->ref_views.push_back(std::move(view));
  }
  for (auto& v : a->ref_views) a->ref_args.push_back(make_args(v, ref_workspace));
  return a;
}

MaybeStop NativeEvaluator::Impl::open_core() {
  kpj_config c{};
  c.stream = reinterpret_cast<uint64_t>(stream);
  c.sets = static_cast<int32_t>(sets.size());
  // Two draws differ (so a repeat means a refresh that did not refresh) when some input has at
  // least 40 bits of entropy: a continuous distribution that is not a point, or integers whose
  // range and count make that many.
  c.inputs_vary = 0;
  for (const auto& s : task->inputs) {
    const auto& d = s.init;
    double bits = 0;
    switch (d.kind) {
      case task::DistKind::kNormal: bits = d.b > 0 ? 64.0 * static_cast<double>(s.numel()) : 0; break;
      case task::DistKind::kUniform: bits = d.b > d.a ? 64.0 * static_cast<double>(s.numel()) : 0; break;
      case task::DistKind::kRandint:
        bits = d.b - d.a > 1 ? std::log2(d.b - d.a) * static_cast<double>(s.numel()) : 0;
        break;
      case task::DistKind::kBernoulli:
        bits = d.a > 0 && d.a < 1 ? static_cast<double>(s.numel()) * 0.5 : 0;  // a lower bound
        break;
    }
    if (bits >= 40) c.inputs_vary = 1;
  }
  c.warmup_calls = options->warmup_calls;
  c.min_trials = options->min_trials;
  c.max_trials = options->max_trials;
  c.median_ci = options->median_ci;
  c.timing_budget_s = options->timing_budget_s;
  c.timing_cap_s = options->timing_cap_s;
  c.wall_ratio = options->wall_ratio;
  c.wall_slack_us = options->wall_slack_us;
  c.physics_margin = options->physics_margin;
  c.dram_bytes_per_s = 0;  // the task's own floor (bytes and FLOPs) is applied by check_physics_floor
  c.l2_bytes = static_cast<uint64_t>(std::max<int64_t>(device.l2_bytes, 0));
  c.reference_only = options->reference_only ? 1 : 0;
  for (int d = 0; d <= static_cast<int>(task::DType::kFp64); ++d) {
    const task::Tolerance t = task->tolerance ? *task->tolerance : task::default_tolerance(static_cast<task::DType>(d));
    c.tolerance[d][0] = t.atol;
    c.tolerance[d][1] = t.rtol;
    c.tolerance[d][2] = t.rel_norm;
  }
  core = std::make_unique<judge::Session>(c);
  if (!core->error().empty()) return Stop{Outcome::kRuntimeError, "kernelpro " + core->error()};
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::core_stop(int rc, CoreAdapter& a, eval::WorkerReport* report) {
  if (rc == KPJ_CALLBACK_FAILED && a.failure) {
    if (a.reference_failed) report->reference_failed = true;
    return a.failure;
  }
  if (rc == 0) return std::nullopt;
  auto r = nlohmann::json::parse(core->result_json());
  if (!r["tainted"].get<std::string>().empty())
    return Stop{Outcome::kRejected, "the harness was tampered with: " + r["tainted"].get<std::string>(),
                "harness_tamper"};
  const auto& st = r["stop"];
  if (st.is_null()) return Stop{Outcome::kRuntimeError, "the judge core stopped without a reason"};
  auto outcome = eval::outcome_from_string(st["outcome"].get<std::string>());
  if (outcome == Outcome::kCrash) poisoned = true;
  if (st["cheat"] == "side_stream" || st["cheat"] == "persisting_l2") retire = true;
  return Stop{outcome.value_or(Outcome::kRuntimeError), st["reason"].get<std::string>(), st["cheat"].get<std::string>()};
}

MaybeStop NativeEvaluator::Impl::time_with_core(const CandidateLibrary& ref, const CandidateLibrary& cand, Role role,
                                                eval::TimingReport* timing, eval::WorkerReport* report) {
  auto a = core_adapter(ref, cand);
  const int rc = core->time(role == Role::kCandidate ? KPJ_CANDIDATE : KPJ_REFERENCE,
                            {&CoreAdapter::refresh, &CoreAdapter::call, &CoreAdapter::outputs, a.get()});
  KP_STOP_IF(core_stop(rc, *a, report));
  auto r = nlohmann::json::parse(core->result_json());
  *timing = eval::timing_report_from_json(r[role == Role::kCandidate ? "candidate" : "reference"]);
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::energy_with_core(const CandidateLibrary& ref, const CandidateLibrary& cand,
                                                  double t_call, eval::WorkerReport* report) {
  auto a = core_adapter(ref, cand);
  kpj_energy_config e{};
  e.window_s = options->energy_window_s;
  e.idle_window_s = options->idle_window_s;
  e.idle_watts = idle_watts ? *idle_watts : -1;
  e.call_s = t_call;
  const int rc = core->energy(e, {&CoreAdapter::refresh, &CoreAdapter::call, &CoreAdapter::outputs, a.get()});
  KP_STOP_IF(core_stop(rc, *a, report));
  auto r = nlohmann::json::parse(core->result_json());
  if (r.contains("energy")) {
    report->energy = eval::energy_report_from_json(r["energy"]);
    if (report->energy->measured) idle_watts = report->energy->idle_watts;
  }
  return std::nullopt;
}

}  // namespace kp::worker
