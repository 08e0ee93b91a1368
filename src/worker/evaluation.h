// The native worker's evaluation state and steps (worker/native_evaluator.h is the public face).
// One struct, NativeEvaluator::Impl, whose steps are defined by concern:
//   evaluation_resources.cc   CUDA resources, input sets, calls, the reference's outputs
//   evaluation_correctness.cc the correctness trials and every output check (on the GPU)
//   evaluation_timing.cc      event timing and graph replay, by the sampling rule
//   evaluation_anticheat.cc   persisting L2, the replay check, result caches, the physics floor
//   evaluation_core.cc        the judge core's event timing and energy window (judge/session.h)
//   native_evaluator.cc       the phases in order (evaluate, reference alone, profile)
// Its pure decisions live in verdict/worker_plan.h and verdict/timing_rule.h, tested on the CPU.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include "util/strings.h"
#include "verdict/compare.h"
#include "verdict/gpu_holders.h"
#include "verdict/physics_floor.h"
#include "verdict/protocol.h"
#include "verdict/statistics.h"
#include "verdict/timing_rule.h"
#include "verdict/worker_plan.h"
#include "worker/candidate_library.h"
#include "judge/device_compare.h"
#include "judge/session.h"
#include "judge/device_ops.h"
#include "worker/native_evaluator.h"
#include "worker/profile_hooks.h"

namespace kp::worker {

// The device-side helpers live in the judge layer (judge/device_ops.h, judge/device_compare.h).
using judge::checksum;
using judge::CompareScratch;
using judge::device_tally;
using judge::evict_l2;
using judge::fill_pattern;
using judge::fill_random;

// Writes `name` into the file kernelpro named in KP_PHASE_FILE (eval::kPhaseFileEnv): the phase
// a timeout's reason names. Nothing without the variable.
void mark_phase(const char* name);

// `nvidia-smi --query-compute-apps` in CSV without units, or "" without nvidia-smi
// (verdict/gpu_holders.h reads it).
std::string compute_apps();

using eval::Outcome;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Why an evaluation stopped early. Returned, never thrown. `cheat` names the anti-cheat rule
// that fired (WorkerReport::cheat), empty for an ordinary failure.
struct Stop {
  Outcome outcome;
  std::string reason;
  std::string cheat = {};
};
using MaybeStop = std::optional<Stop>;
#define KP_STOP_IF(expr)                  \
  do {                                    \
    if (MaybeStop s_ = (expr)) return s_; \
  } while (0)

// Errors after which the context cannot be used again (sticky errors).
inline bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorUnknown: return true;
    default: return false;
  }
}

inline const char* status_name(int s) {
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
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }
  cudaError_t allocate(size_t bytes) {
    release();
    bytes_ = bytes;
    cudaError_t e = cudaMalloc(&ptr_, std::max<size_t>(bytes, 16));
    if (e == cudaSuccess) live_bytes() += held();
    else ptr_ = nullptr;
    return e;
  }
  // Device memory all DeviceBuffers of this process hold now: what an out-of-memory is measured
  // against (verdict/gpu_holders.h).
  static std::atomic<uint64_t>& live_bytes() {
    static std::atomic<uint64_t> bytes{0};
    return bytes;
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t held() const { return std::max<size_t>(bytes_, 16); }
  void release() {
    if (!ptr_) return;
    cudaFree(ptr_);
    live_bytes() -= held();
    ptr_ = nullptr;
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Threads of this process (entries of /proc/self/task), or -1 when that cannot be read.
inline int count_threads() {
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

inline kp_tensor describe(const task::TensorSpec& s, void* data) {
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

struct CoreAdapter;  // evaluation_core.cc

struct NativeEvaluator::Impl {
  eval::DeviceInfo device;
  std::optional<double> idle_watts;  // measured once per worker
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  DeviceBuffer flush;
  DeviceBuffer scratch;            // 8 bytes for checksums
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
  // Under graph replay, call i's own inputs and outputs (ensure_graph_outputs).
  std::vector<TensorSet> graph_views;
  // The reference's outputs for each graph call's own inputs (ensure_graph_outputs).
  std::vector<std::vector<DeviceBuffer>> graph_refs;
  DeviceBuffer ref_workspace, cand_workspace;
  bool poisoned = false;
  // Which timed calls are checked: seeded from the OS, not from the evaluation's seed (which
  // the report gives away), so neither the candidate nor its author can predict them.
  std::mt19937_64 timed_checks{std::random_device{}()};
  // The worker must not serve another evaluation although its context works: the candidate left
  // threads running that may still launch work into buffers of this evaluation.
  bool retire = false;
  // Device memory the process holds beyond the harness's own buffers (DeviceBuffer), first seen
  // at the start of this worker's first evaluation: what candidates left allocated grows it, and
  // past kLeakRetireBytes the worker retires, so no later evaluation runs short of memory.
  int64_t outside_baseline = -1;
  static constexpr int64_t kLeakRetireBytes = int64_t{256} << 20;
  // Bytes held outside DeviceBuffer now (-1 when unknown); retire_if_memory_left sets `retire`
  // when they exceed the baseline by kLeakRetireBytes.
  int64_t device_bytes_outside_harness() const;
  void retire_if_memory_left();
  // Threads of the process before the candidate's library was loaded (-1: not counted): the
  // reference is timed in this process only while no thread more runs (issue 28, item 4).
  int threads_before_load = -1;
  // Live descendant processes before it was loaded (sys::live_descendants; kp-worker is a child
  // subreaper, so what the candidate starts stays below it however far it moves).
  std::set<int> processes_before_load;
  // A process the candidate started and left running (issue 28, item 4): killed, and the
  // candidate rejected as background_process, naming `during`.
  MaybeStop check_no_new_processes(const char* during);

  // The judge core's session of this evaluation (evaluation_core.cc): its event timing, the
  // reference's, and the energy window.
  std::unique_ptr<judge::Session> core;
  const CandidateLibrary* ref_lib = nullptr;   // this evaluation's, for the core's callbacks
  const CandidateLibrary* cand_lib = nullptr;  // (the reference itself when no candidate is loaded)
  MaybeStop open_core();
  std::unique_ptr<CoreAdapter> core_adapter(const CandidateLibrary& ref, const CandidateLibrary& cand);
  // The Stop for kpj_time's or kpj_energy's return code (none for 0).
  MaybeStop core_stop(int rc, CoreAdapter& a, eval::WorkerReport* report);
  // `role` timed by the core: every call on inputs drawn fresh for it; the candidate's calls each
  // checked against the reference run after it on the same inputs.
  MaybeStop time_with_core(const CandidateLibrary& ref, const CandidateLibrary& cand, Role role,
                           eval::TimingReport* timing, eval::WorkerReport* report);
  MaybeStop energy_with_core(const CandidateLibrary& ref, const CandidateLibrary& cand, double t_call,
                             eval::WorkerReport* report);

  // Per-evaluation state, reset at the start and the end of each request.
  void begin_evaluation(const task::Task& t, const eval::EvalOptions& o, uint64_t s);
  void end_evaluation();

  // Once per worker: the stream, two events, the L2 flush buffer and checksum scratch.
  MaybeStop ensure_resources();

  MaybeStop cuda_failure(cudaError_t e, const std::string& what);

  // A setup failure of the harness itself (not the candidate's fault) still has to be an
  // outcome; it is reported as a runtime error naming the harness.
  MaybeStop harness(cudaError_t e, const std::string& what);

  kp_args make_args(TensorSet& set, DeviceBuffer& workspace);

  // Calls kp_run and checks the status and the launch error (not the completion).
  MaybeStop call(const CandidateLibrary& lib, kp_args& args, const char* who);

  // Calls and waits for the whole device, so errors of any stream surface here.
  MaybeStop call_and_sync(const CandidateLibrary& lib, kp_args& args, const char* who);

  MaybeStop allocate_set(TensorSet& set);

  MaybeStop fill_inputs(TensorSet& set, uint64_t draw);

  // Fills every output with the poison pattern; `sync` false leaves the fill queued on the
  // stream (a timed replay's poisoning, ordered before its start event).
  MaybeStop poison_outputs(TensorSet& set, bool sync = true);

  MaybeStop input_checksums(TensorSet& set, std::vector<uint64_t>* sums);

  // Runs the reference on set k's inputs into ref_outputs[k]. A failure is the task's.
  MaybeStop run_reference(const CandidateLibrary& ref, size_t k, eval::WorkerReport* report);

  // Compares the outputs of `outs` (sets[k], or a graph call's own outputs on set k's inputs)
  // with ref_outputs[k], on the GPU (judge/device_compare.h: nothing is copied to the host but
  // the tallies). Fills report->checks; an incorrect output is a kIncorrect stop naming it and
  // `when`.
  MaybeStop compare_outputs(const TensorSet& outs, size_t k, eval::WorkerReport* report, const std::string& when);

  MaybeStop compare_against(const TensorSet& outs, const std::vector<DeviceBuffer>& wants, eval::WorkerReport* report,
                            const std::string& when);

  // Keeps a device copy of set 0's reference outputs (the previous trial's), so a failing trial
  // whose output equals them is named a result cache. False when the copies do not fit: the
  // tag is then not given (the trial fails all the same).
  bool keep_previous_reference();

  // Names the cheat a failed correctness trial looks like, from the first failing output's
  // check. `has_previous`: prev_ref holds the previous trial's reference outputs (not in the
  // first trial): an output equal to them was kept from the previous call, while the inputs
  // changed in place.
  void tag_correctness_failure(Stop& s, const eval::WorkerReport& report, bool has_previous);

  MaybeStop correctness(const CandidateLibrary& ref, const CandidateLibrary& cand, eval::WorkerReport* report);

  // Clears the persisting-L2 limit and the stream's access-policy window, the two ways to keep
  // data in L2 across the flush. Either may be unsupported; nothing is left to clear then.
  void clear_persisting_l2();

  // After a candidate's call: the worker keeps the persisting-L2 limit at 0 and the stream's
  // access-policy window empty, so anything else was set by the candidate. Persisting lines
  // survive the read pass that flushes the L2 before each timed call, so the call would be timed
  // with its data already on chip.
  MaybeStop check_persisting_l2();

  // One event-timed call, preceded (outside the events) by poisoning `poison`'s outputs when
  // given, an L2 flush and a persisting-L2 reset.
  MaybeStop timed_call(const CandidateLibrary& lib, kp_args& args, TensorSet* poison, const char* who, double* event_s,
                       double* wall_s);

  // Captures one call on set 0 into a CUDA graph and replays it into poisoned outputs. Work
  // the call puts anywhere but args->stream (another stream, a host thread) is not in the graph,
  // so its outputs stay unwritten: this catches escaped work whatever its size, where the wall
  // clock check below only catches it when it is large. Set 0's reference outputs are current.
  MaybeStop replay_check(const CandidateLibrary& cand, eval::WorkerReport* report);

  // Times lib into `timing`: a few warm-up calls on the sets estimate the call's time (for the
  // candidate, poisoned before, a random share checked); short calls go to graph replay when every
  // call of the graph gets buffers of its own, the rest to the judge core (time_with_core: fresh
  // inputs and a check for every call, the tail, the wall clock, the sampling rule).
  MaybeStop time_library(const CandidateLibrary& lib, DeviceBuffer& workspace, Role role, eval::TimingReport* timing,
                         eval::WorkerReport* report);

  // Gives each call of a replayed graph inputs, outputs and reference outputs of its own, once
  // per evaluation (the reference's graph reuses them, so both are timed alike). Graph calls are
  // short, so their tensors are small; when graph_calls of them would take more than an eighth of
  // free memory, false, and the calls are timed by events instead.
  bool ensure_graph_outputs(int calls);

  // Draws fresh inputs for every call of a replayed graph (each call's own), from the OS-seeded
  // generator; queued on the stream, synchronized when `sync`.
  MaybeStop refresh_graph_inputs(bool sync);

  // Graph replay for short calls, each call on its own buffers (ensure_graph_outputs). Returns
  // Stop{kOk} when capture is impossible (fall back). Every timed replay starts from inputs drawn
  // fresh for it and poisoned outputs (queued before the start event, so not timed). For the
  // candidate a random share of the replays (kTimedCheckShare) is checked: each call's inputs as
  // given, then its outputs against the reference run after the replay on them; after the timed
  // replays one more is checked. Then a few replays that find their outputs already right are
  // timed: a candidate much faster on those reads its output to skip work
  // (worker_plan.h, faster_on_right_outputs).
  // time_with_graph's steps: the calls captured into one graph and instantiated (a Stop with
  // outcome ok: the calls cannot be graphed, events then); every call of a replay checked against
  // the reference on its own inputs; replays on outputs already right must not be faster.
  MaybeStop capture_graph(const CandidateLibrary& lib, std::vector<kp_args>& args, const char* who, cudaGraph_t* graph,
                          cudaGraphExec_t* exec);
  MaybeStop check_graph_replay(const std::string& when, int calls, const std::vector<std::vector<uint64_t>>& given,
                               eval::WorkerReport* report);
  MaybeStop probe_right_outputs(cudaGraphExec_t exec, int calls, const char* who, const eval::TimingReport& timing);
  MaybeStop time_with_graph(const CandidateLibrary& lib, DeviceBuffer& workspace, Role role, eval::TimingReport* timing,
                            eval::WorkerReport* report);

  // Result caching under graph replay, after the candidate's timing: every set's inputs are
  // redrawn in place (same pointers, new values) and each set is called once and checked: a
  // result kept by pointer is now stale. The sets' reference outputs are current after it.
  MaybeStop check_result_cache(const CandidateLibrary& ref, const CandidateLibrary& cand, eval::WorkerReport* report);

  // Fills the report's physics floor for `method`, and rejects a median below it.
  MaybeStop check_physics_floor(const eval::TimingReport* timing, eval::WorkerReport* report);

  // Energy is the judge core's (energy_with_core above).

  // The input sets, the reference's output buffers and the workspaces (the candidate's when
  // given), as many sets as fit in a quarter of free memory.
  MaybeStop setup(const CandidateLibrary& ref, const CandidateLibrary* cand);

  MaybeStop run(const CandidateLibrary& ref, const CandidateLibrary& cand, eval::WorkerReport* report);

  // EvalOptions::reference_only: the reference timed alone, on the same sets, flush and method
  // as in an evaluation; no candidate is loaded into this process.
  MaybeStop run_reference_only(const CandidateLibrary& ref, eval::WorkerReport* report);

  // Flushes L2 (and resets persisting lines) before an observed call, as timed_call does.
  MaybeStop flush_l2();

  MaybeStop profile_run(const CandidateLibrary& ref, const CandidateLibrary& cand, const eval::ProfileRequest& request,
                        eval::ProfileReply* reply);
};

}  // namespace kp::worker
