// Anti-cheat checks beside correctness and timing: persisting L2, the replay check (escaped work),
// result caches, the physics floor.
#include "worker/evaluation.h"

namespace kp::worker {

void NativeEvaluator::Impl::clear_persisting_l2() {
  cudaStreamAttrValue attr{};
  attr.accessPolicyWindow.num_bytes = 0;
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
  cudaCtxResetPersistingL2Cache();
  cudaGetLastError();
}

MaybeStop NativeEvaluator::Impl::check_persisting_l2() {
  size_t limit = 0;
  cudaStreamAttrValue attr{};
  const bool has_limit = cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) == cudaSuccess && limit > 0;
  const bool has_window = cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr) == cudaSuccess &&
                          attr.accessPolicyWindow.num_bytes > 0;
  cudaGetLastError();
  if (!has_limit && !has_window) return std::nullopt;
  std::vector<std::string> what;
  if (has_limit) what.push_back(fmt::format("a persisting-L2 limit of {}", format_bytes(static_cast<double>(limit))));
  if (has_window)
    what.push_back(fmt::format("an access-policy window of {} on args->stream",
                               format_bytes(static_cast<double>(attr.accessPolicyWindow.num_bytes))));
  clear_persisting_l2();
  return Stop{Outcome::kRejected,
              fmt::format("the candidate set aside persisting L2 ({}), which survives the L2 flush between timed "
                          "calls; do not change L2 limits or stream attributes in kp_run",
                          join(what, " and ")),
              "persisting_l2"};
}

MaybeStop NativeEvaluator::Impl::replay_check(const CandidateLibrary& cand, eval::WorkerReport* report) {
  kp_args args = make_args(sets[0], cand_workspace);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  KP_STOP_IF(harness(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "starting a graph capture"));
  MaybeStop failed = call(cand, args, "the candidate");
  cudaError_t end = cudaStreamEndCapture(stream, &graph);
  cudaError_t inst =
      (!failed && end == cudaSuccess && graph) ? cudaGraphInstantiate(&exec, graph, 0) : cudaErrorUnknown;
  if (failed || end != cudaSuccess || inst != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), "the candidate execution"));
    return Stop{Outcome::kRejected,
                fmt::format("the call could not be captured into a CUDA graph ({}): launch only on args->stream, "
                            "and do not synchronize, allocate or use another stream or thread in kp_run (a side "
                            "stream or a background thread)",
                            failed ? failed->reason : std::string(cudaGetErrorName(end != cudaSuccess ? end : inst))),
                "side_stream"};
  }
  // Work that escaped the capture ran eagerly during it: let it finish before poisoning.
  MaybeStop result = cuda_failure(cudaDeviceSynchronize(), "the candidate execution");
  if (!result) result = poison_outputs(sets[0]);
  if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), "the candidate's graph replay");
  if (!result) result = cuda_failure(cudaDeviceSynchronize(), "the candidate's graph replay");
  if (!result) {
    result = compare_outputs(sets[0], 0, report, "when the call is replayed from a CUDA graph");
    if (result && result->outcome == Outcome::kIncorrect)
      result = Stop{Outcome::kRejected,
                    "work escaped the stream (a side stream or a background thread): " + result->reason +
                        " (work outside args->stream is not part of the call)",
                    "side_stream"};
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return result;
}

MaybeStop NativeEvaluator::Impl::check_result_cache(const CandidateLibrary& ref, const CandidateLibrary& cand,
                                                    eval::WorkerReport* report) {
  for (size_t k = 0; k < sets.size(); ++k) {
    KP_STOP_IF(fill_inputs(sets[k], 2000 + k));
    KP_STOP_IF(run_reference(ref, k, report));
    KP_STOP_IF(poison_outputs(sets[k]));
    kp_args a = make_args(sets[k], cand_workspace);
    KP_STOP_IF(call_and_sync(cand, a, "the candidate"));
    MaybeStop s = compare_outputs(sets[k], k, report, fmt::format("on input set {}", k));
    if (s && s->outcome == Outcome::kIncorrect)
      return Stop{Outcome::kRejected,
                  fmt::format("after the inputs changed in place the output was stale: results are cached by "
                              "pointer ({})",
                              s->reason),
                  "result_cache"};
    KP_STOP_IF(s);
  }
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::check_physics_floor(const eval::TimingReport* timing, eval::WorkerReport* report) {
  const eval::TimingMethod method =
      timing && timing->method == "graph" ? eval::TimingMethod::kGraphReplay : eval::TimingMethod::kEvents;
  eval::PhysicsFloor f = eval::physics_floor(*task, device, method, options->physics_margin);
  report->physics_floor_s = f.seconds;
  report->physics_floor_basis = f.basis;
  if (!timing || timing->samples_s.empty() || f.seconds <= 0) return std::nullopt;
  const double median = eval::summarize(timing->samples_s).median;
  if (median >= f.seconds) return std::nullopt;
  return Stop{
      Outcome::kRejected,
      fmt::format("the median call takes {:.1f} us, below the physics floor of {:.1f} us ({}): no honest "
                  "kernel {} that fast; the timing is not of the real work",
                  median * 1e6, f.seconds * 1e6, f.basis, f.bytes_bound ? "moves these bytes" : "does this arithmetic"),
      "physics_floor"};
}

}  // namespace kp::worker
