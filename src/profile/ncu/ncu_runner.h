// Kernel-level profiling through Nsight Compute: runs a program under `ncu`, scoped to the
// kernels launched inside an NVTX range, and reads the counters back from ncu's log file
// (DESIGN.md section 6). The program is normally a one-shot `kp-worker --once` whose profile
// request runs the candidate inside the range "kp_candidate".
//
// The command line (ncu_argv) is always
//   ncu --clock-control none --cache-control all --replay-mode kernel --target-processes all
//       [--nvtx --nvtx-include RANGE/] (--metrics A,B,... | --set full)
//       --csv --page raw --print-units base --log-file LOG  PROGRAM ARGS...
// Clocks are left as found (the GPU machines' rule), caches are flushed before every replay pass
// (cold-cache numbers), each kernel is replayed on its own, and child processes are followed.
//
// Thread safety: the functions keep no state and may be called from any thread. Two ncu runs on
// one GPU at the same time disturb each other's counters: callers serialise runs per GPU.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "profile/kernel_metrics.h"
#include "profile/metric_lists.h"
#include "sys/subprocess.h"
#include "util/result.h"

namespace kp::profile {

struct NcuOptions {
  // The ncu executable. Empty: the first `ncu` in PATH, then /usr/local/cuda/bin/ncu, then the
  // newest /opt/nvidia/nsight-compute/*/ncu (find_ncu).
  std::filesystem::path ncu{};
  // Metric names for --metrics, in base units (profile/metric_lists.h). Must be non-empty unless
  // set_full. Default: the stage-1 list.
  std::vector<std::string> metrics = stage1_metrics();
  // Only kernels launched inside this NVTX push/pop range (default domain) are profiled: adds
  // `--nvtx --nvtx-include "RANGE/"`. Empty: every kernel of the program is profiled.
  std::string nvtx_range = "kp_candidate";
  // Where ncu writes its output (--log-file): the CSV table and its ==PROF==/==WARNING==/
  // ==ERROR== lines, kept apart from the program's own stdout. Required; an existing file is
  // replaced. Reported back in KernelProfile::log_path.
  std::filesystem::path log_file{};
  // Wall-clock limit of the whole ncu run (every replay pass included), seconds; the process
  // group is killed past it. Default 300 s; 0 or less: no limit.
  double timeout_s = 300;
  // `--set full` instead of --metrics: every section's metrics, many replay passes (about 40 on
  // an H200, twice the time). Only for comparison runs against ncu's own analysis; never the
  // default.
  bool set_full = false;
  // --cache-control: kFlushAll (ncu's default: caches flushed and invalidated before every
  // replay pass) or kNone (caches as the previous pass left them, which is what the CUPTI Range
  // Profiler's kernel replay gives; kernelpro profile --compare-ncu uses it so that the two
  // collectors measure the same thing).
  enum class CacheControl { kFlushAll, kNone } cache_control = CacheControl::kFlushAll;
};

// The ncu executable that run_ncu would use. With options.ncu set: that path when it is an
// executable file, else kNotFound naming it. Otherwise the search above, or kNotFound: "ncu
// (Nsight Compute) not found in PATH, /usr/local/cuda/bin or /opt/nvidia/nsight-compute; install
// Nsight Compute 2023.1 or newer or pass --ncu PATH". Reads the PATH environment variable.
Result<std::filesystem::path> find_ncu(const NcuOptions& options);

// The full argv of the ncu run (see the top of this file): `ncu` first, `program_argv` last,
// unchanged. Pure. With set_full the metrics are not passed.
std::vector<std::string> ncu_argv(const NcuOptions& options, const std::filesystem::path& ncu,
                                  const std::vector<std::string>& program_argv);

// Runs `program` under ncu (its argv appended to ncu_argv; its cwd, environment edits, rlimits
// and max_capture_bytes kept; its timeout replaced by options.timeout_s) and parses the log file.
// On success: collector kNcu, the profiled kernels in launch order (parse_ncu_raw_csv), metrics =
// options.metrics (empty with set_full), wall_s = the whole ncu run, passes = the largest
// profiler__replayer_passes among the kernels (0 when absent), log_path = options.log_file.
// Errors, each saying what to do:
//   kInvalidInput  empty program argv, empty metrics without set_full, empty log_file; or ncu
//                  rejected a metric name (the message names it: "ncu rejected the metric X on
//                  this GPU ..."); ncu 2025.3 also drops an unknown metric silently and exits 0
//                  (seen on the H200): a requested metric with no column in the table is
//                  reported the same way
//   kNotFound      no ncu (find_ncu); or no kernel was profiled ("No kernels were profiled", or
//                  an empty table): no kernel ran inside the NVTX range
//   kUnavailable   ERR_NVGPUCTRPERM anywhere in ncu's output or log: counters restricted to
//                  admin users (the fix is spelled out)
//   kTimeout       the run passed options.timeout_s
//   kTool          ncu printed ==ERROR== lines (quoted, up to 5); the program failed (ncu reports
//                  "The application returned an error code", or ncu exited non-zero): the
//                  message has how it ended and the last lines of its stderr; the log could not
//                  be read or parsed
// The program's stdout and stderr are captured, not printed.
Result<KernelProfile> run_ncu(const NcuOptions& options, const sys::Command& program);

// The version `ncu --version` prints on its line "Version 2025.3.1.0 (build 36398880)
// (public-release)": "2025.3.1.0". kTool when no such line is found (the message quotes the
// output). Pure.
Result<std::string> parse_ncu_version(std::string_view version_output);

// Runs `ncu --version` (10 s limit) and parses it. Errors: kNotFound (cannot run it), kTool (it
// failed or printed no version), kTimeout.
Result<std::string> ncu_version(const std::filesystem::path& ncu);

}  // namespace kp::profile
