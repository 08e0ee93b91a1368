// Options of one evaluation: how correctness is checked, how time and energy are measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kp::eval {

struct EvalOptions {
  // Correctness trials, each with fresh random inputs. Default 3.
  int correctness_trials = 3;
  // Seed of the input generator. Unset: a private seed drawn from the OS per evaluation, so a
  // candidate cannot be tuned to the inputs. Set (--seed) to reproduce an evaluation.
  std::optional<uint64_t> seed;
  // Calls before timing starts (module load, first-touch, clocks ramping). Default 5.
  int warmup_calls = 5;
  // Sampling of the timed calls (verdict/timing_rule.h, the one rule both workers apply). After the
  // warm-up, timed calls go on until the 95% confidence interval of the median is within
  // +-median_ci of it (relative; default 0.5%), once at least min_trials samples are in; or until
  // the timed loop has taken timing_budget_s of wall time (every timed call counted whole: the
  // L2 flush, the output poisoning, the synchronizations and the output check; default 1 s); or
  // max_trials samples (default 2000). A sample is one call (events) or one graph replay.
  double timing_budget_s = 1.0;
  // A hard cap on the timed loop's wall time that min_trials does not override: once it is spent
  // with at least kCapMinSamples samples in, sampling stops ("cap"). Slow calls (or a candidate
  // that makes the harness slow) get fewer samples and a verdict, not a timeout. 0: no cap.
  double timing_cap_s = 10.0;
  int min_trials = 20;
  int max_trials = 2000;
  double median_ci = 0.005;
  // Whether the worker times the reference in this evaluation. The judge (driver/judge.h) times
  // each reference once per run, alone in a worker that has never loaded a candidate
  // (reference_only), and then sends false: the verdict quotes that measurement.
  bool time_reference = true;
  // Time the reference alone: no candidate is loaded, nothing is checked; the report carries
  // reference_seconds and reference_timing. Set by the judge, never by a user.
  bool reference_only = false;
  // Input sets that the timed calls rotate through, so repeated calls do not see their inputs
  // already in L2. Capped so that all sets fit in a quarter of free device memory. Default 3.
  int input_sets = 3;
  // Calls below this median time are timed by CUDA-graph replay instead of one event pair per
  // call, which would mostly measure launch overhead. Microseconds; default 20.
  double graph_threshold_us = 20.0;
  // Calls captured into one graph when graph replay is used. Default 20.
  int graph_calls = 20;
  // Work escaped the stream when the wall time of a call (launch to device-wide sync) exceeds
  // wall_ratio * event time + wall_slack_us. Defaults 1.5 and 100 us.
  double wall_ratio = 1.5;
  double wall_slack_us = 100.0;
  // Energy: NVML total-energy counter around back-to-back calls for at least this long
  // (the counter updates about every 100 ms). Seconds; default 0.5. 0 disables energy.
  double energy_window_s = 0.5;
  // Idle power window, measured once per worker. Seconds; default 0.5.
  double idle_window_s = 0.5;
  // Watchdog: the worker is killed and the outcome is `timeout` when one evaluation takes
  // longer than this. Seconds; default 120.
  double timeout_s = 120.0;
  // Physics floor: a median below (ideal bytes / (dram_bytes_per_s * physics_margin)) or
  // (ideal FLOPs / (peak FLOP/s * physics_margin)) is rejected as impossible. Default 1.3.
  double physics_margin = 1.3;
  // KernelBench tasks: "kernelbench" compares in the problem's dtype with KernelBench's
  // tolerance (1e-4 fp32, 1e-2 fp16/bf16) plus a relative-norm check; "fp64" also runs the
  // reference in float64 and requires the candidate to be within the tolerance of that.
  std::string precision_policy = "kernelbench";
  // KernelBench tasks: reject a candidate that launches any kernel it did not build itself
  // (PyTorch, cuBLAS, cuDNN). Off by default: KernelBench lets a candidate keep PyTorch ops.
  bool strict_kernels = false;
  // KernelBench tasks: accept a ModelNew that runs no kernel of its own (PyTorch and library
  // kernels only), which is otherwise rejected as no_custom_kernel. For profiling a problem's
  // reference as the seed of `kernelpro generate`; never set for a candidate's verdict.
  bool library_only_ok = false;
  // KernelBench tasks: the precision the model and its floating inputs are cast to ("fp32",
  // "fp16", "bf16"), as KernelBench's --precision; integer and bool inputs keep their dtype.
  std::string precision = "fp32";
};

}  // namespace kp::eval
