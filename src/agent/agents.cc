#include "agent/agents.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::agent {

using llm::ChatReply;
using llm::ChatRequest;
using llm::Message;
using llm::Role;
using nlohmann::json;

namespace {

const char* kind_word(TaskKind k) { return k == TaskKind::kNative ? "native" : "kernelbench"; }

}  // namespace

std::string show_files(const CandidateFiles& f, TaskKind kind) {
  if (kind == TaskKind::kNative) return "```cuda\n" + f.cuda + "```\n";
  std::string s = "```python\n" + f.python + "```\n";
  if (!f.cuda.empty()) s += "```cuda\n" + f.cuda + "```\n";
  return s;
}

Agents::Agents(llm::LlmClient& client, const PromptLibrary& prompts, std::string model, AgentOptions options)
    : client_(client), prompts_(prompts), model_(std::move(model)), o_(options) {}

Vars Agents::task_vars(const TaskBrief& t) const {
  return {{"task_name", t.name},
          {"task_kind", kind_word(t.kind)},
          {"description", t.description},
          {"interface", t.interface},
          {"reference", t.reference},
          {"current", t.current},
          {"gpu", t.gpu},
          {"playbook", t.playbook},
          {"problem", t.kind == TaskKind::kKernelBench ? t.interface : std::string()}};
}

ChatRequest Agents::request(const std::string& user, const std::string& purpose) const {
  ChatRequest r;
  r.purpose = purpose;
  r.model = model_;
  r.max_tokens = o_.max_tokens;
  r.temperature = o_.temperature;
  r.stream = o_.stream;
  if (auto system = prompts_.render("system", {}); system) r.messages.push_back({Role::kSystem, *system, {}, ""});
  r.messages.push_back({Role::kUser, user, {}, ""});
  return r;
}

template <typename T>
Result<T> Agents::converse(ChatRequest req, const std::function<Result<T>(const ChatReply&)>& parse, int* repairs,
                           std::optional<ChatReply> first) {
  for (int round = 0;; ++round) {
    Result<ChatReply> reply = round == 0 && first ? Result<ChatReply>(std::move(*first)) : client_.chat(req);
    if (!reply) return reply.error();
    auto parsed = parse(*reply);
    if (parsed) return parsed;
    if (round >= o_.max_repairs)
      return make_error(ErrorCode::kInvalidInput,
                        fmt::format("the model's reply was still unusable after {} repair prompts: {}", o_.max_repairs,
                                    parsed.error().message));
    std::string reason = parsed.error().message;
    if (reply->finish == llm::FinishReason::kLength)
      reason += fmt::format(" (the reply hit the {}-token limit)", req.max_tokens);
    auto repair = prompts_.render("repair", {{"reason", reason}});
    if (!repair) return repair.error();
    req.messages.push_back({Role::kAssistant, reply->text, reply->tool_calls, ""});
    for (const auto& c : reply->tool_calls)  // every call needs an answer before the next turn
      req.messages.push_back({Role::kTool, "not run: answer without tools now", {}, c.id});
    req.messages.push_back({Role::kUser, *repair, {}, ""});
    req.tools.clear();
    if (repairs) ++*repairs;
  }
}

Result<Plan> Agents::plan(const TaskBrief& task, const std::string& feedback, const std::string& lessons,
                          const std::string& history, const std::string& measured) {
  Vars v = task_vars(task);
  v["measured"] = measured;
  v["feedback"] = feedback;
  v["lessons"] = lessons;
  v["history"] = history;
  auto text = prompts_.render("planner", v);
  if (!text) return text.error();
  std::function<Result<Plan>(const ChatReply&)> parse = [](const ChatReply& r) -> Result<Plan> {
    auto j = extract_json_object(r.text);
    if (!j) return j.error();
    if (!j->contains("direction") || !(*j)["direction"].is_string() ||
        trim((*j)["direction"].get<std::string>()).empty())
      return make_error(ErrorCode::kInvalidInput, "the JSON has no \"direction\" string: say what to change next");
    Plan p;
    p.direction = (*j)["direction"].get<std::string>();
    p.why = j->value("why", "");
    if (j->contains("actions") && (*j)["actions"].is_array())
      for (const auto& a : (*j)["actions"])
        if (a.is_string()) p.actions.push_back(a.get<std::string>());
    return p;
  };
  return converse(request(*text, "planner"), parse, nullptr);
}

Result<CoderResult> Agents::write(const TaskBrief& task, const std::string& direction, const std::string& feedback,
                                  const CoderTools* tools) {
  Vars v = task_vars(task);
  v["direction"] = direction;
  v["feedback"] = feedback;
  if (o_.tools && tools && tools->search_code)
    v["cutlass"] = tools->cutlass_version.empty() ? std::string("CUTLASS") : "CUTLASS " + tools->cutlass_version;
  auto text = prompts_.render(task.kind == TaskKind::kNative ? "coder_native" : "coder_kernelbench", v);
  if (!text) return text.error();
  ChatRequest req = request(*text, "coder");
  CoderResult result;
  const bool offer = o_.tools && tools;
  if (offer) {
    if (tools->compile_check)
      req.tools.push_back(
          {"compile_check",
           "Compile a draft of the whole candidate with nvcc for this GPU and get the errors and the "
           "ptxas resource report (registers, spills, shared memory) back. Nothing is run.",
           json::parse(
               R"({"type":"object","properties":{"source":{"type":"string","description":"the whole .cu file"}},"required":["source"]})")});
    if (tools->run_analysis_tool)
      req.tools.push_back(
          {"run_analysis_tool",
           "Run one of kernelpro's analysis tools on the current best candidate and get its finding. "
           "Tools: " +
               join(tools->analysis_tool_names, ", ") + ".",
           json::parse(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})")});
    if (tools->search_code)
      req.tools.push_back(
          {"search_code",
           "Search the CUTLASS and CuTe headers, examples and docs for an identifier or a phrase (\"TMA load of a "
           "tile\", \"SM90_64x128x16_F32BF16BF16_SS\"). Returns the best-matching declarations, each with "
           "path:start-end and its first lines; read one whole with read_code.",
           json::parse(R"({"type":"object","properties":{"query":{"type":"string"}},"required":["query"]})")});
    if (tools->read_code)
      req.tools.push_back(
          {"read_code",
           "Read numbered lines of a CUTLASS/CuTe file, by its path as search_code gives it "
           "(include/cute/atom/copy_traits_sm90_tma.hpp) and a line range (at most 400 lines).",
           json::parse(R"({"type":"object","properties":{"path":{"type":"string"},"start_line":{"type":"integer"},)"
                       R"("end_line":{"type":"integer"}},"required":["path","start_line","end_line"]})")});
    if (tools->list_code)
      req.tools.push_back(
          {"list_code",
           "List a directory of the CUTLASS tree (include/cute/atom, examples); directories end with /.",
           json::parse(R"({"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"]})")});
  }
  auto offered = [&] {
    std::vector<std::string> names;
    for (const auto& t : req.tools) names.push_back(t.name);
    return names.empty() ? std::string("none") : join(names, ", ");
  };
  // Tool rounds: run the calls, hand back the results, ask again. A reply without calls is the
  // answer, judged (and repaired) below.
  std::optional<ChatReply> answer;
  for (int round = 0; offer && round < o_.max_tool_rounds; ++round) {
    auto reply = client_.chat(req);
    if (!reply) return reply.error();
    if (reply->tool_calls.empty()) {
      answer = std::move(*reply);
      break;
    }
    req.messages.push_back({Role::kAssistant, reply->text, reply->tool_calls, ""});
    for (const auto& c : reply->tool_calls) {
      ++result.tool_calls;
      json args = json::parse(c.arguments_json, nullptr, false);
      auto arg = [&](const char* k) {
        return args.is_object() && args.contains(k) && args[k].is_string() ? args[k].get<std::string>() : "";
      };
      // An integer, or one a model wrote as a string ("120"); 0 when absent.
      auto number = [&](const char* k) -> int {
        if (!args.is_object() || !args.contains(k)) return 0;
        if (args[k].is_number()) return args[k].get<int>();
        if (args[k].is_string()) return std::atoi(args[k].get<std::string>().c_str());
        return 0;
      };
      std::string out;
      if (args.is_discarded())
        out = "the arguments were not JSON: " + c.arguments_json.substr(0, 200);
      else if (c.name == "compile_check" && tools->compile_check)
        out = tools->compile_check(arg("source"));
      else if (c.name == "run_analysis_tool" && tools->run_analysis_tool)
        out = tools->run_analysis_tool(arg("name"));
      else if (c.name == "search_code" && tools->search_code)
        out = tools->search_code(arg("query"));
      else if (c.name == "read_code" && tools->read_code)
        out = tools->read_code(arg("path"), number("start_line"), number("end_line"));
      else if (c.name == "list_code" && tools->list_code)
        out = tools->list_code(arg("dir"));
      else
        out = fmt::format("unknown tool \"{}\"; the tools offered are: {}", c.name, offered());
      req.messages.push_back({Role::kTool, cut_log(out), {}, c.id});
    }
    if (round + 1 == o_.max_tool_rounds) {
      req.tools.clear();
      auto over = prompts_.render("tool_rounds_over", {});
      if (!over) return over.error();
      req.messages.push_back({Role::kUser, *over, {}, ""});
    }
  }
  return candidate(std::move(req), task.kind, std::move(result), std::move(answer));
}

Result<CoderResult> Agents::candidate(ChatRequest req, TaskKind kind, CoderResult result,
                                      std::optional<ChatReply> first) {
  std::string last;
  auto files = converse<CandidateFiles>(
      std::move(req),
      [&](const ChatReply& r) {
        last = r.text;
        return extract_candidate(r.text, kind);
      },
      &result.repairs, std::move(first));
  if (!files) return files.error();
  result.files = std::move(*files);
  result.reply = last;
  return result;
}

Result<CoderResult> Agents::debug(const TaskBrief& task, const CandidateFiles& failed, const std::string& failure,
                                  const std::string& diagnostics) {
  Vars v = task_vars(task);
  v["failed"] = show_files(failed, task.kind);
  v["failure"] = failure;
  v["diagnostics"] = cut_log(diagnostics);
  auto text = prompts_.render(task.kind == TaskKind::kNative ? "debugger_native" : "debugger_kernelbench", v);
  if (!text) return text.error();
  return candidate(request(*text, "debugger"), task.kind, {});
}

Result<std::vector<std::string>> Agents::choose_tools(const TaskBrief& task, const std::string& feedback,
                                                      const std::vector<ToolOffer>& offers) {
  Vars v = task_vars(task);
  v["feedback"] = feedback;
  std::string listed, ran;
  std::vector<std::string> open;
  for (const auto& o : offers) {
    if (o.ran) {
      ran += (ran.empty() ? "" : ", ") + o.name;
      continue;
    }
    open.push_back(o.name);
    listed += fmt::format("- {}: {}\n", o.name, o.about);
  }
  v["tools"] = listed;
  v["tools_run"] = ran;
  auto text = prompts_.render("analyst", v);
  if (!text) return text.error();
  std::function<Result<std::vector<std::string>>(const ChatReply&)> parse =
      [&](const ChatReply& r) -> Result<std::vector<std::string>> {
    auto j = extract_json_object(r.text);
    if (!j) return j.error();
    if (!j->contains("tools") || !(*j)["tools"].is_array())
      return make_error(ErrorCode::kInvalidInput, "the JSON has no \"tools\" list");
    std::vector<std::string> out;
    for (const auto& t : (*j)["tools"]) {
      if (!t.is_string()) return make_error(ErrorCode::kInvalidInput, "\"tools\" must list tool names as strings");
      const std::string name = t.get<std::string>();
      if (std::find(open.begin(), open.end(), name) == open.end())
        return make_error(
            ErrorCode::kInvalidInput,
            fmt::format("\"{}\" is not one of the tools listed{}; choose from: {}", name,
                        ran.find(name) != std::string::npos ? " (it ran already)" : "", join(open, ", ")));
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
  };
  return converse(request(*text, "analyst"), parse, nullptr);
}

}  // namespace kp::agent
