// Correctness: the trials on fresh inputs, the checks of every output against the reference's on the
// GPU, and the cheat a failure looks like.
#include "worker/evaluation.h"

namespace kp::worker {

MaybeStop NativeEvaluator::Impl::compare_outputs(const TensorSet& outs, size_t k, eval::WorkerReport* report,
                                                 const std::string& when) {
  return compare_against(outs, ref_outputs[k], report, when);
}

MaybeStop NativeEvaluator::Impl::compare_against(const TensorSet& outs, const std::vector<DeviceBuffer>& wants,
                                                 eval::WorkerReport* report, const std::string& when) {
  report->checks.clear();
  std::optional<Stop> first_failure;
  for (size_t i = 0; i < task->outputs.size(); ++i) {
    const auto& s = task->outputs[i];
    eval::OutputTally t;
    KP_STOP_IF(harness(device_tally(outs.outputs[i].get(), wants[i].get(), s.dtype, s.numel(), task->tolerance_for(i),
                                    compare_scratch, stream, &t),
                       "comparing outputs"));
    eval::OutputCheck c = eval::conclude_check(t, s.dtype, task->tolerance_for(i), s.shape);
    if (!c.passed && !first_failure)
      first_failure = Stop{Outcome::kIncorrect, fmt::format("output '{}' {}: {}", s.name, when, c.reason)};
    report->checks.push_back(std::move(c));
  }
  return first_failure;
}

bool NativeEvaluator::Impl::keep_previous_reference() {
  if (prev_ref.size() != task->outputs.size()) {
    prev_ref.clear();
    for (const auto& s : task->outputs) {
      prev_ref.emplace_back();
      if (prev_ref.back().allocate(s.bytes()) != cudaSuccess) {
        cudaGetLastError();
        prev_ref.clear();
        return false;
      }
    }
  }
  for (size_t i = 0; i < prev_ref.size(); ++i)
    if (cudaMemcpyAsync(prev_ref[i].get(), ref_outputs[0][i].get(), task->outputs[i].bytes(), cudaMemcpyDeviceToDevice,
                        stream) != cudaSuccess) {
      cudaGetLastError();
      prev_ref.clear();
      return false;
    }
  return true;
}

void NativeEvaluator::Impl::tag_correctness_failure(Stop& s, const eval::WorkerReport& report, bool has_previous) {
  for (size_t i = 0; i < report.checks.size() && i < task->outputs.size(); ++i) {
    const eval::OutputCheck& c = report.checks[i];
    if (c.passed) continue;
    const auto& spec = task->outputs[i];
    const eval::FailureKind kind = eval::failure_kind(c, spec.dtype);
    if (c.reference_nonfinite > 0 || kind.cheat == "constant_output") {
      s.cheat = kind.cheat;  // the task's fault, or a constant: nothing more to find
      return;
    }
    if (has_previous && i < prev_ref.size() && c.unwritten == 0) {
      eval::OutputTally t;
      if (device_tally(sets[0].outputs[i].get(), prev_ref[i].get(), spec.dtype, spec.numel(), task->tolerance_for(i),
                       compare_scratch, stream, &t) == cudaSuccess &&
          eval::conclude_check(t, spec.dtype, task->tolerance_for(i), spec.shape).passed) {
        s.cheat = "result_cache";
        s.reason +=
            " (it is the previous trial's result: the output was kept from an earlier call although the "
            "inputs changed in place; results are cached by pointer)";
        return;
      }
      cudaGetLastError();
    }
    s.cheat = kind.cheat;
    if (!kind.hint.empty()) s.reason += " (" + kind.hint + ")";
    return;
  }
}

MaybeStop NativeEvaluator::Impl::correctness(const CandidateLibrary& ref, const CandidateLibrary& cand,
                                             eval::WorkerReport* report) {
  TensorSet& set = sets[0];
  bool has_previous = false;
  for (int trial = 0; trial < options->correctness_trials; ++trial) {
    KP_STOP_IF(fill_inputs(set, static_cast<uint64_t>(trial)));
    KP_STOP_IF(run_reference(ref, 0, report));
    std::vector<uint64_t> before, after;
    KP_STOP_IF(input_checksums(set, &before));
    KP_STOP_IF(poison_outputs(set));
    kp_args ca = make_args(set, cand_workspace);
    // A thread the call starts and leaves running can launch work after kp_run returns, where
    // no event and no sync of ours sees it. The first call may start threads of the CUDA
    // runtime (the candidate's own copy initializes then), so only a later call is held to it.
    const int threads_before = count_threads();
    KP_STOP_IF(call(cand, ca, "the candidate"));
    const int threads_after = count_threads();
    const bool new_threads = threads_before >= 0 && threads_after > threads_before;
    if (new_threads && trial > 0) {
      retire = true;  // those threads may still launch work into this evaluation's buffers
      return Stop{Outcome::kRejected,
                  fmt::format("the call left {} more thread{} running than it found ({} -> {}): work handed to a "
                              "background thread is not part of the call; launch everything on args->stream "
                              "before kp_run returns",
                              threads_after - threads_before, threads_after - threads_before == 1 ? "" : "s",
                              threads_before, threads_after),
                  "background_thread"};
    }
    KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), "the candidate execution"));
    KP_STOP_IF(input_checksums(set, &after));
    for (size_t i = 0; i < before.size(); ++i) {
      if (before[i] != after[i]) {
        report->mutated_input = task->inputs[i].name;
        return Stop{
            Outcome::kIncorrect,
            fmt::format(
                "the candidate wrote to input '{}' (its checksum changed during the call); inputs are read-only",
                task->inputs[i].name),
            "input_mutation"};
      }
    }
    if (MaybeStop s = compare_outputs(set, 0, report, fmt::format("in trial {}", trial + 1))) {
      if (s->outcome == Outcome::kIncorrect && new_threads) {
        retire = true;
        s->cheat = "background_thread";
        s->reason += fmt::format(
            " (the call also left {} new thread{} running: work handed to a background thread is "
            "not part of the call)",
            threads_after - threads_before, threads_after - threads_before == 1 ? "" : "s");
      } else if (s->outcome == Outcome::kIncorrect) {
        tag_correctness_failure(*s, *report, has_previous);
      }
      return s;
    }
    has_previous = trial + 1 < options->correctness_trials && keep_previous_reference();
    report->trials_run = trial + 1;
  }
  return std::nullopt;
}

}  // namespace kp::worker
