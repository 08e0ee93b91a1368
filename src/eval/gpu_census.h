// Whether the GPU carried another process's work while a reference was timed (issue 28, item 4).
//
// A candidate can leave a process behind that runs GPU work only while the reference is timed
// (it waits for its own worker to die): the reference's time, kept for the whole run, is then
// inflated, and so is every later speedup. Stopping the candidates' worker ends what carries its
// token (WorkerClient), but a process that replaced its environment is not found that way. So
// once the reference worker has timed the reference, and while it sits idle, kernelpro looks:
//   1. the census: the processes that hold a compute context on the device (NVML). Only the
//      reference worker: nothing else could have run, and the check costs a millisecond.
//   2. others hold contexts: the device's utilization samples (NVML keeps one per period, 1/6 s
//      to 1 s depending on the product) over a window in which our worker is idle. Kernels there
//      are another process's: the reference's time is not trusted, and the evaluation is the
//      machine's failure (Outcome::kGpuUnavailable: retried by the judge, never a verdict).
// Decided by pure functions below; GpuWatch reads NVML (dlopen, no CUDA context).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/result.h"

namespace kp::eval {

struct GpuProcess {
  unsigned pid = 0;
  uint64_t used_bytes = 0;
};

struct UtilSample {
  uint64_t time_us = 0;  // CPU time (µs since the epoch) at the end of the sample's period
  unsigned percent = 0;  // share of the period in which a kernel ran
};

// The processes other than the worker: all but `worker_pid` when the census lists it; else (a
// container, where NVML gives the host's pids) all of them but one, the worker's, when the
// census has any.
std::vector<GpuProcess> other_processes(const std::vector<GpuProcess>& census, int worker_pid);

// "pid 123 (2048 MiB), pid 456 (512 MiB)".
std::string describe(const std::vector<GpuProcess>& processes);

struct IdleVerdict {
  int judged = 0;          // samples whose whole period lay inside the idle window
  unsigned max_percent = 0;  // the busiest of them
  bool busy() const { return max_percent > 0; }
};

// The samples whose whole period fell after idle_from_us. A sample's period is the largest gap
// between consecutive samples, at most 1 s (period_us when fewer than two samples are given, 0 for unknown:
// then only samples later than idle_from_us + 1 s count).
IdleVerdict judge_idle_window(const std::vector<UtilSample>& samples, uint64_t idle_from_us, uint64_t period_us = 0);

// The largest gap between consecutive samples (at most 1 s: NVML's longest period), or 0 with
// fewer than two.
uint64_t sample_period_us(const std::vector<UtilSample>& samples);

// One process's share of the SMs over one NVML sample period (nvmlDeviceGetProcessUtilization).
struct ProcessSample {
  unsigned pid = 0;
  uint64_t time_us = 0;
  unsigned sm_percent = 0;
};

// The pids other than the worker's that ran kernels in these samples. When the worker's pid is
// not among the census's (another pid namespace), two or more active pids mean foreign work: all
// of them are returned; one alone is taken for the worker's.
std::vector<unsigned> foreign_active_pids(const std::vector<ProcessSample>& samples, int worker_pid,
                                          const std::vector<GpuProcess>& census);

// NVML on one device, for the census and the samples. kUnavailable where NVML cannot be loaded
// or the device is not found: the check is then skipped and the reference's timing says so.
class GpuWatch {
 public:
  static Result<std::unique_ptr<GpuWatch>> open(const std::string& pci_bus_id);
  ~GpuWatch();
  GpuWatch(const GpuWatch&) = delete;
  GpuWatch& operator=(const GpuWatch&) = delete;

  Result<std::vector<GpuProcess>> compute_processes();
  // The device's utilization samples later than since_us (CPU µs since the epoch).
  Result<std::vector<UtilSample>> utilization_since(uint64_t since_us);
  // Each process's SM utilization samples later than since_us.
  Result<std::vector<ProcessSample>> process_utilization_since(uint64_t since_us);

 private:
  GpuWatch() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Now, as NVML stamps samples: CPU µs since the epoch.
uint64_t epoch_us();

struct ForeignWork {
  bool checked = false;   // false: NVML was not there; `note` says why
  bool busy = false;      // another process ran kernels while our worker was idle
  std::string note;       // what was found, for the reference's timing and the reason
};

// The check after a reference was timed by the worker `worker_pid`, which is now idle.
// census_before: the census taken before the request went out; window_from_us: when it went out.
// Others held the GPU, before or now: their own SM samples over the window first (work that ran
// beside the reference's), then an idle window of at least two device sample periods, at most
// max_wait_s (work that runs whenever our worker lives).
ForeignWork check_foreign_work(GpuWatch& watch, int worker_pid, const std::vector<GpuProcess>& census_before,
                               uint64_t window_from_us, double max_wait_s = 2.5);

}  // namespace kp::eval
