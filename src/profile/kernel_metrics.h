// Hardware-counter values of the kernels one candidate call launched, as a collector read them:
// ncu (profile/ncu/) or the CUPTI Range Profiler inside the worker (profile/cupti/). Both fill
// the same struct, so the analysis never knows which one ran. Values are in ncu's base units
// (`--print-units base`): nanoseconds, bytes, hertz, percent, counts.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kp::profile {

// Which tool collected the counters.
enum class Collector {
  kCupti,  // CUPTI Range Profiler in the worker process (kernel replay, auto range): the default
  kNcu,    // Nsight Compute on a one-shot worker, scoped by the NVTX range "kp_candidate"
};
const char* to_string(Collector c);                      // "cupti", "ncu"
std::optional<Collector> collector_from_string(std::string_view s);

// One kernel launch and its metric values.
struct KernelMetrics {
  std::string name;          // function name as the collector prints it: ncu's demangled
                             // "rowsoftmax(const float *, float *, int)", CUPTI's range name
  int64_t launch_index = 0;  // order within the profiled call, from 0
  std::array<int64_t, 3> grid{0, 0, 0};   // blocks; 0s when the collector did not report them
  std::array<int64_t, 3> block{0, 0, 0};  // threads per block
  std::map<std::string, double> values;       // metric name -> value, base units
  std::map<std::string, std::string> units;   // metric name -> unit as ncu printed it ("" if none)
  std::map<std::string, std::string> text;    // metric name -> a non-numeric value ("PolicySpread")

  // The value of a metric, or nullopt when it was not collected or was "n/a".
  std::optional<double> get(std::string_view metric) const;
  // get(metric) or `fallback`.
  double get_or(std::string_view metric, double fallback) const;
};

// What one collection produced for one candidate call.
struct KernelProfile {
  Collector collector = Collector::kCupti;
  std::vector<KernelMetrics> kernels;  // in launch order
  std::vector<std::string> metrics;    // the metric names that were asked for
  double wall_s = 0;                   // wall time of the whole collection, seconds (the worker
                                       // request or the ncu run, with their set-up)
  double collect_s = 0;                // the collector's own part: CUPTI create..end in the
                                       // worker; for ncu, its whole run
  int passes = 0;                      // replay passes per kernel when the collector says, else 0
  // Launches of the call that were not profiled: the call launched more kernels than the CUPTI
  // session holds (it grows to at most 256, eval::kMostRangeCapacity), and `kernels` are its
  // first ones, a sample (as `ncu --launch-count`). Rates and shares read from them hold; sums
  // over the call do not. 0 when every launch is here.
  int64_t unprofiled_launches = 0;
  // CUPTI: the session's capacity (launches one collection holds), and the capacity it had
  // before this call overflowed it and it grew (the call was collected again); 0 when it did not.
  int capacity = 0;
  int capacity_grown_from = 0;
  std::string replay;                  // CUPTI: "user" or "kernel" (how the passes were replayed);
                                       // empty for ncu
  std::string replay_fallback;         // CUPTI: why user replay gave way to kernel replay, if it did
  // CUPTI: where the time went, seconds: the library's own steps ("create", "begin", "end",
  // "prepare", "passes") and the worker request's phases ("worker.load", "worker.setup",
  // "worker.warmup", "worker.collect"). Empty for ncu.
  std::map<std::string, double> timing_s;
  std::string log_path;                // ncu: the --log-file it wrote; empty for CUPTI
};

// Sums of additive metrics over every kernel of a call (counts, bytes, durations: names ending
// in ".sum"), and duration-weighted means of the rest (percentages, rates, ".avg", ".ratio",
// ".pct"), weighted by gpu__time_duration.sum. Values missing from every kernel stay missing.
// The name is "<N kernels>" when there are several, else the kernel's own.
KernelMetrics combine_kernels(const std::vector<KernelMetrics>& kernels);

}  // namespace kp::profile
