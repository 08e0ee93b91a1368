// The worker's handles on the profiling libraries it may find in its own process:
// libkp_rangeprof.so (the CUPTI Range Profiler, src/profile/cupti/kp_rangeprof_api.h), loaded
// on request by absolute path, and libkp_trace.so (the CUPTI activity tracer,
// src/profile/trace/kp_trace_api.h), injected by the driver through CUDA_INJECTION64_PATH.
// Both are plain C APIs reached through dlopen/dlsym, so kp-worker links no CUPTI itself and
// runs where CUPTI is missing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace kp::worker {

// Collects metric values for the kernels launched by `work` with the Range Profiler (auto
// range: one range per kernel). The library is loaded once per process and kept, and so is the
// session of the last metric list: the next request with the same list skips its set-up. The
// session holds eval::kFirstRangeCapacity launches at first (verdict/worker_plan.h); a call that
// launches more is collected again on a session grown to hold them (grown_range_capacity), which
// the worker keeps, and the
// result says "capacity_grown_from". Not thread-safe (the worker serves one request at a time).
// replay (eval::ProfileRequest::replay): "user" calls prepare then work once per counter pass
// (kp_rp_collect); "kernel" calls work once and CUPTI replays each kernel (kp_rp_begin/
// kp_rp_end); "auto" is user, and kernel (prepare, then work once more) when the passes
// launched different kernels, with "replay_fallback" in the result saying why. `prepare`
// restores what `work` overwrites and flushes caches; before a kernel-replay collection the
// caller has done that itself. Both return an empty string on success or the reason they
// failed, returned as kTool.
// Returns the library's JSON result ({"passes", "replay", "ranges":[{"name","values"}], ...})
// and sets *collect_s to the wall time of create..end. kNotFound when the library cannot be
// loaded, kUnavailable when CUPTI refuses (counter permission, unsupported device), and
// kInvalidInput when a metric name or the replay is unknown; each message says what to do.
Result<nlohmann::json> collect_range_profile(const std::string& library_path, const std::vector<std::string>& metrics,
                                             const std::string& replay, const std::function<std::string()>& prepare,
                                             const std::function<std::string()>& work, double* collect_s);

// Makes the kept session of `metrics` ready before a candidate needs it: creates it and runs
// one user-replay collection of `work` (a trivial launch), so that the session's set-up and its
// first cuptiRangeProfilerStart (0.3 s and 0.4 s on the H200) are paid here, off the critical
// path, and not by the next profile request. Returns the seconds it took; errors as
// collect_range_profile.
Result<double> prewarm_range_profiler(const std::string& library_path, const std::vector<std::string>& metrics,
                                      const std::function<std::string()>& work);

// Destroys the kept Range Profiler session, if any. The worker keeps the session through
// evaluations (on the H200, timing with a session held but not collecting matched timing
// without one: bench/results/h200-2026-12-03-warm/); this is for tests and shutdown.
void release_range_profiler();

// kp_trace_begin/kp_trace_end of an injected libkp_trace.so. kNotFound (saying how to inject it)
// when CUDA_INJECTION64_PATH is unset or the library loaded there does not export them.
struct TraceMarks {
  int (*begin)(int call_index) = nullptr;
  int (*end)(int call_index) = nullptr;
};
Result<TraceMarks> find_trace_marks();

}  // namespace kp::worker
