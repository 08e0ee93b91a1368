// The orchestrator's side of the system-level trace: libkp_trace.so's JSON-lines file (format in
// kp_trace_api.h) parsed into the structs of trace.h, per-call derived times, a summary for the
// profile page, and the environment that turns the trace on in a worker. Pure: no I/O except
// trace_environment's path resolution.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/trace/trace.h"
#include "util/result.h"

namespace kp::profile {

// Kernels shorter than this are launch-bound candidates (profiling.md section 7).
inline constexpr double kShortKernelS = 10e-6;

// Parses the whole file. Records of call -1 go to Trace::outside, the others to one TraceCall per
// distinct index (sorted by index; records of a repeated index merge), kernels and copies sorted
// by start. Kernel names are demangled with abi::__cxa_demangle when they demangle (the mangled
// form is kept in mangled_name). Records flagged incomplete are counted in incomplete_records and
// left out. launch_api_calls is, per call, the larger of the runtime and the driver domain's
// launch counts (a runtime launch also appears as its driver launch). Error records are joined
// with "; " into Trace::error; the footer sets dropped_records and finished. Every call (and
// outside) is passed through summarize_call. Empty lines and unknown types are skipped; a last
// line without its newline that is not valid JSON (the process died mid-write) is ignored.
// Errors: kTool "trace line N: ..." for a line that is not a JSON object, lacks a field its
// type needs, or has a field of the wrong type.
Result<Trace> parse_trace(std::string_view jsonl);

// Fills span_s (earliest start to latest end over kernels and copies), busy_s (length of the
// union of their intervals), gaps_s (span_s - busy_s, >= 0) and streams (distinct stream ids of
// kernels and copies). A call with no activity gets zeros. Example: kernels [0,10] and [5,20] ns
// on stream 7, a copy [30,40] ns on stream 8: span 40 ns, busy 30 ns, gaps 10 ns, 2 streams.
void summarize_call(TraceCall& call);

// Per distinct kernel name (demangled) over all calls.
struct TraceKernelStat {
  std::string name;
  uint64_t count = 0;  // executions
  double total_s = 0;  // summed durations
};

// What the profile page shows of a trace. Only calls (not outside) count, except `outside_kernels`.
struct TraceSummary {
  int calls = 0;
  double median_span_s = 0;  // median over calls of span_s
  double median_busy_s = 0;  // median over calls of busy_s
  double median_gaps_s = 0;  // median over calls of gaps_s
  double mean_kernels_per_call = 0;
  double mean_launch_api_calls = 0;              // per call
  std::map<std::string, uint64_t> memcpy_bytes;  // direction ("HtoD", "DtoH", ...) -> bytes, all calls
  uint64_t memset_bytes = 0;                     // all calls
  uint64_t short_kernels = 0;                    // kernel executions shorter than kShortKernelS, all calls
  uint64_t kernels = 0;                          // kernel executions, all calls
  double largest_gap_s = 0;                      // longest single idle stretch inside one call
  std::vector<TraceKernelStat> kernel_stats;     // by total_s, largest first
  std::vector<uint32_t> streams;                 // distinct stream ids used by calls, ascending
  uint64_t outside_kernels = 0;                  // kernel executions outside any call
  uint64_t dropped_records = 0;
  uint64_t incomplete_records = 0;
  bool finished = false;
  std::string error;
};

TraceSummary summarize(const Trace& trace);

// {"calls", "median_span_s", "median_busy_s", "median_gaps_s", "mean_kernels_per_call",
//  "mean_launch_api_calls", "memcpy_bytes": {direction: bytes}, "memset_bytes", "kernels",
//  "short_kernels", "largest_gap_s", "kernel_stats": [{"name", "count", "total_s"}],
//  "streams": [ids], "outside_kernels", "dropped_records", "incomplete_records", "finished",
//  "error" (only when set)}
nlohmann::json to_json(const TraceSummary& s);

// One or two lines for people and LLMs, e.g.
//   "3 calls: median span 41.2 us, busy 30.1 us, idle gaps 11.1 us (largest 6.05 us); 3.0 kernels
//    and 3.0 launch calls per call on 2 streams; 3 of 9 kernels under 10 us; memcpy DtoH 768 KiB;
//    memset 3.0 MiB"
//   "top kernels: square_kernel(float*, int) x3 12.3 us, scale_kernel(float*, int, float) x3 ..."
// (the second line names at most 3 kernels by total time). With no calls: "no calls traced"
// plus the outside kernel count; the error, dropped and incomplete records are appended when set.
std::string describe(const TraceSummary& s);

// The environment variables that inject the trace into a CUDA process:
// {"CUDA_INJECTION64_PATH", absolute lib}, {"KP_TRACE_OUT", absolute out}. Relative paths are
// made absolute against the current directory (the traced process may run elsewhere).
std::vector<std::pair<std::string, std::string>> trace_environment(const std::filesystem::path& lib,
                                                                   const std::filesystem::path& out);

}  // namespace kp::profile
