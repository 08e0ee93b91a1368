// Reading what a model wrote: the candidate's source files out of fenced code blocks, a JSON
// object (the planner's and the analyst's answers), and, when there is nothing usable, the
// precise reason, which becomes the repair prompt ("the ```cuda block is not closed: the reply
// was cut off ...").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace kp::agent {

struct CodeBlock {
  std::string lang;  // the info string after ``` ("cuda", "cpp", "python", ""), lowercased
  std::string code;
  bool closed = true;  // false: the reply ended inside the block
};

// Every fenced block (``` or ~~~, three or more), in order.
std::vector<CodeBlock> code_blocks(std::string_view text);

enum class TaskKind { kNative, kKernelBench };

struct CandidateFiles {
  std::string cuda;    // native: the whole .cu; KernelBench fast form: the .cu with extern "C" launchers
  std::string python;  // KernelBench: the .py with ModelNew (empty for native)
};

// The candidate in a reply. Native: exactly one CUDA block (cuda, cu, cpp, c++, or unlabelled
// with __global__) that defines kp_run. KernelBench: one Python block with class ModelNew, plus
// one CUDA block with an extern "C" launcher, unless the Python builds its own (load_inline).
// Errors (kInvalidInput) carry the reason in words for the repair prompt.
Result<CandidateFiles> extract_candidate(std::string_view reply, TaskKind kind);

// The first JSON object in the reply: a ```json block, else the first balanced {...}. Errors
// say what was missing or where the JSON broke.
Result<nlohmann::json> extract_json_object(std::string_view reply);

// A long log cut to what a model needs: compiler errors first (each with the two lines after
// it, duplicates dropped, at most `max_errors`), then as many other lines as fit `max_bytes`,
// with a line saying how much was left out. A log under max_bytes with no more errors than
// max_errors comes back whole.
std::string cut_log(std::string_view log, size_t max_bytes = 4000, int max_errors = 10);

}  // namespace kp::agent
