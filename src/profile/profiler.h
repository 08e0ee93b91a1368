// Collection of the evidence about one candidate, at the three levels of DESIGN.md section 6:
// kernel-level counters (the CUPTI Range Profiler in the warm worker, or ncu on a one-shot
// worker), the system-level trace (a one-shot worker with libkp_trace.so injected) and the
// instruction level (cuobjdump of the built object, joined with ptxas' report). It collects;
// analysis/ interprets. Nothing here prints.
//
// One CUPTI subscriber per process (CUDA 13.0): counters in process and the trace never share a
// process. The Range Profiler runs in the long-lived worker; ncu and the trace each get a fresh
// `kp-worker --once` (or `python -m kernelpro_torch.worker --once`) process of their own.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "build/ptxas_report.h"
#include "eval/worker_client.h"
#include "profile/kernel_metrics.h"
#include "profile/ncu/ncu_runner.h"
#include "profile/sass/cuobjdump.h"
#include "profile/sass/sass_summary.h"
#include "profile/trace/trace.h"
#include "task/task.h"
#include "util/result.h"
#include "verdict/eval_options.h"

namespace kp::profile {

struct ProfilerOptions {
  // libkp_rangeprof.so, for Collector::kCupti (by default beside kp-worker). Required for it.
  std::filesystem::path rangeprof_library;
  // libkp_trace.so, for trace(). Required for it.
  std::filesystem::path trace_library;
  // The one-shot worker's command line before "--once REQ REPLY": {"/abs/kp-worker"} for native
  // tasks, {python, "-m", "kernelpro_torch.worker"} for KernelBench. Required for ncu and trace.
  std::vector<std::string> once_argv;
  // Extra environment of the one-shot worker (PYTHONPATH for the Python worker). Default none.
  std::vector<std::pair<std::string, std::string>> once_env;
  // ncu's options; metrics and log_file are set per run by counters().
  NcuOptions ncu;
  // How cuobjdump is found.
  SassToolOptions sass;
  // Where request, reply, log and trace files go. Required.
  std::filesystem::path scratch_dir;
  // Limit of one collection (a worker request or one-shot process), seconds. Default 300.
  double timeout_s = 300;
  // Calls recorded by trace(). Default 3.
  int trace_calls = 3;
  // Untimed candidate calls before any observed call. Default 3.
  int warmup_calls = 3;
  // One correctness trial in each profile request (verdict/protocol.h, ProfileRequest::check).
  // Default true; kernelpro profile sets it false after its own evaluation passed.
  bool check = true;
  // Counter-pass replay of Collector::kCupti (eval::ProfileRequest::replay): auto, user, kernel.
  std::string replay = "auto";
};

// What the worker needs to run the candidate: the same parts an eval request carries.
struct ProfileTarget {
  task::Task task;
  std::filesystem::path reference;  // native: the reference .so; KernelBench: the problem .py
  std::filesystem::path candidate;  // native: the candidate .so; KernelBench: the candidate .py
  eval::KernelBenchFiles files;     // KernelBench: prebuilt library or torch_extensions dir
  eval::EvalOptions options;
};

class Profiler {
 public:
  // `worker` is the warm worker of the evaluation (used for kCupti); it must outlive this.
  Profiler(ProfilerOptions options, eval::WorkerClient& worker);

  // Counters of every kernel of one candidate call. kCupti: a "profile" request to the warm
  // worker. kNcu: ncu on a one-shot worker, scoped by the NVTX range "kp_candidate"; the warm
  // worker is stopped first, since the GPU's counters serve one profiling session at a time and
  // the worker keeps its Range Profiler session between requests (ncu reports "a driver resource
  // was unavailable" otherwise, seen on the H200). The
  // candidate first passes one correctness trial; when it does not, kInvalidInput saying so.
  // Other errors: the collector's (ncu missing: kNotFound; counters not permitted: kUnavailable,
  // with the fix; an unknown metric: kInvalidInput), a worker crash or timeout: kTool.
  // `ncu` replaces options.ncu for this run when given (the comparison run turns cache control off).
  Result<KernelProfile> counters(const ProfileTarget& target, const std::vector<std::string>& metrics,
                                 Collector collector, const NcuOptions* ncu = nullptr);

  // The system-level trace of options.trace_calls candidate calls. Errors as counters().
  Result<Trace> trace(const ProfileTarget& target);

  // The SASS of a built object, per kernel, joined with its ptxas report. kNotFound without
  // cuobjdump (with the ways to get one). It reads only the options, so it may run on another
  // thread alongside counters() and trace() (the profile page does so).
  Result<std::vector<KernelSass>> sass(const std::filesystem::path& object, const build::PtxasReport& ptxas,
                                       int cc_major, int cc_minor);
  // Starts disassembling `object` on a thread of its own, into the process's listing cache that
  // sass() reads first (keyed by the object's path, size and modification time), and returns at
  // once; sass() then waits for that run rather than starting another. The model loop calls it
  // as it builds each candidate (and the seed, before its first evaluation), so the analysis
  // finds the SASS ready: 0.9-1.2 s of cuobjdump a candidate that the GPU otherwise waited for
  // (bench/results/h100-2026-12-07-loop). A failure shows at the sass() call, which tries again.
  static void prefetch_sass(const SassToolOptions& options, const std::filesystem::path& object);
  // The listing of `object` through that cache (what sass() reads before joining it with ptxas).
  static Result<SassListing> sass_listing(const SassToolOptions& options, const std::filesystem::path& object);

 private:
  // A one-shot worker run: the command that answers `request` and the file it answers into.
  struct OnceRun {
    sys::Command command;
    std::filesystem::path reply_path;
  };
  Result<OnceRun> prepare_once(const ProfileTarget& target, const eval::ProfileRequest& request, const std::string& tag);
  // Reads and checks a one-shot worker's reply; a candidate that failed is kInvalidInput.
  Result<eval::ProfileReply> read_once_reply(const OnceRun& run, const std::string& what);

  ProfilerOptions options_;
  eval::WorkerClient& worker_;
  int runs_ = 0;
};

}  // namespace kp::profile
