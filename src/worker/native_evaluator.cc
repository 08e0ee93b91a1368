#include "worker/native_evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "eval/compare.h"
#include "eval/statistics.h"
#include "worker/candidate_library.h"
#include "worker/device_ops.h"

namespace kp::worker {

using eval::Outcome;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Why an evaluation stopped early. Returned, never thrown.
struct Stop {
  Outcome outcome;
  std::string reason;
};
using MaybeStop = std::optional<Stop>;
#define KP_STOP_IF(expr)             \
  do {                               \
    if (MaybeStop s_ = (expr)) return s_; \
  } while (0)

// Errors after which the context cannot be used again (sticky errors).
bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchTimeout: case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction: case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc: case cudaErrorLaunchFailure: case cudaErrorAssert: case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

const char* status_name(int s) {
  switch (s) {
    case KP_ERR_UNSUPPORTED_SHAPE: return "KP_ERR_UNSUPPORTED_SHAPE";
    case KP_ERR_INVALID_ARGUMENT: return "KP_ERR_INVALID_ARGUMENT";
    case KP_ERR_CUDA: return "KP_ERR_CUDA";
    case KP_ERR_WORKSPACE: return "KP_ERR_WORKSPACE";
    case KP_ERR_OTHER: return "KP_ERR_OTHER";
    default: return "an unknown status";
  }
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  cudaError_t allocate(size_t bytes) {
    bytes_ = bytes;
    return cudaMalloc(&ptr_, std::max<size_t>(bytes, 16));
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// One set of device tensors with their ABI descriptors.
struct TensorSet {
  std::vector<DeviceBuffer> inputs, outputs;
  std::vector<kp_tensor> in_desc, out_desc;
};

kp_tensor describe(const task::TensorSpec& s, void* data) {
  kp_tensor t{};
  t.data = data;
  t.dtype = static_cast<int32_t>(s.dtype);
  t.rank = static_cast<int32_t>(s.shape.size());
  int64_t stride = 1;
  for (int k = t.rank - 1; k >= 0; --k) {
    t.shape[k] = s.shape[k];
    t.strides[k] = stride;
    stride *= s.shape[k];
  }
  return t;
}

}  // namespace

struct NativeEvaluator::Impl {
  eval::DeviceInfo device;
  std::unique_ptr<Nvml> nvml;
  std::optional<double> idle_watts;  // measured once per worker
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  DeviceBuffer flush;
  DeviceBuffer scratch;  // 8 bytes for checksums

  // Per evaluation.
  const task::Task* task = nullptr;
  const eval::EvalOptions* options = nullptr;
  uint64_t seed = 0;
  std::vector<TensorSet> sets;  // sets[0] is the correctness set
  std::vector<DeviceBuffer> ref_outputs;
  std::vector<kp_scalar> scalars;
  DeviceBuffer ref_workspace, cand_workspace;
  bool poisoned = false;

  MaybeStop cuda_failure(cudaError_t e, const std::string& what) {
    if (e == cudaSuccess) return std::nullopt;
    if (is_sticky(e)) {
      poisoned = true;
      return Stop{Outcome::kCrash, fmt::format("{}: {} ({}); the CUDA context is lost", what, cudaGetErrorName(e),
                                               cudaGetErrorString(e))};
    }
    if (e == cudaErrorMemoryAllocation)
      return Stop{Outcome::kRuntimeError, fmt::format("{}: out of device memory", what)};
    return Stop{Outcome::kRuntimeError, fmt::format("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e))};
  }

  // A setup failure of the harness itself (not the candidate's fault) still has to be an
  // outcome; it is reported as a runtime error naming the harness.
  MaybeStop harness(cudaError_t e, const std::string& what) { return cuda_failure(e, "kernelpro " + what); }

  kp_args make_args(TensorSet& set, DeviceBuffer& workspace) {
    kp_args a{};
    a.abi_version = KP_ABI_VERSION;
    a.num_inputs = static_cast<int32_t>(set.in_desc.size());
    a.inputs = set.in_desc.data();
    a.num_outputs = static_cast<int32_t>(set.out_desc.size());
    a.outputs = set.out_desc.data();
    a.num_scalars = static_cast<int32_t>(scalars.size());
    a.scalars = scalars.data();
    a.workspace = workspace.get();
    a.workspace_bytes = workspace.bytes();
    a.stream = stream;
    return a;
  }

  // Calls kp_run and checks the status and the launch error (not the completion).
  MaybeStop call(const CandidateLibrary& lib, kp_args& args, const char* who) {
    args.message[0] = '\0';
    int status = lib.run()(&args);
    args.message[sizeof(args.message) - 1] = '\0';
    if (status != KP_OK)
      return Stop{Outcome::kRuntimeError, fmt::format("{} kp_run returned {} ({}){}{}", who, status, status_name(status),
                                                      args.message[0] ? ": " : "", args.message)};
    return cuda_failure(cudaGetLastError(), fmt::format("{} launch", who));
  }

  // Calls and waits for the whole device, so errors of any stream surface here.
  MaybeStop call_and_sync(const CandidateLibrary& lib, kp_args& args, const char* who) {
    KP_STOP_IF(call(lib, args, who));
    return cuda_failure(cudaDeviceSynchronize(), fmt::format("{} execution", who));
  }

  MaybeStop allocate_set(TensorSet& set) {
    for (const auto& s : task->inputs) {
      set.inputs.emplace_back();
      KP_STOP_IF(harness(set.inputs.back().allocate(s.bytes()), "allocating input " + s.name));
      set.in_desc.push_back(describe(s, set.inputs.back().get()));
    }
    for (const auto& s : task->outputs) {
      set.outputs.emplace_back();
      KP_STOP_IF(harness(set.outputs.back().allocate(s.bytes()), "allocating output " + s.name));
      set.out_desc.push_back(describe(s, set.outputs.back().get()));
    }
    return std::nullopt;
  }

  MaybeStop fill_inputs(TensorSet& set, uint64_t draw) {
    for (size_t i = 0; i < task->inputs.size(); ++i) {
      const auto& s = task->inputs[i];
      KP_STOP_IF(harness(fill_random(set.inputs[i].get(), s.dtype, s.numel(), s.init, seed + draw * 1000003ull, i, stream),
                         "generating input " + s.name));
    }
    return harness(cudaStreamSynchronize(stream), "generating inputs");
  }

  MaybeStop poison_outputs(TensorSet& set) {
    for (size_t i = 0; i < task->outputs.size(); ++i) {
      const auto& s = task->outputs[i];
      KP_STOP_IF(harness(fill_pattern(set.outputs[i].get(), task::dtype_size(s.dtype), s.numel(),
                                      eval::poison_bits(s.dtype), stream),
                         "poisoning output " + s.name));
    }
    return harness(cudaStreamSynchronize(stream), "poisoning outputs");
  }

  MaybeStop input_checksums(TensorSet& set, std::vector<uint64_t>* sums) {
    sums->clear();
    for (size_t i = 0; i < set.inputs.size(); ++i) {
      uint64_t v = 0;
      KP_STOP_IF(cuda_failure(checksum(set.inputs[i].get(), set.inputs[i].bytes(), static_cast<uint64_t*>(scratch.get()),
                                       &v, stream),
                              "checksumming inputs"));
      sums->push_back(v);
    }
    return std::nullopt;
  }

  // Compares the outputs of `set` against ref_outputs. Fills report->checks.
  MaybeStop compare_outputs(TensorSet& set, eval::WorkerReport* report, const char* when) {
    report->checks.clear();
    std::optional<Stop> first_failure;
    for (size_t i = 0; i < task->outputs.size(); ++i) {
      const auto& s = task->outputs[i];
      std::vector<unsigned char> out(s.bytes()), ref(s.bytes());
      KP_STOP_IF(harness(cudaMemcpy(out.data(), set.outputs[i].get(), s.bytes(), cudaMemcpyDeviceToHost), "copying outputs"));
      KP_STOP_IF(harness(cudaMemcpy(ref.data(), ref_outputs[i].get(), s.bytes(), cudaMemcpyDeviceToHost), "copying outputs"));
      eval::OutputCheck c = eval::check_output(out.data(), ref.data(), s.dtype, s.numel(), task->tolerance_for(i), s.shape);
      if (!c.passed && !first_failure)
        first_failure = Stop{Outcome::kIncorrect, fmt::format("output '{}' {}: {}", s.name, when, c.reason)};
      report->checks.push_back(std::move(c));
    }
    return first_failure;
  }

  MaybeStop correctness(const CandidateLibrary& ref, const CandidateLibrary& cand, eval::WorkerReport* report) {
    TensorSet& set = sets[0];
    for (int trial = 0; trial < options->correctness_trials; ++trial) {
      KP_STOP_IF(fill_inputs(set, static_cast<uint64_t>(trial)));
      // The reference writes into its own buffers, viewed through a copy of the descriptors.
      TensorSet ref_view;
      ref_view.in_desc = set.in_desc;
      for (size_t i = 0; i < task->outputs.size(); ++i)
        ref_view.out_desc.push_back(describe(task->outputs[i], ref_outputs[i].get()));
      kp_args ra = make_args(ref_view, ref_workspace);
      if (MaybeStop s = call_and_sync(ref, ra, "the reference")) {
        s->reason = "the task's reference failed: " + s->reason;
        report->reference_failed = true;
        return s;
      }
      std::vector<uint64_t> before, after;
      KP_STOP_IF(input_checksums(set, &before));
      KP_STOP_IF(poison_outputs(set));
      kp_args ca = make_args(set, cand_workspace);
      KP_STOP_IF(call_and_sync(cand, ca, "the candidate"));
      KP_STOP_IF(input_checksums(set, &after));
      for (size_t i = 0; i < before.size(); ++i) {
        if (before[i] != after[i]) {
          report->mutated_input = task->inputs[i].name;
          return Stop{Outcome::kIncorrect,
                      fmt::format("the candidate wrote to input '{}' (its checksum changed during the call); inputs are read-only",
                                  task->inputs[i].name)};
        }
      }
      KP_STOP_IF(compare_outputs(set, report, fmt::format("in trial {}", trial + 1).c_str()));
      report->trials_run = trial + 1;
    }
    return std::nullopt;
  }

  // One event-timed call of lib on set k, preceded by an L2 flush and a persisting-L2 reset.
  MaybeStop timed_call(const CandidateLibrary& lib, kp_args& args, const char* who, double* event_s, double* wall_s) {
    KP_STOP_IF(harness(cudaMemsetAsync(flush.get(), 0, flush.bytes(), stream), "flushing L2"));
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

  // Captures one call on set 0 into a CUDA graph and replays it into poisoned outputs. Work
  // the call puts anywhere but args->stream (another stream, a host thread) is not in the graph,
  // so its outputs stay unwritten: this catches escaped work whatever its size, where the wall
  // clock check below only catches it when it is large. Set 0's reference outputs are current.
  MaybeStop replay_check(const CandidateLibrary& cand, eval::WorkerReport* report) {
    kp_args args = make_args(sets[0], cand_workspace);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    KP_STOP_IF(harness(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "starting a graph capture"));
    MaybeStop failed = call(cand, args, "the candidate");
    cudaError_t end = cudaStreamEndCapture(stream, &graph);
    cudaError_t inst = (!failed && end == cudaSuccess && graph) ? cudaGraphInstantiate(&exec, graph, 0) : cudaErrorUnknown;
    if (failed || end != cudaSuccess || inst != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), "the candidate execution"));
      return Stop{Outcome::kRejected,
                  fmt::format("the call could not be captured into a CUDA graph ({}): launch only on args->stream, "
                              "and do not synchronize, allocate or use another stream or thread in kp_run",
                              failed ? failed->reason : std::string(cudaGetErrorName(end != cudaSuccess ? end : inst)))};
    }
    // Work that escaped the capture ran eagerly during it: let it finish before poisoning.
    MaybeStop result = cuda_failure(cudaDeviceSynchronize(), "the candidate execution");
    if (!result) result = poison_outputs(sets[0]);
    if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), "the candidate's graph replay");
    if (!result) result = cuda_failure(cudaDeviceSynchronize(), "the candidate's graph replay");
    if (!result) {
      result = compare_outputs(sets[0], report, "when the call is replayed from a CUDA graph");
      if (result && result->outcome == Outcome::kIncorrect)
        result = Stop{Outcome::kRejected, "work escaped the stream: " + result->reason +
                                              " (work outside args->stream is not part of the call)"};
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return result;
  }

  // Times lib over the timing sets. Fills `timing`; a candidate whose work escapes the stream
  // is rejected (only checked when check_wall is set: the reference is trusted).
  MaybeStop time_library(const CandidateLibrary& lib, DeviceBuffer& workspace, const char* who, bool check_wall,
                         eval::TimingReport* timing) {
    timing->input_sets = static_cast<int>(sets.size());
    timing->l2_flush_bytes = static_cast<int64_t>(flush.bytes());
    std::vector<kp_args> args;
    for (auto& s : sets) args.push_back(make_args(s, workspace));
    std::vector<double> estimate;
    for (int i = 0; i < std::max(options->warmup_calls, 1); ++i) {
      double e = 0, w = 0;
      KP_STOP_IF(timed_call(lib, args[i % args.size()], who, &e, &w));
      estimate.push_back(e);
    }
    timing->warmup_calls = std::max(options->warmup_calls, 1);
    double t_est = std::max(eval::summarize(estimate).median, 1e-7);
    auto trials_for = [&](double per_trial) {
      double n = options->timing_budget_s / per_trial;
      return static_cast<int>(std::clamp(n, static_cast<double>(options->min_trials), static_cast<double>(options->max_trials)));
    };
    if (t_est * 1e6 < options->graph_threshold_us) {
      MaybeStop g = time_with_graph(lib, args, who, t_est, trials_for, timing);
      if (g && g->outcome == Outcome::kOk && check_wall) {
        // An honest candidate (launches on args->stream only, no sync or allocation in kp_run)
        // is always capturable; one that is not would escape the event timing of short calls.
        return Stop{Outcome::kRejected,
                    fmt::format("the calls could not be captured into a CUDA graph ({}): launch only on "
                                "args->stream, and do not synchronize, allocate or use another stream in kp_run",
                                g->reason)};
      }
      if (!g || g->outcome != Outcome::kOk) return g;  // success, or a real failure
      // else: the calls could not be captured; fall back to events below.
    }
    timing->method = "events";
    int n = trials_for(t_est + 1e-4);  // + the flush
    for (int i = 0; i < n; ++i) {
      double e = 0, w = 0;
      KP_STOP_IF(timed_call(lib, args[i % args.size()], who, &e, &w));
      timing->samples_s.push_back(e);
      timing->wall_s.push_back(w);
    }
    if (check_wall) {
      double ev = eval::summarize(timing->samples_s).median, wall = eval::summarize(timing->wall_s).median;
      if (wall > options->wall_ratio * ev + options->wall_slack_us * 1e-6)
        return Stop{Outcome::kRejected,
                    fmt::format("work escaped the stream: the median call takes {:.1f} us of wall time to a device-wide "
                                "sync but only {:.1f} us between events on the given stream; launch everything on "
                                "args->stream and do not block on the host",
                                wall * 1e6, ev * 1e6)};
    }
    return std::nullopt;
  }

  // Graph replay for short calls. Returns Stop{kOk} when capture is impossible (fall back).
  template <typename TrialsFor>
  MaybeStop time_with_graph(const CandidateLibrary& lib, std::vector<kp_args>& args, const char* who, double t_est,
                            TrialsFor trials_for, eval::TimingReport* timing) {
    const int calls = std::max(options->graph_calls, 1);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal); e != cudaSuccess) {
      cudaGetLastError();
      return Stop{Outcome::kOk, fmt::format("capture did not start: {}", cudaGetErrorName(e))};
    }
    MaybeStop failed;
    for (int i = 0; i < calls && !failed; ++i) failed = call(lib, args[i % args.size()], who);
    cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (failed || end != cudaSuccess || !graph) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), fmt::format("{} execution", who)));
      return Stop{Outcome::kOk, failed ? failed->reason : std::string(cudaGetErrorName(end))};
    }
    if (cudaError_t e = cudaGraphInstantiate(&exec, graph, 0); e != cudaSuccess) {
      cudaGraphDestroy(graph);
      cudaGetLastError();
      return Stop{Outcome::kOk, fmt::format("graph not instantiable: {}", cudaGetErrorName(e))};
    }
    timing->method = "graph";
    int n = trials_for(t_est * calls);
    MaybeStop result;
    KP_STOP_IF(cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who)));
    KP_STOP_IF(cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who)));
    for (int i = 0; i < n && !result; ++i) {
      result = harness(cudaEventRecord(start, stream), "recording an event");
      if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who));
      if (!result) result = harness(cudaEventRecord(stop, stream), "recording an event");
      if (!result) result = cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who));
      float ms = 0;
      if (!result) result = harness(cudaEventElapsedTime(&ms, start, stop), "reading events");
      if (!result) timing->samples_s.push_back(ms * 1e-3 / calls);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return result;
  }

  // Energy of back-to-back calls over at least energy_window_s, between two ticks of NVML's
  // total-energy counter.
  eval::EnergyReport measure_energy(const CandidateLibrary& lib, DeviceBuffer& workspace, double t_call, MaybeStop* stop) {
    eval::EnergyReport e;
    if (options->energy_window_s <= 0) {
      e.unavailable_reason = "disabled (--no-energy)";
      return e;
    }
    if (!nvml) {
      e.unavailable_reason = device.nvml_error.empty() ? "NVML unavailable" : device.nvml_error;
      return e;
    }
    auto read = [&]() -> std::optional<uint64_t> {
      auto r = nvml->total_energy_mj();
      return r.ok() ? std::optional<uint64_t>(*r) : std::nullopt;
    };
    // Waits until the counter changes (it updates about every 100 ms); returns the new value.
    auto next_tick = [&](uint64_t from) -> std::optional<uint64_t> {
      auto t0 = Clock::now();
      while (seconds_since(t0) < 0.5) {
        auto v = read();
        if (!v) return std::nullopt;
        if (*v != from) return v;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return from;
    };
    if (!idle_watts) {
      cudaDeviceSynchronize();
      auto a = read();
      if (!a) {
        e.unavailable_reason = "NVML energy read failed";
        return e;
      }
      auto a1 = next_tick(*a);
      auto t0 = Clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(options->idle_window_s));
      auto b = next_tick(read().value_or(*a1));
      double dt = seconds_since(t0);
      idle_watts = (a1 && b && dt > 0) ? static_cast<double>(*b - *a1) * 1e-3 / dt : 0.0;
    }
    e.idle_watts = *idle_watts;
    std::vector<kp_args> args;
    for (auto& s : sets) args.push_back(make_args(s, workspace));
    const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(0.02 / std::max(t_call, 1e-7)));
    auto e0 = read();
    if (!e0) {
      e.unavailable_reason = "NVML energy read failed";
      return e;
    }
    e0 = next_tick(*e0);
    auto t0 = Clock::now();
    int64_t calls = 0;
    std::optional<uint64_t> e1;
    uint64_t last = *e0;
    while (true) {
      for (int64_t i = 0; i < chunk; ++i, ++calls) {
        if ((*stop = call(lib, args[calls % args.size()], "the candidate"))) return e;
      }
      if ((*stop = cuda_failure(cudaDeviceSynchronize(), "the candidate execution"))) return e;
      if (seconds_since(t0) < options->energy_window_s) continue;
      auto v = read();
      if (!v) break;
      if (*v != last && seconds_since(t0) >= options->energy_window_s) {
        e1 = v;
        break;
      }
      last = *v;
      if (seconds_since(t0) > options->energy_window_s + 1.0) break;
    }
    double window = seconds_since(t0);
    if (!e1) {
      e.unavailable_reason = "the NVML energy counter did not advance";
      return e;
    }
    e.measured = true;
    e.calls = calls;
    e.window_s = window;
    double joules = static_cast<double>(*e1 - *e0) * 1e-3;
    e.joules_per_call = joules / static_cast<double>(calls);
    e.average_watts = joules / window;
    e.dynamic_joules_per_call = std::max(0.0, joules - e.idle_watts * window) / static_cast<double>(calls);
    e.sm_clock_mhz = nvml->sm_clock_mhz();
    e.temperature_c = nvml->temperature_c();
    return e;
  }

  MaybeStop run(const CandidateLibrary& ref, const CandidateLibrary& cand, eval::WorkerReport* report) {
    auto phase = Clock::now();
    auto end_phase = [&](const char* name) {
      report->phase_seconds[name] = seconds_since(phase);
      phase = Clock::now();
    };
    for (const auto& s : task->scalars) scalars.push_back({s.name.c_str(), s.is_integer ? 1 : 0, s.f, s.i});
    size_t free_bytes = 0, total_bytes = 0;
    KP_STOP_IF(harness(cudaMemGetInfo(&free_bytes, &total_bytes), "querying memory"));
    uint64_t io = task->io_bytes();
    int n_sets = std::max(1, options->input_sets);
    while (n_sets > 1 && io * static_cast<uint64_t>(n_sets + 1) > free_bytes / 4) --n_sets;
    sets.resize(static_cast<size_t>(n_sets));
    for (auto& s : sets) KP_STOP_IF(allocate_set(s));
    for (const auto& s : task->outputs) {
      ref_outputs.emplace_back();
      KP_STOP_IF(harness(ref_outputs.back().allocate(s.bytes()), "allocating reference outputs"));
    }
    {
      kp_args probe = make_args(sets[0], ref_workspace);
      size_t rb = ref.workspace_bytes(probe), cb = cand.workspace_bytes(probe);
      if (rb) KP_STOP_IF(harness(ref_workspace.allocate(rb), "allocating the reference workspace"));
      if (cb) KP_STOP_IF(cuda_failure(cand_workspace.allocate(cb), fmt::format("allocating the candidate's workspace of {} bytes", cb)));
    }
    end_phase("setup");
    KP_STOP_IF(correctness(ref, cand, report));
    for (size_t k = 1; k < sets.size(); ++k) KP_STOP_IF(fill_inputs(sets[k], 1000 + k));
    end_phase("correctness");

    KP_STOP_IF(replay_check(cand, report));
    eval::TimingReport cand_timing;
    KP_STOP_IF(time_library(cand, cand_workspace, "the candidate", true, &cand_timing));
    report->timing = cand_timing;
    end_phase("timing");
    eval::TimingReport ref_timing;
    KP_STOP_IF(time_library(ref, ref_workspace, "the reference", false, &ref_timing));
    report->reference_seconds = eval::summarize(ref_timing.samples_s).median;
    end_phase("reference_timing");

    MaybeStop stop;
    report->energy = measure_energy(cand, cand_workspace, eval::summarize(cand_timing.samples_s).median, &stop);
    end_phase("energy");
    return stop;
  }
};

NativeEvaluator::NativeEvaluator(eval::DeviceInfo device, std::unique_ptr<Nvml> nvml) : impl_(std::make_unique<Impl>()) {
  impl_->device = std::move(device);
  impl_->nvml = std::move(nvml);
}

NativeEvaluator::~NativeEvaluator() = default;

eval::WorkerReport NativeEvaluator::evaluate(const task::Task& task, const std::string& ref_path,
                                             const std::string& cand_path, const eval::EvalOptions& options,
                                             uint64_t seed, bool* context_poisoned) {
  eval::WorkerReport report;
  report.seed = seed;
  for (const auto& o : task.outputs) report.output_names.push_back(o.name);
  Impl& m = *impl_;
  m.task = &task;
  m.options = &options;
  m.seed = seed;
  m.poisoned = false;
  m.sets.clear();
  m.ref_outputs.clear();
  m.scalars.clear();
  m.ref_workspace = DeviceBuffer();
  m.cand_workspace = DeviceBuffer();

  auto finish = [&](Outcome o, std::string reason) {
    report.outcome = o;
    report.reason = std::move(reason);
    *context_poisoned = m.poisoned;
    m.sets.clear();
    m.ref_outputs.clear();
    m.ref_workspace = DeviceBuffer();
    m.cand_workspace = DeviceBuffer();
    return report;
  };

  auto load_start = Clock::now();
  auto ref = CandidateLibrary::open(ref_path);
  if (!ref.ok()) return finish(Outcome::kLoadError, "the task's reference: " + ref.error().message);
  auto cand = CandidateLibrary::open(cand_path);
  if (!cand.ok()) return finish(Outcome::kLoadError, cand.error().message);
  report.phase_seconds["load"] = seconds_since(load_start);

  if (!m.stream) {
    if (MaybeStop s = m.harness(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "creating a stream"))
      return finish(s->outcome, s->reason);
    cudaEventCreate(&m.start);
    cudaEventCreate(&m.stop);
    size_t flush_bytes = std::max<size_t>(static_cast<size_t>(m.device.l2_bytes) * 4, size_t{256} << 20);
    if (MaybeStop s = m.harness(m.flush.allocate(flush_bytes), "allocating the L2 flush buffer")) return finish(s->outcome, s->reason);
    if (MaybeStop s = m.harness(m.scratch.allocate(8), "allocating scratch")) return finish(s->outcome, s->reason);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    cudaGetLastError();
  }
  if (MaybeStop s = m.run(**ref, **cand, &report)) return finish(s->outcome, s->reason);
  return finish(Outcome::kOk, "");
}

}  // namespace kp::worker
