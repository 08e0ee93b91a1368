#include "verdict/outcome.h"

namespace kp::eval {

namespace {
constexpr std::pair<Outcome, const char*> kNames[] = {
    {Outcome::kOk, "ok"},
    {Outcome::kCompileError, "compile_error"},
    {Outcome::kLoadError, "load_error"},
    {Outcome::kRuntimeError, "runtime_error"},
    {Outcome::kCrash, "crash"},
    {Outcome::kTimeout, "timeout"},
    {Outcome::kIncorrect, "incorrect"},
    {Outcome::kRejected, "rejected"},
    {Outcome::kNotRun, "not_run"},
    {Outcome::kGpuUnavailable, "gpu_unavailable"},
};
}  // namespace

const char* to_string(Outcome o) {
  for (const auto& [v, n] : kNames) {
    if (v == o) return n;
  }
  return "crash";
}

bool is_machine_outcome(Outcome o) { return o == Outcome::kNotRun || o == Outcome::kGpuUnavailable; }

std::optional<Outcome> outcome_from_string(std::string_view name) {
  for (const auto& [v, n] : kNames) {
    if (name == n) return v;
  }
  return std::nullopt;
}

}  // namespace kp::eval
