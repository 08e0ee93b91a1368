// The four roles of the loop (DESIGN.md section 8), each a prompt template rendered with the
// task and the evidence, one or more LLM calls, and a parser for the answer:
//
//   planner   picks the next direction from the feedback and the lessons so far; answers a JSON
//             object {"direction": "...", "actions": [...], "why": "..."}.
//   coder     writes the whole candidate; may call tools first (compile_check a draft, run an
//             analysis tool by name, search code) when the provider supports tool calling.
//   debugger  fixes a candidate that did not compile or gave wrong answers, from the cut
//             diagnostics and the failing check.
//   analyst   asks for extra analysis tools by name; answers {"tools": [...]} from the list it
//             is given.
//
// Repair: a reply the parser cannot use (no code, a cut-off block, no kp_run, no JSON, a tool
// name not on the list) is answered, in the same conversation, with the `repair` template and
// the parser's reason, up to AgentOptions::max_repairs times. Tool calls: each call's result is
// appended as a tool message and the model asked again, up to max_tool_rounds; then it is told
// to answer without tools.
//
// Templates (prompts/): planner, coder_native, coder_kernelbench, debugger_native,
// debugger_kernelbench, analyst, repair, tool_rounds_over, system.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/prompt_library.h"
#include "agent/reply_parse.h"
#include "llm/client.h"

namespace kp::agent {

// What every role is told about the task.
struct TaskBrief {
  TaskKind kind = TaskKind::kNative;
  std::string name;
  std::string description;  // the task's own words, shapes and dtypes
  std::string interface;    // native: task.toml and the ABI summary; KernelBench: the problem's .py
  std::string reference;    // the reference implementation's source (native reference.cu)
  std::string current;      // the best candidate so far (its files, as the coder should see them)
  std::string gpu;          // "NVIDIA H200 (sm_90a, 132 SMs, 4.27 TB/s measured DRAM)"
  // What usually wins for this kind of work (prompts/playbook_<kind>.md, task/work_kind.h); the
  // optimize loop's, "" elsewhere (the section is then left out).
  std::string playbook;
};

// The coder's tools. Each handler returns the text the model gets back; it never throws.
struct CoderTools {
  std::function<std::string(const std::string& source)> compile_check;  // nvcc on a draft
  std::function<std::string(const std::string& tool)> run_analysis_tool;  // an analyze tool by name
  // CUTLASS/CuTe code search (codesearch/): ranked declarations with path:lines, the numbered
  // lines of a file by range, the entries of a directory; paths relative to the CUTLASS root.
  std::function<std::string(const std::string& query)> search_code;
  std::function<std::string(const std::string& path, int start_line, int end_line)> read_code;
  std::function<std::string(const std::string& dir)> list_code;
  std::string cutlass_version;  // of the headers the code tools read and candidates build with
  std::vector<std::string> analysis_tool_names;  // listed in the tool's description
};

// An analysis tool the analyst may ask for: its name, what it looks for, and whether the
// analysis the analyst reads already ran it.
struct ToolOffer {
  std::string name;
  std::string about;
  bool ran = false;
};

struct AgentOptions {
  int max_repairs = 2;      // repair prompts per role call
  int max_tool_rounds = 4;  // coder: model turns that may call tools
  bool tools = true;        // offer tools (false for providers without tool calling)
  int max_tokens = 8192;
  double temperature = 0.2;
  bool stream = false;
};

struct CoderResult {
  CandidateFiles files;
  int repairs = 0;
  int tool_calls = 0;
  std::string reply;  // the last reply's text
};

struct Plan {
  std::string direction;
  std::vector<std::string> actions;  // action tags (vectorize_loads, fuse, use_tensor_cores, ...)
  std::string why;
};

class Agents {
 public:
  // `client` and `prompts` must outlive the object.
  Agents(llm::LlmClient& client, const PromptLibrary& prompts, std::string model, AgentOptions options = {});

  // feedback: the analysis text (feedback operator) of the current best; lessons: what earlier
  // attempts taught, one per line; history: the directions tried and their results.
  // The templates the roles render (a playbook is one: prompts/playbook_<kind>.md).
  const PromptLibrary& prompts() const { return prompts_; }
  // The client the roles ask through: its spend and budget, for the loops' accounts.
  llm::LlmClient& client() const { return client_; }
  // measured: the current best's measured time in words ("" leaves the section out).
  Result<Plan> plan(const TaskBrief& task, const std::string& feedback, const std::string& lessons,
                    const std::string& history, const std::string& measured = "");
  Result<CoderResult> write(const TaskBrief& task, const std::string& direction, const std::string& feedback,
                            const CoderTools* tools);
  // failure: "compile_error", "incorrect", "runtime_error", ...; diagnostics: the build log or
  // the failing check's numbers (cut here with cut_log).
  Result<CoderResult> debug(const TaskBrief& task, const CandidateFiles& failed, const std::string& failure,
                            const std::string& diagnostics);
  // The analyst: names from `offers` (an unknown name, or one that already ran, is repaired);
  // empty when the analysis says enough.
  Result<std::vector<std::string>> choose_tools(const TaskBrief& task, const std::string& feedback,
                                                const std::vector<ToolOffer>& offers);

 private:
  Vars task_vars(const TaskBrief& task) const;
  llm::ChatRequest request(const std::string& user, const std::string& purpose) const;
  // Asks, and asks again with the repair template while `parse` returns an error. `first`, when
  // set, is a reply to `req` already in hand (the coder's tool loop), judged before asking.
  template <typename T>
  Result<T> converse(llm::ChatRequest req, const std::function<Result<T>(const llm::ChatReply&)>& parse, int* repairs,
                     std::optional<llm::ChatReply> first = std::nullopt);

  // converse() for a reply that must hold the task's candidate files; fills `result`.
  Result<CoderResult> candidate(llm::ChatRequest req, TaskKind kind, CoderResult result,
                                std::optional<llm::ChatReply> first = std::nullopt);

  llm::LlmClient& client_;
  const PromptLibrary& prompts_;
  std::string model_;
  AgentOptions o_;
};

// The files as the coder and debugger see them: fenced blocks with their names.
std::string show_files(const CandidateFiles& files, TaskKind kind);

}  // namespace kp::agent
