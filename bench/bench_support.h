// Shared set-up of the benchmarks: an evaluator over a scratch directory, and a bench task
// derived from an example with other symbol values.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "eval/evaluator.h"
#include "sys/temp_dir.h"
#include "task/task.h"

namespace kp::bench {

std::filesystem::path source_dir();
std::filesystem::path worker_binary();

// A copy of examples/<example> in dir with task.toml's [symbols] values replaced, so a bench
// can size a kernel without a second copy of its sources in the tree.
Result<task::Task> resized_example(const std::string& example, const std::map<std::string, int64_t>& symbols,
                                   const std::filesystem::path& dir);

// Evaluator options for benchmarks: default evaluation settings, a cache under scratch.
eval::EvaluatorOptions bench_options(const std::filesystem::path& scratch);

// Prints one aligned "name  value unit" line and flushes, so partial runs keep their figures.
void report(const std::string& name, double value, const std::string& unit);

}  // namespace kp::bench
