#include "worker/native_evaluator.h"

#include "worker/evaluation.h"

#include "sys/subprocess.h"

namespace kp::worker {

void mark_phase(const char* name) {
  static const char* path = std::getenv(eval::kPhaseFileEnv);
  if (!path || !*path) return;
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const ssize_t written = write(fd, name, std::strlen(name));
  (void)written;  // a phase left unnamed only makes a timeout's reason shorter
  close(fd);
}

MaybeStop NativeEvaluator::Impl::run(const CandidateLibrary& ref, const CandidateLibrary& cand,
                                     eval::WorkerReport* report) {
  auto phase = Clock::now();
  // Ends phase `name` and names the next one in the phase file (a timeout then names it).
  auto end_phase = [&](const char* name, const char* next) {
    report->phase_seconds[name] = seconds_since(phase);
    phase = Clock::now();
    if (next) mark_phase(next);
  };
  mark_phase("setup");
  check_physics_floor(nullptr, report);  // the floor as event timing would give it, until timing says otherwise
  KP_STOP_IF(setup(ref, &cand));
  ref_lib = &ref;
  cand_lib = &cand;
  KP_STOP_IF(open_core());
  end_phase("setup", "correctness");
  KP_STOP_IF(correctness(ref, cand, report));
  for (size_t k = 1; k < sets.size(); ++k) {
    KP_STOP_IF(fill_inputs(sets[k], 1000 + k));
    KP_STOP_IF(run_reference(ref, k, report));
  }
  end_phase("correctness", "timing");

  KP_STOP_IF(replay_check(cand, report));
  eval::TimingReport cand_timing;
  KP_STOP_IF(time_library(cand, cand_workspace, Role::kCandidate, &cand_timing, report));
  // A result kept by pointer across graph replays is sought here too (every set redrawn in place
  // and called once); event timing gave every call fresh inputs already (the judge core).
  if (cand_timing.method == "graph") KP_STOP_IF(check_result_cache(ref, cand, report));
  KP_STOP_IF(check_physics_floor(&cand_timing, report));
  report->timing = cand_timing;
  end_phase("timing", options->time_reference ? "reference_timing" : "energy");
  KP_STOP_IF(check_no_new_processes("the timed calls"));
  // Timed in this process only with no thread more than before the candidate loaded: one its
  // first call started (where the CUDA runtime's own may start) could slow the reference alone.
  const int threads_now = count_threads();
  const bool beside_threads = threads_before_load >= 0 && threads_now > threads_before_load;
  if (options->time_reference && beside_threads)
    report->reference_note = fmt::format(
        "the reference was not timed in this worker: {} thread{} more than before the candidate loaded ({} -> {}) "
        "could run beside it, so no speedup is given rather than one measured beside them",
        threads_now - threads_before_load, threads_now - threads_before_load == 1 ? "" : "s", threads_before_load,
        threads_now);
  if (options->time_reference && !beside_threads) {
    eval::TimingReport ref_timing;
    KP_STOP_IF(time_library(ref, ref_workspace, Role::kReference, &ref_timing, report));
    report->reference_seconds = eval::summarize(ref_timing.samples_s).median;
    report->reference_timing = std::move(ref_timing);
    end_phase("reference_timing", "energy");
  }

  MaybeStop stop = energy_with_core(ref, cand, eval::summarize(cand_timing.samples_s).median, report);
  end_phase("energy", nullptr);
  return stop;
}

MaybeStop NativeEvaluator::Impl::run_reference_only(const CandidateLibrary& ref, eval::WorkerReport* report) {
  auto phase = Clock::now();
  mark_phase("setup");
  KP_STOP_IF(setup(ref, nullptr));
  ref_lib = cand_lib = &ref;
  KP_STOP_IF(open_core());
  for (size_t k = 0; k < sets.size(); ++k) {
    KP_STOP_IF(fill_inputs(sets[k], k == 0 ? 0 : 1000 + k));
    KP_STOP_IF(run_reference(ref, k, report));
  }
  report->phase_seconds["setup"] = seconds_since(phase);
  phase = Clock::now();
  mark_phase("reference_timing");
  eval::TimingReport ref_timing;
  KP_STOP_IF(time_library(ref, ref_workspace, Role::kReference, &ref_timing, report));
  report->reference_seconds = eval::summarize(ref_timing.samples_s).median;
  report->reference_timing = std::move(ref_timing);
  report->phase_seconds["reference_timing"] = seconds_since(phase);
  return std::nullopt;
}

MaybeStop NativeEvaluator::Impl::profile_run(const CandidateLibrary& ref, const CandidateLibrary& cand,
                                             const eval::ProfileRequest& request, eval::ProfileReply* reply) {
  auto phase = Clock::now();
  auto end_phase = [&](const char* name) {
    reply->phase_seconds[name] = seconds_since(phase);
    phase = Clock::now();
  };
  for (const auto& s : task->scalars) scalars.push_back({s.name.c_str(), s.is_integer ? 1 : 0, s.f, s.i});
  sets.resize(1);
  KP_STOP_IF(allocate_set(sets[0]));
  ref_outputs.resize(1);
  for (const auto& s : task->outputs) {
    ref_outputs[0].emplace_back();
    KP_STOP_IF(harness(ref_outputs[0].back().allocate(s.bytes()), "allocating reference outputs"));
  }
  {
    kp_args probe = make_args(sets[0], ref_workspace);
    size_t rb = ref.workspace_bytes(probe), cb = cand.workspace_bytes(probe);
    if (rb) KP_STOP_IF(harness(ref_workspace.allocate(rb), "allocating the reference workspace"));
    if (cb)
      KP_STOP_IF(cuda_failure(cand_workspace.allocate(cb),
                              fmt::format("allocating the candidate's workspace of {} bytes", cb)));
  }
  end_phase("setup");
  KP_STOP_IF(fill_inputs(sets[0], 0));
  kp_args args = make_args(sets[0], cand_workspace);
  if (request.check) {
    eval::WorkerReport check;  // the correctness trial's details; only its stop matters here
    KP_STOP_IF(run_reference(ref, 0, &check));
    KP_STOP_IF(poison_outputs(sets[0]));
    KP_STOP_IF(call_and_sync(cand, args, "the candidate"));
    KP_STOP_IF(compare_outputs(sets[0], 0, &check, "in the profiled run"));
    end_phase("correctness");
  }
  for (int i = 0; i < request.warmup_calls; ++i) KP_STOP_IF(call(cand, args, "the candidate"));
  KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), "the candidate execution"));
  end_phase("warmup");

  switch (request.mode) {
    case eval::ProfileMode::kCupti: {
      // User replay runs the candidate once per counter pass: each pass starts from these
      // copies of the inputs (a candidate may write its inputs) and a flushed L2. Where the
      // copies do not fit, CUPTI replays each kernel instead.
      std::vector<DeviceBuffer> pristine(task->inputs.size());
      std::string replay = request.replay;
      for (size_t i = 0; i < pristine.size() && replay != "kernel"; ++i) {
        if (pristine[i].allocate(sets[0].inputs[i].bytes()) != cudaSuccess ||
            cudaMemcpyAsync(pristine[i].get(), sets[0].inputs[i].get(), sets[0].inputs[i].bytes(),
                            cudaMemcpyDeviceToDevice, stream) != cudaSuccess) {
          cudaGetLastError();
          replay = "kernel";
        }
      }
      if (replay == "kernel") pristine.clear();
      KP_STOP_IF(flush_l2());
      MaybeStop inner;
      auto prepare = [&]() -> std::string {
        for (size_t i = 0; i < pristine.size(); ++i) {
          inner = harness(cudaMemcpyAsync(sets[0].inputs[i].get(), pristine[i].get(), pristine[i].bytes(),
                                          cudaMemcpyDeviceToDevice, stream),
                          "restoring the inputs between counter passes");
          if (inner) return inner->reason;
        }
        inner = flush_l2();
        return inner ? inner->reason : std::string();
      };
      auto work = [&]() -> std::string {
        inner = call_and_sync(cand, args, "the candidate");
        return inner ? inner->reason : std::string();
      };
      auto result = collect_range_profile(request.rangeprof_library, request.metrics, replay, prepare, work,
                                          &reply->collect_seconds);
      if (inner) return inner;
      if (!result.ok()) return Stop{Outcome::kRuntimeError, "the CUPTI range profiler: " + result.error().message};
      reply->range_profile = std::move(*result);
      reply->calls = 1;
      break;
    }
    case eval::ProfileMode::kNvtx: {
      auto t0 = Clock::now();
      for (int i = 0; i < std::max(1, request.calls); ++i) {
        KP_STOP_IF(flush_l2());
        nvtxRangePushA("kp_candidate");
        MaybeStop s = call_and_sync(cand, args, "the candidate");
        nvtxRangePop();
        KP_STOP_IF(std::move(s));
        reply->calls = i + 1;
      }
      reply->collect_seconds = seconds_since(t0);
      break;
    }
    case eval::ProfileMode::kTrace: {
      auto marks = find_trace_marks();
      if (!marks.ok()) return Stop{Outcome::kRuntimeError, marks.error().message};
      auto t0 = Clock::now();
      for (int i = 0; i < std::max(1, request.calls); ++i) {
        KP_STOP_IF(flush_l2());
        marks->begin(i);
        MaybeStop s = call_and_sync(cand, args, "the candidate");
        marks->end(i);
        KP_STOP_IF(std::move(s));
        reply->calls = i + 1;
      }
      reply->collect_seconds = seconds_since(t0);
      break;
    }
  }
  end_phase("collect");
  return std::nullopt;
}

NativeEvaluator::NativeEvaluator(eval::DeviceInfo device) : impl_(std::make_unique<Impl>()) {
  impl_->device = std::move(device);
}

NativeEvaluator::~NativeEvaluator() = default;

eval::WorkerReport NativeEvaluator::evaluate(const task::Task& task, const std::string& ref_path,
                                             const std::string& cand_path, const eval::EvalOptions& options,
                                             uint64_t seed, bool* context_poisoned) {
  eval::WorkerReport report;
  report.seed = seed;
  for (const auto& o : task.outputs) report.output_names.push_back(o.name);
  Impl& m = *impl_;
  m.begin_evaluation(task, options, seed);
  if (m.outside_baseline < 0) m.outside_baseline = m.device_bytes_outside_harness();  // the first evaluation's
  auto finish = [&](Outcome o, std::string reason, std::string cheat = {}) {
    report.outcome = o;
    report.reason = std::move(reason);
    report.cheat = std::move(cheat);
    m.end_evaluation();
    m.retire_if_memory_left();
    *context_poisoned = m.poisoned || m.retire;
    return report;
  };

  auto load_start = Clock::now();
  auto ref = CandidateLibrary::open(ref_path);
  if (!ref.ok()) return finish(Outcome::kLoadError, "the task's reference: " + ref.error().message);
  if (options.reference_only) {
    report.phase_seconds["load"] = seconds_since(load_start);
    if (MaybeStop s = m.ensure_resources()) return finish(s->outcome, s->reason);
    m.clear_persisting_l2();
    if (MaybeStop s = m.run_reference_only(**ref, &report)) return finish(s->outcome, s->reason, s->cheat);
    return finish(Outcome::kOk, "");
  }
  // A thread the library starts as it loads (a constructor) can idle through the candidate's
  // calls and run only while the reference is timed beside them: a kernel library starts none.
  m.threads_before_load = count_threads();
  {
    const auto before = sys::live_descendants();
    m.processes_before_load.clear();
    for (const auto& [pid, name] : before) m.processes_before_load.insert(pid);
  }
  auto cand = CandidateLibrary::open(cand_path);
  if (!cand.ok()) return finish(Outcome::kLoadError, cand.error().message);
  report.phase_seconds["load"] = seconds_since(load_start);
  if (const int after = count_threads(); m.threads_before_load >= 0 && after > m.threads_before_load) {
    m.retire = true;  // those threads live on in this process
    return finish(Outcome::kRejected,
                  fmt::format("loading the library started {} thread{} ({} -> {}): a kernel library starts nothing "
                              "when it is loaded; work must run inside kp_run, on args->stream",
                              after - m.threads_before_load, after - m.threads_before_load == 1 ? "" : "s",
                              m.threads_before_load, after),
                  "background_thread");
  }
  if (MaybeStop s = m.check_no_new_processes("loading the library")) return finish(s->outcome, s->reason, s->cheat);

  if (MaybeStop s = m.ensure_resources()) return finish(s->outcome, s->reason);
  // Every evaluation starts with no persisting L2, so that what a candidate sets is its own.
  m.clear_persisting_l2();
  if (MaybeStop s = m.run(**ref, **cand, &report)) return finish(s->outcome, s->reason, s->cheat);
  if (MaybeStop s = m.check_no_new_processes("its energy calls")) return finish(s->outcome, s->reason, s->cheat);
  return finish(Outcome::kOk, "");
}

MaybeStop NativeEvaluator::Impl::check_no_new_processes(const char* during) {
  std::map<int, std::string> left;
  for (const auto& [pid, name] : sys::live_descendants())
    if (!processes_before_load.count(pid)) left.emplace(pid, name);
  if (left.empty()) return std::nullopt;
  retire = true;  // what it started may have touched this process too
  sys::kill_descendants(0, processes_before_load);
  return Stop{Outcome::kRejected,
              fmt::format("the candidate left {} process{} running after {}: {}; a kernel library starts no "
                          "process, and work outside kp_run escapes the timing and can slow the reference or "
                          "other candidates",
                          left.size(), left.size() == 1 ? "" : "es", during, sys::describe_processes(left)),
              "background_process"};
}

eval::ProfileReply NativeEvaluator::profile(const task::Task& task, const std::string& ref_path,
                                            const std::string& cand_path, const eval::EvalOptions& options,
                                            const eval::ProfileRequest& request, uint64_t seed,
                                            bool* context_poisoned) {
  eval::ProfileReply reply;
  reply.seed = seed;
  reply.mode = request.mode;
  Impl& m = *impl_;
  m.begin_evaluation(task, options, seed);
  auto finish = [&](Outcome o, std::string reason) {
    reply.outcome = o;
    reply.reason = std::move(reason);
    *context_poisoned = m.poisoned || m.retire;
    m.end_evaluation();
    return reply;
  };
  auto load_start = Clock::now();
  auto ref = CandidateLibrary::open(ref_path);
  if (!ref.ok()) return finish(Outcome::kLoadError, "the task's reference: " + ref.error().message);
  auto cand = CandidateLibrary::open(cand_path);
  if (!cand.ok()) return finish(Outcome::kLoadError, cand.error().message);
  reply.phase_seconds["load"] = seconds_since(load_start);
  if (MaybeStop s = m.ensure_resources()) return finish(s->outcome, s->reason);
  m.clear_persisting_l2();
  if (MaybeStop s = m.profile_run(**ref, **cand, request, &reply)) return finish(s->outcome, s->reason);
  return finish(Outcome::kOk, "");
}

}  // namespace kp::worker
