// A verdict as JSON: what `kernelpro eval --json` prints, what a run's store keeps per candidate
// and what the profile page nests under "eval". Stable field names; outcomes as strings.
#pragma once

#include <nlohmann/json.hpp>

#include "eval/evaluator.h"

namespace kp::eval {

// The task, the candidate, the outcome and reason (with the cheat tag), the candidate's output,
// the wall time's parts, for a KernelBench problem its level and the candidate's form; the worker's
// report, device and builds (ptxas resources, diagnostics); when timed, the time statistics,
// the reference's median, the speedup and the achieved bandwidth and FLOP/s.
nlohmann::json result_to_json(const task::Task& task, const EvalResult& result);

}  // namespace kp::eval
