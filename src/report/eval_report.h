// Printers for one evaluation: a table for people and JSON for machines.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "eval/evaluator.h"

namespace kp::report {

// A human-readable verdict: outcome, reason, correctness per output, time (median and spread),
// speedup over the reference, achieved bandwidth and FLOP/s against the task's ideal, energy,
// the ptxas resource report, and how the wall time split. For a KernelBench task: the problem
// (level, id), the candidate's form (load_inline or prebuilt .cu), the speedup over the
// problem's Model timed in the same run; for both kinds the cheat tag, the physics floor and the
// traced kernels when the worker reported them.
std::string format_eval_text(const task::Task& task, const eval::EvalResult& result);
// Its JSON, the same content with stable field names: eval::result_to_json (eval/result_json.h).

}  // namespace kp::report
