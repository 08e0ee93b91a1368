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
};

// "ok", "compile_error", "load_error", "runtime_error", "crash", "timeout", "incorrect",
// "rejected", "not_run".
const char* to_string(Outcome outcome);
std::optional<Outcome> outcome_from_string(std::string_view name);

}  // namespace kp::eval
