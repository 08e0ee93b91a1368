// Timing: event pairs around single calls with the L2 flushed before each, or graph replay for short
// calls, sampled by verdict/timing_rule.h.
#include "worker/evaluation.h"

namespace kp::worker {

namespace {
// Replays timed on outputs that already hold the right values, to catch an output probe.
constexpr int kRightOutputReplays = 5;
}  // namespace

MaybeStop NativeEvaluator::Impl::timed_call(const CandidateLibrary& lib, kp_args& args, TensorSet* poison,
                                            const char* who, double* event_s, double* wall_s) {
  if (poison) KP_STOP_IF(poison_outputs(*poison));
  KP_STOP_IF(harness(evict_l2(flush.get(), flush.bytes(), stream), "flushing L2"));
  cudaStreamAttrValue attr{};
  attr.accessPolicyWindow.num_bytes = 0;
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
  cudaCtxResetPersistingL2Cache();
  cudaGetLastError();  // the two calls above may be unsupported; neither matters then
  KP_STOP_IF(harness(cudaStreamSynchronize(stream), "flushing L2"));
  auto t0 = Clock::now();
  KP_STOP_IF(harness(cudaEventRecord(start, stream), "recording an event"));
  KP_STOP_IF(call(lib, args, who));
  KP_STOP_IF(harness(cudaEventRecord(stop, stream), "recording an event"));
  KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), fmt::format("{} execution", who)));
  *wall_s = seconds_since(t0);
  float ms = 0;
  KP_STOP_IF(harness(cudaEventElapsedTime(&ms, start, stop), "reading events"));
  *event_s = ms * 1e-3;
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::time_library(const CandidateLibrary& lib, DeviceBuffer& workspace, Role role,
                                              eval::TimingReport* timing, eval::WorkerReport* report) {
  const bool candidate = role == Role::kCandidate;
  const char* who = candidate ? "the candidate" : "the reference";
  timing->input_sets = static_cast<int>(sets.size());
  timing->l2_flush_bytes = static_cast<int64_t>(flush.bytes());
  std::vector<kp_args> args;
  for (auto& s : sets) args.push_back(make_args(s, workspace));
  std::bernoulli_distribution checked(eval::kTimedCheckShare);
  int call_index = 0;  // the warm-ups that estimate the call's time: any of them may be checked
  auto timed = [&](size_t k, double* e, double* w) -> MaybeStop {
    KP_STOP_IF(timed_call(lib, args[k], candidate ? &sets[k] : nullptr, who, e, w));
    ++call_index;
    if (!candidate) return std::nullopt;
    KP_STOP_IF(check_persisting_l2());
    if (!checked(timed_checks)) return std::nullopt;
    MaybeStop s = compare_outputs(sets[k], k, report, fmt::format("of timed call {}", call_index));
    if (s && s->outcome == Outcome::kIncorrect)
      return Stop{Outcome::kRejected,
                  fmt::format("timed call {} (input set {}), one of the calls checked at random, did not compute its "
                              "output ({}): work deferred to or batched with other calls",
                              call_index, k, s->reason),
                  "batched_calls"};
    return s;
  };
  std::vector<double> estimate;
  for (int i = 0; i < std::max(options->warmup_calls, 1); ++i) {
    double e = 0, w = 0;
    KP_STOP_IF(timed(static_cast<size_t>(i) % args.size(), &e, &w));
    estimate.push_back(e);
  }
  timing->warmup_calls = std::max(options->warmup_calls, 1);
  double t_est = std::max(eval::summarize(estimate).median, 1e-7);
  // Graph replay only where every call of the graph gets buffers of its own: shared sets would
  // let a call copy another's result (issue 41's second red team filled the device's memory to
  // force that). Short calls have small tensors; when even those do not fit, events it is.
  if (eval::use_graph_replay(t_est, *options) && ensure_graph_outputs(std::max(options->graph_calls, 1))) {
    MaybeStop g = time_with_graph(lib, workspace, role, timing, report);
    if (g && g->outcome == Outcome::kOk && candidate) {
      // An honest candidate (launches on args->stream only, no sync or allocation in kp_run)
      // is always capturable; one that is not would escape the event timing of short calls.
      return Stop{Outcome::kRejected,
                  fmt::format("the calls could not be captured into a CUDA graph ({}): launch only on "
                              "args->stream, and do not synchronize, allocate or use another stream in kp_run (a "
                              "side stream or a background thread)",
                              g->reason),
                  "side_stream"};
    }
    if (!g || g->outcome != Outcome::kOk) return g;  // success, or a real failure
    // else: the calls could not be captured; fall back to events below.
  }
  // Event timing is the judge core's: fresh inputs for every call, and each of the candidate's
  // calls checked against the reference run after it, the tail past the end event, the samples.
  return time_with_core(*ref_lib, *cand_lib, role, timing, report);
}

bool NativeEvaluator::Impl::ensure_graph_outputs(int calls) {
  if (graph_views.size() == static_cast<size_t>(calls)) return true;
  graph_views.clear();
  graph_refs.clear();
  uint64_t call_bytes = 0;  // each call's inputs, outputs and the reference's outputs
  for (const auto& s : task->inputs) call_bytes += s.bytes();
  for (const auto& s : task->outputs) call_bytes += 2 * s.bytes();
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess ||
      !eval::graph_outputs_fit(call_bytes, calls, free_bytes)) {
    cudaGetLastError();
    return false;
  }
  auto fail = [&]() {
    cudaGetLastError();
    graph_views.clear();
    graph_refs.clear();
    return false;
  };
  graph_views.resize(static_cast<size_t>(calls));
  graph_refs.resize(static_cast<size_t>(calls));
  for (size_t i = 0; i < graph_views.size(); ++i) {
    if (allocate_set(graph_views[i])) return fail();
    for (const auto& s : task->outputs) {
      graph_refs[i].emplace_back();
      if (graph_refs[i].back().allocate(s.bytes()) != cudaSuccess) return fail();
    }
  }
  return true;
}

MaybeStop NativeEvaluator::Impl::refresh_graph_inputs(bool sync) {
  std::uniform_int_distribution<uint64_t> any;
  const uint64_t draw = any(timed_checks);  // from the OS-seeded generator, not the reported seed
  auto fill = [&](TensorSet& set, uint64_t d) -> MaybeStop {
    for (size_t i = 0; i < task->inputs.size(); ++i) {
      const auto& s = task->inputs[i];
      KP_STOP_IF(harness(fill_random(set.inputs[i].get(), s.dtype, s.numel(), s.init, d, i, stream),
                         "generating input " + s.name));
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < graph_views.size(); ++i) KP_STOP_IF(fill(graph_views[i], draw + 7919 * (i + 1)));
  return sync ? harness(cudaStreamSynchronize(stream), "generating inputs") : std::nullopt;
}

MaybeStop NativeEvaluator::Impl::capture_graph(const CandidateLibrary& lib, std::vector<kp_args>& args, const char* who,
                                               cudaGraph_t* graph, cudaGraphExec_t* exec) {
  if (cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal); e != cudaSuccess) {
    cudaGetLastError();
    return Stop{Outcome::kOk, fmt::format("capture did not start: {}", cudaGetErrorName(e))};
  }
  MaybeStop failed;
  for (size_t i = 0; i < args.size() && !failed; ++i) failed = call(lib, args[i], who);
  cudaError_t end = cudaStreamEndCapture(stream, graph);
  if (failed || end != cudaSuccess || !*graph) {
    if (*graph) cudaGraphDestroy(*graph);
    cudaGetLastError();
    KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), fmt::format("{} execution", who)));
    return Stop{Outcome::kOk, failed ? failed->reason : std::string(cudaGetErrorName(end))};
  }
  if (cudaError_t e = cudaGraphInstantiate(exec, *graph, 0); e != cudaSuccess) {
    cudaGraphDestroy(*graph);
    cudaGetLastError();
    return Stop{Outcome::kOk, fmt::format("graph not instantiable: {}", cudaGetErrorName(e))};
  }
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::check_graph_replay(const std::string& when, int calls,
                                                    const std::vector<std::vector<uint64_t>>& given,
                                                    eval::WorkerReport* report) {
  // Every call's outputs against the reference run now on that call's own inputs (set k's when
  // the calls share sets); an incorrect one is a rejection that says which call and when.
  for (size_t i = 0; i < graph_views.size(); ++i) {
    std::vector<uint64_t> now;
    KP_STOP_IF(input_checksums(graph_views[i], &now));
    if (now != given[i])
      return Stop{Outcome::kIncorrect,
                  fmt::format("{}: call {} of the replayed graph wrote to its inputs; inputs are read-only", when, i + 1),
                  "input_mutation"};
    TensorSet view;
    view.in_desc = graph_views[i].in_desc;
    for (size_t j = 0; j < task->outputs.size(); ++j)
      view.out_desc.push_back(describe(task->outputs[j], graph_refs[i][j].get()));
    kp_args ra = make_args(view, ref_workspace);
    if (MaybeStop s = call_and_sync(*ref_lib, ra, "the reference")) {
      s->reason = "the task's reference failed: " + s->reason;
      report->reference_failed = true;
      return s;
    }
    MaybeStop s = compare_against(graph_views[i], graph_refs[i], report, fmt::format("of call {}", i + 1));
    if (s && s->outcome == Outcome::kIncorrect)
      return Stop{Outcome::kRejected,
                  fmt::format("{}: the output of call {} of {} in the replayed graph (its own inputs, drawn fresh "
                              "for this replay) was not computed by that call ({}): work deferred to, batched with "
                              "or copied from other calls",
                              when, i + 1, calls, s->reason),
                  "batched_calls"};
    KP_STOP_IF(std::move(s));
  }
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::probe_right_outputs(cudaGraphExec_t exec, int calls, const char* who,
                                                     const eval::TimingReport& timing) {
  // The outputs now hold the right values: replays that find them so must not be faster.
  std::vector<double> on_right;
  for (int i = 0; i < kRightOutputReplays; ++i) {
    KP_STOP_IF(harness(cudaEventRecord(start, stream), "recording an event"));
    KP_STOP_IF(cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who)));
    KP_STOP_IF(harness(cudaEventRecord(stop, stream), "recording an event"));
    KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who)));
    float ms = 0;
    KP_STOP_IF(harness(cudaEventElapsedTime(&ms, start, stop), "reading events"));
    on_right.push_back(ms * 1e-3 / calls);
  }
  if (on_right.empty()) return std::nullopt;
  const double right = eval::summarize(on_right).median, timed = eval::summarize(timing.samples_s).median;
  if (eval::faster_on_right_outputs(right, timed))
    return Stop{Outcome::kRejected,
                fmt::format("the calls ran {:.1f} us each when their outputs already held the right values and "
                            "{:.1f} us from poisoned outputs: the candidate reads its output to skip work "
                            "(an output probe), which every timed call, started from poisoned outputs, defeats",
                            right * 1e6, timed * 1e6),
                "result_cache"};
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::time_with_graph(const CandidateLibrary& lib, DeviceBuffer& workspace, Role role,
                                                 eval::TimingReport* timing, eval::WorkerReport* report) {
  const bool candidate = role == Role::kCandidate;
  const char* who = candidate ? "the candidate" : "the reference";
  const int calls = std::max(options->graph_calls, 1);
  // Each call of the graph has its own inputs and outputs where they fit (short calls: small
  // tensors), and every replay starts from inputs drawn fresh for it: no call of a replay sees
  // inputs another call (of this replay or an earlier one) had, so copying a result gains
  // nothing and is caught by the checks below.
  // time_library comes here only once they fit (ensure_graph_outputs).
  if (!ensure_graph_outputs(calls))
    return harness(cudaErrorMemoryAllocation, "allocating each graph call's own buffers");
  std::vector<kp_args> args;
  for (int i = 0; i < calls; ++i) args.push_back(make_args(graph_views[static_cast<size_t>(i)], workspace));
  KP_STOP_IF(refresh_graph_inputs(true));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  KP_STOP_IF(capture_graph(lib, args, who, &graph, &exec));
  timing->method = "graph";
  MaybeStop result;
  if (candidate) result = check_persisting_l2();
  if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who));
  if (!result) result = cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who));
  // Every replay's inputs drawn fresh and its outputs poisoned before it (queued ahead of the
  // start event: not timed).
  // The inputs' checksums after the refresh of a replay that will be checked: the reference then
  // runs on what the calls were given, or the calls wrote to their inputs (input_mutation).
  std::vector<std::vector<uint64_t>> given(graph_views.size());
  auto poison_all = [&](bool will_check) -> MaybeStop {
    KP_STOP_IF(refresh_graph_inputs(will_check));
    for (size_t i = 0; will_check && i < graph_views.size(); ++i)
      KP_STOP_IF(input_checksums(graph_views[i], &given[i]));
    for (auto& v : graph_views) KP_STOP_IF(poison_outputs(v, false));
    return std::nullopt;
  };
  std::bernoulli_distribution checked(eval::kTimedCheckShare);
  // One sample per replay, until the sampling rule stops (verdict/timing_rule.h).
  const auto loop_start = Clock::now();
  eval::SamplingStop decision = eval::SamplingStop::kContinue;
  while (!result && decision == eval::SamplingStop::kContinue) {
    const bool check_this = candidate && checked(timed_checks);
    result = poison_all(check_this);
    if (!result) result = harness(cudaEventRecord(start, stream), "recording an event");
    if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who));
    if (!result) result = harness(cudaEventRecord(stop, stream), "recording an event");
    if (!result) result = cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who));
    float ms = 0;
    if (!result) result = harness(cudaEventElapsedTime(&ms, start, stop), "reading events");
    if (!result) timing->samples_s.push_back(ms * 1e-3 / calls);
    if (!result && check_this)
      result = check_graph_replay(
          fmt::format("timed replay {}, one of the replays checked at random", timing->samples_s.size()), calls, given,
          report);
    decision = eval::sampling_decision(timing->samples_s, seconds_since(loop_start), *options);
  }
  timing->stop = eval::to_string(decision);
  timing->median_ci_rel = eval::median_interval95(timing->samples_s).relative_half_width();
  timing->loop_wall_s = seconds_since(loop_start);
  if (candidate && !result) result = poison_all(true);
  if (candidate && !result) {
    result = cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who));
    if (!result) result = cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who));
    if (!result) result = check_graph_replay("after the timed replays", calls, given, report);
  }
  if (candidate && !result) result = probe_right_outputs(exec, calls, who, *timing);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return result;
}

}  // namespace kp::worker
