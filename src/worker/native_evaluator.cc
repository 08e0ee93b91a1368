#include "worker/native_evaluator.h"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include "util/strings.h"
#include "verdict/compare.h"
#include "verdict/physics_floor.h"
#include "verdict/statistics.h"
#include "verdict/timing_rule.h"
#include "verdict/worker_plan.h"
#include "worker/candidate_library.h"
#include "worker/device_compare.h"
#include "worker/device_ops.h"
#include "worker/profile_hooks.h"

namespace kp::worker {

using eval::Outcome;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Why an evaluation stopped early. Returned, never thrown. `cheat` names the anti-cheat rule
// that fired (WorkerReport::cheat), empty for an ordinary failure.
struct Stop {
  Outcome outcome;
  std::string reason;
  std::string cheat = {};
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

// Threads of this process (entries of /proc/self/task), or -1 when that cannot be read.
int count_threads() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  int n = 0;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

// Who is timed: the reference is trusted; only the candidate's calls are checked.
enum class Role { kReference, kCandidate };

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
  CompareScratch compare_scratch;  // the output check's tallies on the device

  // Per evaluation.
  const task::Task* task = nullptr;
  const eval::EvalOptions* options = nullptr;
  uint64_t seed = 0;
  std::vector<TensorSet> sets;  // sets[0] is the correctness set
  // The reference's outputs for each set's current inputs: ref_outputs[k][i] is output i of set k.
  std::vector<std::vector<DeviceBuffer>> ref_outputs;
  // Set 0's reference outputs of the previous correctness trial (keep_previous_reference).
  std::vector<DeviceBuffer> prev_ref;
  std::vector<kp_scalar> scalars;
  // Under graph replay, call i's own outputs on the inputs of set i % sets (ensure_graph_outputs).
  std::vector<TensorSet> graph_views;
  DeviceBuffer ref_workspace, cand_workspace;
  bool poisoned = false;
  // The worker must not serve another evaluation although its context works: the candidate left
  // threads running that may still launch work into buffers of this evaluation.
  bool retire = false;

  // Per-evaluation state, reset at the start and the end of each request.
  void begin_evaluation(const task::Task& t, const eval::EvalOptions& o, uint64_t s) {
    task = &t;
    options = &o;
    seed = s;
    poisoned = false;
    retire = false;
    scalars.clear();
    end_evaluation();
  }
  void end_evaluation() {
    graph_views.clear();
    sets.clear();
    ref_outputs.clear();
    prev_ref.clear();
    ref_workspace = DeviceBuffer();
    cand_workspace = DeviceBuffer();
  }

  // Once per worker: the stream, two events, the L2 flush buffer and checksum scratch.
  MaybeStop ensure_resources() {
    if (stream) return std::nullopt;
    KP_STOP_IF(harness(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream"));
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    const auto flush_bytes = static_cast<size_t>(eval::l2_flush_bytes(device.l2_bytes));
    KP_STOP_IF(harness(flush.allocate(flush_bytes), "allocating the L2 flush buffer"));
    KP_STOP_IF(harness(cudaMemset(flush.get(), 0, flush.bytes()), "clearing the L2 flush buffer"));
    return harness(scratch.allocate(8), "allocating scratch");
  }

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

  // Runs the reference on set k's inputs into ref_outputs[k]. A failure is the task's.
  MaybeStop run_reference(const CandidateLibrary& ref, size_t k, eval::WorkerReport* report) {
    // The reference writes into its own buffers, viewed through a copy of the descriptors.
    TensorSet view;
    view.in_desc = sets[k].in_desc;
    for (size_t i = 0; i < task->outputs.size(); ++i) view.out_desc.push_back(describe(task->outputs[i], ref_outputs[k][i].get()));
    kp_args ra = make_args(view, ref_workspace);
    if (MaybeStop s = call_and_sync(ref, ra, "the reference")) {
      s->reason = "the task's reference failed: " + s->reason;
      report->reference_failed = true;
      return s;
    }
    return std::nullopt;
  }

  // Compares the outputs of `outs` (sets[k], or a graph call's own outputs on set k's inputs)
  // with ref_outputs[k], on the GPU (worker/device_compare.h: nothing is copied to the host but
  // the tallies). Fills report->checks; an incorrect output is a kIncorrect stop naming it and
  // `when`.
  MaybeStop compare_outputs(const TensorSet& outs, size_t k, eval::WorkerReport* report, const std::string& when) {
    return compare_against(outs, ref_outputs[k], report, when);
  }

  MaybeStop compare_against(const TensorSet& outs, const std::vector<DeviceBuffer>& wants, eval::WorkerReport* report,
                            const std::string& when) {
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

  // Keeps a device copy of set 0's reference outputs (the previous trial's), so a failing trial
  // whose output equals them is named a result cache. False when the copies do not fit: the
  // tag is then not given (the trial fails all the same).
  bool keep_previous_reference() {
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

  // Names the cheat a failed correctness trial looks like, from the first failing output's
  // check. `has_previous`: prev_ref holds the previous trial's reference outputs (not in the
  // first trial): an output equal to them was kept from the previous call, while the inputs
  // changed in place.
  void tag_correctness_failure(Stop& s, const eval::WorkerReport& report, bool has_previous) {
    for (size_t i = 0; i < report.checks.size() && i < task->outputs.size(); ++i) {
      const eval::OutputCheck& c = report.checks[i];
      if (c.passed) continue;
      const auto& spec = task->outputs[i];
      if (c.reference_nonfinite > 0) return;  // the task's fault, not a cheat
      if (c.constant_output) {
        s.cheat = "constant_output";
        return;
      }
      if (has_previous && i < prev_ref.size() && c.unwritten == 0) {
        eval::OutputTally t;
        if (device_tally(sets[0].outputs[i].get(), prev_ref[i].get(), spec.dtype, spec.numel(), task->tolerance_for(i),
                         compare_scratch, stream, &t) == cudaSuccess &&
            eval::conclude_check(t, spec.dtype, task->tolerance_for(i), spec.shape).passed) {
          s.cheat = "result_cache";
          s.reason += " (it is the previous trial's result: the output was kept from an earlier call although the "
                      "inputs changed in place; results are cached by pointer)";
          return;
        }
        cudaGetLastError();
      }
      // Every element written and finite, off by an error of the size that lower-precision
      // arithmetic gives: an fp32 or fp64 task computed in fp16, bf16 or TF32. A heuristic: a
      // wrong formula with an error of that size gets the same tag.
      const bool wide = spec.dtype == task::DType::kFp32 || spec.dtype == task::DType::kFp64;
      if (wide && c.unwritten == 0 && c.nonfinite == 0 && c.rel_norm_error >= 1e-5 && c.rel_norm_error <= 5e-2) {
        s.cheat = "precision_downgrade";
        s.reason += " (an error of this size is what fp16, bf16 or TF32 arithmetic gives: compute in the output's precision)";
      }
      return;
    }
  }

  MaybeStop correctness(const CandidateLibrary& ref, const CandidateLibrary& cand, eval::WorkerReport* report) {
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
          return Stop{Outcome::kIncorrect,
                      fmt::format("the candidate wrote to input '{}' (its checksum changed during the call); inputs are read-only",
                                  task->inputs[i].name),
                      "input_mutation"};
        }
      }
      if (MaybeStop s = compare_outputs(set, 0, report, fmt::format("in trial {}", trial + 1))) {
        if (s->outcome == Outcome::kIncorrect && new_threads) {
          retire = true;
          s->cheat = "background_thread";
          s->reason += fmt::format(" (the call also left {} new thread{} running: work handed to a background thread is "
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

  // Clears the persisting-L2 limit and the stream's access-policy window, the two ways to keep
  // data in L2 across the flush. Either may be unsupported; nothing is left to clear then.
  void clear_persisting_l2() {
    cudaStreamAttrValue attr{};
    attr.accessPolicyWindow.num_bytes = 0;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    cudaCtxResetPersistingL2Cache();
    cudaGetLastError();
  }

  // After a candidate's call: the worker keeps the persisting-L2 limit at 0 and the stream's
  // access-policy window empty, so anything else was set by the candidate. Persisting lines
  // survive the read pass that flushes the L2 before each timed call, so the call would be timed
  // with its data already on chip.
  MaybeStop check_persisting_l2() {
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

  // One event-timed call, preceded (outside the events) by poisoning `poison`'s outputs when
  // given, an L2 flush and a persisting-L2 reset.
  MaybeStop timed_call(const CandidateLibrary& lib, kp_args& args, TensorSet* poison, const char* who, double* event_s,
                       double* wall_s) {
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

  // After the candidate's timed calls: each set in `used` holds the outputs of the last timed
  // call on it (its outputs were poisoned before each call), which must match that set's
  // reference. A call that left its work to another call, or did another call's work, fails.
  MaybeStop check_timed_outputs(const std::vector<bool>& used, eval::WorkerReport* report) {
    for (size_t k = 0; k < sets.size(); ++k) {
      if (!used[k]) continue;
      MaybeStop s = compare_outputs(sets[k], k, report, fmt::format("on input set {}", k));
      if (s && s->outcome == Outcome::kIncorrect)
        return Stop{Outcome::kRejected,
                    fmt::format("the output of the last timed call on input set {} was not computed by that call ({}): "
                                "work deferred to or batched with other calls",
                                k, s->reason),
                    "batched_calls"};
      KP_STOP_IF(s);
    }
    return std::nullopt;
  }

  // Times lib over the timing sets into `timing`. For the candidate (the reference is trusted),
  // also: its outputs are poisoned before each event-timed call and compared with the reference
  // after the last; its persisting-L2 state is checked after each call; and work that escapes
  // the stream is caught by the wall clock.
  MaybeStop time_library(const CandidateLibrary& lib, DeviceBuffer& workspace, Role role, eval::TimingReport* timing,
                         eval::WorkerReport* report) {
    const bool candidate = role == Role::kCandidate;
    const char* who = candidate ? "the candidate" : "the reference";
    timing->input_sets = static_cast<int>(sets.size());
    timing->l2_flush_bytes = static_cast<int64_t>(flush.bytes());
    std::vector<kp_args> args;
    for (auto& s : sets) args.push_back(make_args(s, workspace));
    std::vector<bool> used(sets.size(), false);
    auto timed = [&](size_t k, double* e, double* w) -> MaybeStop {
      KP_STOP_IF(timed_call(lib, args[k], candidate ? &sets[k] : nullptr, who, e, w));
      used[k] = true;
      if (candidate) KP_STOP_IF(check_persisting_l2());
      return std::nullopt;
    };
    std::vector<double> estimate;
    for (int i = 0; i < std::max(options->warmup_calls, 1); ++i) {
      double e = 0, w = 0;
      KP_STOP_IF(timed(static_cast<size_t>(i) % args.size(), &e, &w));
      estimate.push_back(e);
    }
    timing->warmup_calls = std::max(options->warmup_calls, 1);
    double t_est = std::max(eval::summarize(estimate).median, 1e-7);
    if (eval::use_graph_replay(t_est, *options)) {
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
    timing->method = "events";
    // Samples until the median is known within median_ci, or the loop's wall budget (every call
    // counted whole: poisoning, flush, syncs) or max_trials is spent (verdict/timing_rule.h).
    const auto loop_start = Clock::now();
    eval::SamplingStop decision = eval::SamplingStop::kContinue;
    for (int i = 0; decision == eval::SamplingStop::kContinue; ++i) {
      double e = 0, w = 0;
      KP_STOP_IF(timed(static_cast<size_t>(i) % args.size(), &e, &w));
      timing->samples_s.push_back(e);
      timing->wall_s.push_back(w);
      decision = eval::sampling_decision(timing->samples_s, seconds_since(loop_start), *options);
    }
    timing->stop = eval::to_string(decision);
    timing->median_ci_rel = eval::median_interval95(timing->samples_s).relative_half_width();
    timing->loop_wall_s = seconds_since(loop_start);
    if (candidate) {
      KP_STOP_IF(check_timed_outputs(used, report));
      double ev = eval::summarize(timing->samples_s).median, wall = eval::summarize(timing->wall_s).median;
      if (eval::wall_says_work_escaped(wall, ev, *options))
        return Stop{Outcome::kRejected,
                    fmt::format("work escaped the stream (a side stream or a background thread): the median call "
                                "takes {:.1f} us of wall time to a device-wide sync but only {:.1f} us between events "
                                "on the given stream; launch everything on args->stream and do not block on the host",
                                wall * 1e6, ev * 1e6),
                    "side_stream"};
    }
    return std::nullopt;
  }

  // Gives each call of a replayed graph outputs of its own, on the inputs of set i % sets, once
  // per evaluation (the reference's graph reuses them, so both are timed alike). Graph calls are
  // short, so their outputs are small; when graph_calls of them would take more than an eighth
  // of free memory, false, and the calls write into their sets' outputs instead.
  bool ensure_graph_outputs(int calls) {
    if (graph_views.size() == static_cast<size_t>(calls)) return true;
    graph_views.clear();
    uint64_t out_bytes = 0;
    for (const auto& s : task->outputs) out_bytes += s.bytes();
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || !eval::graph_outputs_fit(out_bytes, calls, free_bytes)) {
      cudaGetLastError();
      return false;
    }
    graph_views.resize(static_cast<size_t>(calls));
    for (size_t i = 0; i < graph_views.size(); ++i) {
      TensorSet& v = graph_views[i];
      v.in_desc = sets[i % sets.size()].in_desc;
      for (const auto& s : task->outputs) {
        v.outputs.emplace_back();
        if (v.outputs.back().allocate(s.bytes()) != cudaSuccess) {
          cudaGetLastError();
          graph_views.clear();
          return false;
        }
        v.out_desc.push_back(describe(s, v.outputs.back().get()));
      }
    }
    return true;
  }

  // Graph replay for short calls. Returns Stop{kOk} when capture is impossible (fall back). For
  // the candidate, after the timed replays the outputs are poisoned, the graph is replayed once
  // more, and the outputs checked: each call's own when it has them (a call that skipped its
  // work is caught even when another call in the graph did the same set's), else each set's.
  MaybeStop time_with_graph(const CandidateLibrary& lib, DeviceBuffer& workspace, Role role, eval::TimingReport* timing,
                            eval::WorkerReport* report) {
    const bool candidate = role == Role::kCandidate;
    const char* who = candidate ? "the candidate" : "the reference";
    const int calls = std::max(options->graph_calls, 1);
    const bool own_outputs = ensure_graph_outputs(calls);
    std::vector<kp_args> args;
    std::vector<bool> used(sets.size(), false);
    for (int i = 0; i < calls; ++i) {
      const size_t k = static_cast<size_t>(i) % sets.size();
      args.push_back(make_args(own_outputs ? graph_views[static_cast<size_t>(i)] : sets[k], workspace));
      used[k] = true;
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal); e != cudaSuccess) {
      cudaGetLastError();
      return Stop{Outcome::kOk, fmt::format("capture did not start: {}", cudaGetErrorName(e))};
    }
    MaybeStop failed;
    for (int i = 0; i < calls && !failed; ++i) failed = call(lib, args[static_cast<size_t>(i)], who);
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
    MaybeStop result;
    if (candidate) result = check_persisting_l2();
    if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who));
    if (!result) result = cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who));
    // One sample per replay, until the sampling rule stops (verdict/timing_rule.h).
    const auto loop_start = Clock::now();
    eval::SamplingStop decision = eval::SamplingStop::kContinue;
    while (!result && decision == eval::SamplingStop::kContinue) {
      result = harness(cudaEventRecord(start, stream), "recording an event");
      if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who));
      if (!result) result = harness(cudaEventRecord(stop, stream), "recording an event");
      if (!result) result = cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who));
      float ms = 0;
      if (!result) result = harness(cudaEventElapsedTime(&ms, start, stop), "reading events");
      if (!result) timing->samples_s.push_back(ms * 1e-3 / calls);
      decision = eval::sampling_decision(timing->samples_s, seconds_since(loop_start), *options);
    }
    timing->stop = eval::to_string(decision);
    timing->median_ci_rel = eval::median_interval95(timing->samples_s).relative_half_width();
    timing->loop_wall_s = seconds_since(loop_start);
    if (candidate && !result) {
      if (own_outputs) {
        for (size_t i = 0; i < graph_views.size() && !result; ++i) result = poison_outputs(graph_views[i]);
      } else {
        for (size_t k = 0; k < sets.size() && !result; ++k)
          if (used[k]) result = poison_outputs(sets[k]);
      }
      if (!result) result = cuda_failure(cudaGraphLaunch(exec, stream), fmt::format("{} graph replay", who));
      if (!result) result = cuda_failure(cudaDeviceSynchronize(), fmt::format("{} graph replay", who));
      if (!result && !own_outputs) result = check_timed_outputs(used, report);
      for (size_t i = 0; own_outputs && i < graph_views.size() && !result; ++i) {
        const size_t k = i % sets.size();
        MaybeStop s = compare_outputs(graph_views[i], k, report, fmt::format("of call {}", i + 1));
        if (s && s->outcome == Outcome::kIncorrect)
          result = Stop{Outcome::kRejected,
                        fmt::format("the output of timed call {} of {} in the replayed graph (input set {}) was not "
                                    "computed by that call ({}): work deferred to or batched with other calls",
                                    i + 1, calls, k, s->reason),
                        "batched_calls"};
        else
          result = std::move(s);
      }
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return result;
  }

  // Result caching, after the candidate's timing, on inputs it has not seen. (a) Every set's
  // inputs are redrawn in place (same pointers, new values) and each set is called once and
  // checked: a result kept by pointer is now stale. (b) Event timing only: five timed calls,
  // each on freshly redrawn inputs, must not be much slower than the timed calls on the inputs
  // it had seen: a result kept by the input's contents (a fingerprint) is fast only on those.
  // The sets' reference outputs are current after (a), not after (b).
  MaybeStop check_result_cache(const CandidateLibrary& ref, const CandidateLibrary& cand,
                               const eval::TimingReport& timing, eval::WorkerReport* report) {
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
    if (timing.method != "events") return std::nullopt;
    constexpr int kProbeCalls = 5;
    std::vector<double> fresh;
    for (int i = 0; i < kProbeCalls; ++i) {
      size_t k = static_cast<size_t>(i) % sets.size();
      KP_STOP_IF(fill_inputs(sets[k], 3000 + static_cast<uint64_t>(i)));
      kp_args a = make_args(sets[k], cand_workspace);
      double e = 0, w = 0;
      KP_STOP_IF(timed_call(cand, a, &sets[k], "the candidate", &e, &w));
      fresh.push_back(e);
    }
    const double on_new = eval::summarize(fresh).median, on_seen = eval::summarize(timing.samples_s).median;
    if (eval::slower_on_new_inputs(on_new, on_seen))
      return Stop{Outcome::kRejected,
                  fmt::format("{:.1f} us on new inputs vs {:.1f} us on inputs it has seen: results are cached by input",
                              on_new * 1e6, on_seen * 1e6),
                  "result_cache"};
    return std::nullopt;
  }

  // Fills the report's physics floor for `method`, and rejects a median below it.
  MaybeStop check_physics_floor(const eval::TimingReport* timing, eval::WorkerReport* report) {
    const eval::TimingMethod method =
        timing && timing->method == "graph" ? eval::TimingMethod::kGraphReplay : eval::TimingMethod::kEvents;
    eval::PhysicsFloor f = eval::physics_floor(*task, device, method, options->physics_margin);
    report->physics_floor_s = f.seconds;
    report->physics_floor_basis = f.basis;
    if (!timing || timing->samples_s.empty() || f.seconds <= 0) return std::nullopt;
    const double median = eval::summarize(timing->samples_s).median;
    if (median >= f.seconds) return std::nullopt;
    return Stop{Outcome::kRejected,
                fmt::format("the median call takes {:.1f} us, below the physics floor of {:.1f} us ({}): no honest "
                            "kernel {} that fast; the timing is not of the real work",
                            median * 1e6, f.seconds * 1e6, f.basis,
                            f.bytes_bound ? "moves these bytes" : "does this arithmetic"),
                "physics_floor"};
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
    const int64_t chunk = eval::energy_chunk_calls(t_call);
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


  // The input sets, the reference's output buffers and the workspaces (the candidate's when
  // given), as many sets as fit in a quarter of free memory.
  MaybeStop setup(const CandidateLibrary& ref, const CandidateLibrary* cand) {
    for (const auto& s : task->scalars) scalars.push_back({s.name.c_str(), s.is_integer ? 1 : 0, s.f, s.i});
    size_t free_bytes = 0, total_bytes = 0;
    KP_STOP_IF(harness(cudaMemGetInfo(&free_bytes, &total_bytes), "querying memory"));
    uint64_t io = task->io_bytes(), out_bytes = 0;
    for (const auto& s : task->outputs) out_bytes += s.bytes();
    // Each set: its inputs, its outputs and the reference's outputs for it.
    const int n_sets = eval::input_sets_that_fit(io + out_bytes, free_bytes, options->input_sets);
    sets.resize(static_cast<size_t>(n_sets));
    for (auto& s : sets) KP_STOP_IF(allocate_set(s));
    ref_outputs.resize(sets.size());
    for (auto& bufs : ref_outputs) {
      for (const auto& s : task->outputs) {
        bufs.emplace_back();
        KP_STOP_IF(harness(bufs.back().allocate(s.bytes()), "allocating reference outputs"));
      }
    }
    kp_args probe = make_args(sets[0], ref_workspace);
    size_t rb = ref.workspace_bytes(probe), cb = cand ? cand->workspace_bytes(probe) : 0;
    if (rb) KP_STOP_IF(harness(ref_workspace.allocate(rb), "allocating the reference workspace"));
    if (cb) KP_STOP_IF(cuda_failure(cand_workspace.allocate(cb), fmt::format("allocating the candidate's workspace of {} bytes", cb)));
    return std::nullopt;
  }

  MaybeStop run(const CandidateLibrary& ref, const CandidateLibrary& cand, eval::WorkerReport* report) {
    auto phase = Clock::now();
    auto end_phase = [&](const char* name) {
      report->phase_seconds[name] = seconds_since(phase);
      phase = Clock::now();
    };
    check_physics_floor(nullptr, report);  // the floor as event timing would give it, until timing says otherwise
    KP_STOP_IF(setup(ref, &cand));
    end_phase("setup");
    KP_STOP_IF(correctness(ref, cand, report));
    for (size_t k = 1; k < sets.size(); ++k) {
      KP_STOP_IF(fill_inputs(sets[k], 1000 + k));
      KP_STOP_IF(run_reference(ref, k, report));
    }
    end_phase("correctness");

    KP_STOP_IF(replay_check(cand, report));
    eval::TimingReport cand_timing;
    KP_STOP_IF(time_library(cand, cand_workspace, Role::kCandidate, &cand_timing, report));
    KP_STOP_IF(check_result_cache(ref, cand, cand_timing, report));
    KP_STOP_IF(check_physics_floor(&cand_timing, report));
    report->timing = cand_timing;
    end_phase("timing");
    if (options->time_reference) {
      eval::TimingReport ref_timing;
      KP_STOP_IF(time_library(ref, ref_workspace, Role::kReference, &ref_timing, report));
      report->reference_seconds = eval::summarize(ref_timing.samples_s).median;
      report->reference_timing = std::move(ref_timing);
      end_phase("reference_timing");
    }

    MaybeStop stop;
    report->energy = measure_energy(cand, cand_workspace, eval::summarize(cand_timing.samples_s).median, &stop);
    end_phase("energy");
    return stop;
  }

  // EvalOptions::reference_only: the reference timed alone, on the same sets, flush and method
  // as in an evaluation; no candidate is loaded into this process.
  MaybeStop run_reference_only(const CandidateLibrary& ref, eval::WorkerReport* report) {
    auto phase = Clock::now();
    KP_STOP_IF(setup(ref, nullptr));
    for (size_t k = 0; k < sets.size(); ++k) {
      KP_STOP_IF(fill_inputs(sets[k], k == 0 ? 0 : 1000 + k));
      KP_STOP_IF(run_reference(ref, k, report));
    }
    report->phase_seconds["setup"] = seconds_since(phase);
    phase = Clock::now();
    eval::TimingReport ref_timing;
    KP_STOP_IF(time_library(ref, ref_workspace, Role::kReference, &ref_timing, report));
    report->reference_seconds = eval::summarize(ref_timing.samples_s).median;
    report->reference_timing = std::move(ref_timing);
    report->phase_seconds["reference_timing"] = seconds_since(phase);
    return std::nullopt;
  }

  // Flushes L2 (and resets persisting lines) before an observed call, as timed_call does.
  MaybeStop flush_l2() {
    KP_STOP_IF(harness(evict_l2(flush.get(), flush.bytes(), stream), "flushing L2"));
    cudaCtxResetPersistingL2Cache();
    cudaGetLastError();
    return harness(cudaStreamSynchronize(stream), "flushing L2");
  }

  MaybeStop profile_run(const CandidateLibrary& ref, const CandidateLibrary& cand, const eval::ProfileRequest& request,
                        eval::ProfileReply* reply) {
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
      if (cb) KP_STOP_IF(cuda_failure(cand_workspace.allocate(cb), fmt::format("allocating the candidate's workspace of {} bytes", cb)));
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
  m.begin_evaluation(task, options, seed);
  auto finish = [&](Outcome o, std::string reason, std::string cheat = {}) {
    report.outcome = o;
    report.reason = std::move(reason);
    report.cheat = std::move(cheat);
    *context_poisoned = m.poisoned || m.retire;
    m.end_evaluation();
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
  auto cand = CandidateLibrary::open(cand_path);
  if (!cand.ok()) return finish(Outcome::kLoadError, cand.error().message);
  report.phase_seconds["load"] = seconds_since(load_start);

  if (MaybeStop s = m.ensure_resources()) return finish(s->outcome, s->reason);
  // Every evaluation starts with no persisting L2, so that what a candidate sets is its own.
  m.clear_persisting_l2();
  if (MaybeStop s = m.run(**ref, **cand, &report)) return finish(s->outcome, s->reason, s->cheat);
  return finish(Outcome::kOk, "");
}

eval::ProfileReply NativeEvaluator::profile(const task::Task& task, const std::string& ref_path,
                                           const std::string& cand_path, const eval::EvalOptions& options,
                                           const eval::ProfileRequest& request, uint64_t seed, bool* context_poisoned) {
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
