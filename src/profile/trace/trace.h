// The system-level view of candidate calls: what the CUPTI activity library (libkp_trace.so,
// injected with CUDA_INJECTION64_PATH) recorded for each call, parsed into plain structs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kp::profile {

struct TraceKernel {
  std::string name;            // demangled when it demangles, else as CUPTI gave it
  std::string mangled_name;
  uint32_t stream = 0;         // CUPTI stream id
  std::array<int64_t, 3> grid{0, 0, 0};
  std::array<int64_t, 3> block{0, 0, 0};
  int registers_per_thread = 0;
  int64_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
  uint64_t start_ns = 0, end_ns = 0;  // CUPTI timestamps
  uint32_t correlation_id = 0;
  double duration_s() const { return static_cast<double>(end_ns - start_ns) * 1e-9; }
};

struct TraceCopy {
  std::string kind;            // "memcpy" or "memset"
  std::string direction;       // memcpy: "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"; memset: ""
  uint64_t bytes = 0;
  uint32_t stream = 0;
  uint64_t start_ns = 0, end_ns = 0;
};

// One candidate call (between the worker's kp_trace_begin and kp_trace_end).
struct TraceCall {
  int index = 0;
  std::vector<TraceKernel> kernels;  // sorted by start
  std::vector<TraceCopy> copies;     // sorted by start
  uint64_t launch_api_calls = 0;     // cudaLaunchKernel/cuLaunchKernel-family API records
  // Derived by summarize_call():
  double span_s = 0;      // first start to last end over kernels and copies
  double busy_s = 0;      // union of device activity intervals
  double gaps_s = 0;      // span_s - busy_s: the device sat idle inside the call
  int streams = 0;        // distinct streams used
};

struct Trace {
  std::vector<TraceCall> calls;  // sorted by index
  TraceCall outside;             // records outside any call (index -1): warm-up, set-up, untraced
  uint64_t dropped_records = 0;  // CUPTI reported records it could not store
  uint64_t incomplete_records = 0;  // delivered before the work finished: kept out of calls
  bool finished = false;         // the footer was read: the traced process exited normally
  std::string error;             // set when the library reported a failure (e.g. CUPTI subscriber busy)
};

}  // namespace kp::profile
