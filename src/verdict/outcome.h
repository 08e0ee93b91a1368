// The verdict of one evaluation. Outcomes are data: they are stored, printed and fed to the
// search, never thrown.
#pragma once

#include <optional>
#include <string_view>

namespace kp::eval {

enum class Outcome {
  kOk,            // correct on every trial; timed
  kCompileError,  // nvcc failed; diagnostics attached
  kLoadError,     // dlopen failed or kp_run is not exported
  kRuntimeError,  // kp_run returned non-zero, or a recoverable CUDA error (bad launch, OOM)
  kCrash,         // the worker died (signal, abort) or the CUDA context was poisoned (illegal address)
  kTimeout,       // the worker's watchdog fired: a hang or an infinite loop
  kIncorrect,     // wrong values, unwritten outputs, mutated inputs, NaN
  kRejected,      // a cheat or a measurement that cannot be trusted (work escaped the stream)
  kNotRun,        // no GPU on this machine: built only
  // The machine's failure, not the candidate's: out of device memory while another process holds
  // the GPU's memory (named in the reason). The judge retries it on a fresh worker; the search
  // never records it as a verdict or a lesson and stops, to resume when the GPU is free.
  kGpuUnavailable,
};

// "ok", "compile_error", "load_error", "runtime_error", "crash", "timeout", "incorrect",
// "rejected", "not_run", "gpu_unavailable".
const char* to_string(Outcome outcome);

// True for the outcomes that say something about the machine and nothing about the candidate
// (not_run, gpu_unavailable): never a verdict to store, learn from or repair.
bool is_machine_outcome(Outcome outcome);
std::optional<Outcome> outcome_from_string(std::string_view name);

}  // namespace kp::eval
