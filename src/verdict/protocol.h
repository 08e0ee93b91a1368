// The worker protocol: JSON lines between the orchestrator and a worker (kp-worker for native
// tasks; the Python worker for KernelBench tasks speaks the same messages).
//
// The worker reads requests on fd 3 and writes one reply line per request on fd 4 (stdout and
// stderr belong to the candidate and go to files). Requests:
//   {"op":"hello"}                       -> {"ok":true,"device":{...}} or {"ok":false,"error":"..."}
//   {"op":"eval","id":N,"task":{...},"reference":"/abs/ref.so","candidate":"/abs/cand.so",
//    "options":{...}}                    -> {"ok":true,"id":N,"report":{...},"exiting":B}
//   ("exiting":true: the CUDA context is lost and the worker exits after this reply)
//   (options.seed is present only when the user fixed it; otherwise the worker draws one)
// KernelBench tasks (the Python worker, python -m kernelpro_torch.worker):
//   {"op":"eval","id":N,"task":{"kind":"kernelbench","name":"23_Softmax.py","problem":"/abs/p.py",
//    "level":1,"problem_id":23},"reference":"/abs/p.py","candidate":"/abs/cand.py",
//    "library":"/abs/cand.so","library_source":"/abs/cand.cu",   (prebuilt form only)
//    "build_dir":"/abs/torch_extensions","options":{...}}
//                                        -> the same reply as above
//   {"op":"baseline","id":N,"problem":"/abs/p.py","modes":["eager","compile"],"warmup":5,
//    "trials":100}                       -> {"ok":true,"id":N,"hardware":"NVIDIA H200",
//    "device":"cuda:0","torch_version":"2.11.0","results":{"eager":{"ok":true,"mean_ms":..,
//    "std_ms":..,"min_ms":..,"max_ms":..,"median_ms":..,"num_trials":100,"warmup_s":..},
//    "compile":{"ok":false,"error":"..."}},"exiting":B}
//   {"op":"profile","id":N,"task","reference","candidate","options",   (both workers; KernelBench
//    "profile":{...ProfileRequest}}       requests add "library"/"library_source" as eval does)
//                                        -> {"ok":true,"id":N,"profile":{...ProfileReply},"exiting":B}
//   {"op":"shutdown"}                    -> the worker exits 0
// A malformed request gets {"ok":false,"error":"..."}. Every reply is one line.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "task/task.h"
#include "util/result.h"
#include "verdict/compare.h"
#include "verdict/eval_options.h"
#include "verdict/outcome.h"

namespace kp::eval {

constexpr int kProtocolVersion = 1;
constexpr int kRequestFd = 3;  // in the worker: requests arrive here
constexpr int kReplyFd = 4;    // in the worker: replies go here
// kernelpro puts its pid here for every process it starts; a worker (either kind, and one-shot
// workers under ncu or the trace library too) exits when that process is gone
// (worker/orphan_watch.h, kernelpro_torch/worker.py).
constexpr const char* kOrchestratorPidEnv = "KP_ORCHESTRATOR_PID";
// kernelpro names a file here for each worker it starts; the worker writes into it the name of
// the evaluation phase it enters ("setup", "correctness", "timing", ...), so that an evaluation
// killed at its timeout ends with the phase named.
constexpr const char* kPhaseFileEnv = "KP_PHASE_FILE";
// A random token kernelpro gives each worker it starts. Every process a candidate starts carries
// it, even one that left the worker's process group and session (setsid, a double fork):
// stopping the worker ends them all (sys::kill_tagged), and so does a worker whose orchestrator
// is gone.
constexpr const char* kWorkerTokenEnv = "KP_WORKER_TOKEN";

struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0, runtime_version = 0;
  std::string pci_bus_id;
  bool nvml = false;              // NVML loaded and the device found
  std::string nvml_error;         // why not, when nvml is false
  // Device-to-device copy bandwidth measured by the worker when it starts (bytes read plus
  // bytes written per second); the physics floor is derived from it. 0 when not measured.
  double dram_bytes_per_s = 0;
  // Peak SM clock, kHz (cudaDevAttrClockRate); with sm_count and the architecture it gives the
  // tensor-core peak of the physics floor (verdict/physics_floor.h). 0 when unknown.
  int sm_clock_khz = 0;
};

struct TimingReport {
  std::string method;             // "events" (one event pair per call) or "graph" (replay of graph_calls calls)
  std::vector<double> samples_s;  // device time per call, one entry per timed trial
  std::vector<double> wall_s;     // launch-to-device-sync wall time per call ("events" only)
  int warmup_calls = 0;
  int input_sets = 0;
  int64_t l2_flush_bytes = 0;     // read (evict_l2) before each timed call ("events")
  // Why sampling stopped (verdict/timing_rule.h): "precise" (the median's 95% interval within
  // median_ci), "budget" (timing_budget_s of loop wall time), "max_trials", "cap"
  // (timing_cap_s of loop wall time, before min_trials were in).
  std::string stop;
  double median_ci_rel = 0;       // half-width of the median's 95% interval / median, at the stop
  double loop_wall_s = 0;         // wall time of the timed loop, every call counted whole
};
nlohmann::json to_json(const TimingReport& t);
TimingReport timing_report_from_json(const nlohmann::json& j);

struct EnergyReport {
  bool measured = false;
  std::string unavailable_reason;  // when not measured
  double joules_per_call = 0;      // counter difference / calls
  double dynamic_joules_per_call = 0;  // minus idle power over the window
  double average_watts = 0;
  double idle_watts = 0;
  double window_s = 0;
  int64_t calls = 0;
  int checked_calls = 0;           // calls whose outputs were checked (kEnergyChecks expected)
  unsigned sm_clock_mhz = 0;       // read at the end of the window
  unsigned temperature_c = 0;
};
nlohmann::json to_json(const EnergyReport& e);
EnergyReport energy_report_from_json(const nlohmann::json& j);  // missing fields default

// What a worker found for one evaluation.
struct WorkerReport {
  Outcome outcome = Outcome::kCrash;
  std::string reason;                    // why, when not ok
  int trials_run = 0;                    // correctness trials completed
  std::vector<OutputCheck> checks;       // per output, from the failing trial or the last one
  std::vector<std::string> output_names;
  std::string mutated_input;             // name of an input the candidate wrote to, if any
  bool reference_failed = false;         // the task's reference failed: the task is at fault
  std::optional<TimingReport> timing;    // present when outcome is ok (or rejected after timing)
  std::optional<EnergyReport> energy;
  double reference_seconds = 0;          // median time of the reference, same method
  std::string reference_note;            // why the worker did not time the reference it was asked to
  // The reference's timing, when this worker timed it (EvalOptions::time_reference or
  // reference_only).
  std::optional<TimingReport> reference_timing;
  uint64_t seed = 0;                     // the seed that drew the inputs
  // Where the worker's time went, seconds: "load", "setup", "correctness", "timing",
  // "reference_timing", "energy" (present when the phase ran).
  std::map<std::string, double> phase_seconds;
  // The anti-cheat rule that fired, when the outcome is rejected or incorrect because of one:
  // side_stream, background_thread, result_cache, batched_calls, input_mutation, constant_output,
  // precision_downgrade, forbidden_library, persisting_l2, timer_patch, lazy_output,
  // aliased_output, constant_rebinding, torch_patch, physics_floor, no_custom_kernel. The reason
  // names it in words. Empty otherwise.
  std::string cheat;
  // The fastest time physics allows for one call (ideal bytes over DRAM bandwidth, ideal FLOPs
  // over peak), seconds, and how it was derived; 0 and empty when not applied.
  double physics_floor_s = 0;
  std::string physics_floor_basis;
  // The DRAM traffic no implementation of one call avoids, bytes: each input and output once
  // and the model's parameters and buffers once. Set by the KernelBench worker (a problem has no
  // [cost] to give an ideal); 0 from the native worker, whose task gives its ideal bytes.
  double io_bytes = 0;
  // Device kernels one call of the candidate launched, by name, when the worker traced them
  // (the KernelBench worker does, through the PyTorch profiler).
  std::vector<std::string> kernels;
};

// What a profile request asks a worker to do once the candidate has passed one correctness
// trial and its warm-up calls (ARCHITECTURE.md, "Profiling").
enum class ProfileMode {
  kCupti,  // collect `metrics` for one call in process with the CUPTI Range Profiler library
  kNvtx,   // run `calls` calls inside the NVTX range "kp_candidate" (the worker runs under ncu)
  kTrace,  // run `calls` calls, each between kp_trace_begin/kp_trace_end (libkp_trace.so injected)
};
const char* to_string(ProfileMode m);  // "cupti", "nvtx", "trace"
std::optional<ProfileMode> profile_mode_from_string(std::string_view s);

struct ProfileRequest {
  ProfileMode mode = ProfileMode::kCupti;
  std::vector<std::string> metrics;  // kCupti: metric names (profile/metric_lists.h)
  std::string rangeprof_library;     // kCupti: absolute path of libkp_rangeprof.so
  int calls = 1;                     // kNvtx, kTrace: calls observed; kCupti profiles one call
  // kCupti: how the kernels are replayed once per counter pass. "user": the worker calls the
  // candidate once per pass, restoring its inputs and flushing L2 before each (kp_rp_collect);
  // "kernel": CUPTI replays each kernel, saving and restoring all device memory around every
  // pass (kp_rp_begin/kp_rp_end, slow with large buffers); "auto" (default): user, and kernel
  // when the candidate's passes launch different kernels.
  std::string replay = "auto";
  int warmup_calls = 3;              // untimed calls after the correctness trial
  // Run one correctness trial against the reference first. Default true; kernelpro profile turns
  // it off because its own evaluation of the same build has just passed (on 2^26-element outputs
  // the host comparison alone costs about a second).
  bool check = true;
};

// The worker's answer. A candidate that fails its correctness trial is reported with that
// outcome and no counters: the profile of a wrong kernel would mislead.
struct ProfileReply {
  Outcome outcome = Outcome::kCrash;
  std::string reason;               // why, when not ok (a CUPTI failure is kRuntimeError naming it)
  ProfileMode mode = ProfileMode::kCupti;
  nlohmann::json range_profile;     // kCupti: libkp_rangeprof's result ({"passes","ranges":[...]})
  int calls = 0;                    // calls run inside the NVTX range or the trace
  double collect_seconds = 0;       // wall time of the collection itself (kCupti: create to end)
  std::map<std::string, double> phase_seconds;  // "load", "setup", "correctness", "warmup", "collect"
  uint64_t seed = 0;
};

// PyTorch's own time for one problem in one mode ("eager", "compile"), as the Python worker
// measured it: milliseconds per forward call over num_trials timed calls after warm-up.
struct BaselineModeResult {
  bool ok = false;
  std::string error;  // why not, when !ok
  double mean_ms = 0, std_ms = 0, min_ms = 0, max_ms = 0, median_ms = 0;
  int num_trials = 0;
  double warmup_s = 0;  // wall time of the warm-up (for compile: includes compilation)
};

// The reply to one baseline request.
struct BaselineReply {
  std::string hardware;       // torch.cuda.get_device_name(), e.g. "NVIDIA H200"
  std::string device;         // "cuda:0"
  std::string torch_version;  // torch.__version__
  std::map<std::string, BaselineModeResult> results;  // by mode
};

// A KernelBench task is {"kind":"kernelbench","name","problem","level","problem_id"}; a native
// task carries its tensors, scalars, resolved tolerances and ideal cost.
nlohmann::json to_json(const task::Task& task);
Result<task::Task> task_from_json(const nlohmann::json& j);
nlohmann::json to_json(const EvalOptions& o);
EvalOptions eval_options_from_json(const nlohmann::json& j);
nlohmann::json to_json(const DeviceInfo& d);
DeviceInfo device_info_from_json(const nlohmann::json& j);
nlohmann::json to_json(const OutputCheck& c);
OutputCheck output_check_from_json(const nlohmann::json& j);
nlohmann::json to_json(const WorkerReport& r);
// kProtocol when a field is missing or has the wrong type; the message names it.
Result<WorkerReport> worker_report_from_json(const nlohmann::json& j);
nlohmann::json to_json(const BaselineModeResult& m);
// kProtocol when "ok" is missing, or an ok result lacks mean_ms; other fields default.
Result<BaselineModeResult> baseline_mode_result_from_json(const nlohmann::json& j);
// Reads hardware, device, torch_version and results of a baseline reply; kProtocol when
// results is missing or one of them is malformed.
Result<BaselineReply> baseline_reply_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ProfileRequest& r);
ProfileRequest profile_request_from_json(const nlohmann::json& j);  // missing fields default
nlohmann::json to_json(const ProfileReply& r);
// kProtocol when outcome or mode is missing or unknown.
Result<ProfileReply> profile_reply_from_json(const nlohmann::json& j);

}  // namespace kp::eval
