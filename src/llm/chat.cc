#include "llm/chat.h"

#include <fmt/format.h>

namespace kp::llm {

using nlohmann::json;

const char* to_string(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "user";
}

Result<Role> role_from_string(std::string_view s) {
  for (Role r : {Role::kSystem, Role::kUser, Role::kAssistant, Role::kTool})
    if (s == to_string(r)) return r;
  return make_error(ErrorCode::kInvalidInput, fmt::format("unknown role \"{}\" (system, user, assistant, tool)", s));
}

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kToolCalls: return "tool_calls";
    case FinishReason::kOther: return "other";
  }
  return "other";
}

Result<FinishReason> finish_reason_from_string(std::string_view s) {
  for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kToolCalls, FinishReason::kOther})
    if (s == to_string(r)) return r;
  return make_error(ErrorCode::kInvalidInput,
                    fmt::format("unknown finish reason \"{}\" (stop, length, tool_calls, other)", s));
}

namespace {

json calls_to_json(const std::vector<ToolCall>& calls) {
  json a = json::array();
  for (const auto& c : calls) a.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments_json}});
  return a;
}

}  // namespace

json to_json(const ChatRequest& r) {
  json msgs = json::array();
  for (const auto& m : r.messages) {
    json j = {{"role", to_string(m.role)}, {"content", m.content}};
    if (!m.tool_calls.empty()) j["tool_calls"] = calls_to_json(m.tool_calls);
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    msgs.push_back(std::move(j));
  }
  json tools = json::array();
  for (const auto& t : r.tools)
    tools.push_back({{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}});
  return {{"model", r.model},   {"messages", msgs},        {"tools", tools},
          {"max_tokens", r.max_tokens}, {"temperature", r.temperature}, {"stream", r.stream}};
}

json to_json(const ChatReply& r) {
  return {{"text", r.text},
          {"tool_calls", calls_to_json(r.tool_calls)},
          {"finish", to_string(r.finish)},
          {"finish_raw", r.finish_raw},
          {"usage", {{"input_tokens", r.usage.input_tokens}, {"output_tokens", r.usage.output_tokens}}},
          {"model", r.model}};
}

Result<ChatReply> reply_from_json(const json& j) {
  auto bad = [](const std::string& what) {
    return make_error(ErrorCode::kInvalidInput, "stored LLM reply: " + what);
  };
  if (!j.is_object()) return bad("not a JSON object");
  ChatReply r;
  if (!j.contains("text") || !j["text"].is_string()) return bad("\"text\" missing or not a string");
  r.text = j["text"].get<std::string>();
  if (j.contains("tool_calls")) {
    if (!j["tool_calls"].is_array()) return bad("\"tool_calls\" is not an array");
    for (const auto& c : j["tool_calls"]) {
      if (!c.is_object() || !c.value("name", json()).is_string()) return bad("a tool call without a name");
      r.tool_calls.push_back({c.value("id", ""), c["name"].get<std::string>(), c.value("arguments", "{}")});
    }
  }
  auto finish = finish_reason_from_string(j.value("finish", "stop"));
  if (!finish) return bad(finish.error().message);
  r.finish = *finish;
  r.finish_raw = j.value("finish_raw", "");
  if (j.contains("usage") && j["usage"].is_object()) {
    r.usage.input_tokens = j["usage"].value("input_tokens", int64_t{0});
    r.usage.output_tokens = j["usage"].value("output_tokens", int64_t{0});
  }
  r.model = j.value("model", "");
  return r;
}

std::string render_as_text(const ChatRequest& r) {
  std::string out;
  if (!r.tools.empty()) {
    out += "### tools\nThis channel cannot call tools; these are listed so that the reply can say which one it "
           "would use and with what arguments.\n";
    for (const auto& t : r.tools) out += fmt::format("- {}: {} Arguments: {}\n", t.name, t.description, t.parameters.dump());
    out += "\n";
  }
  for (const auto& m : r.messages) {
    out += fmt::format("### {}\n", to_string(m.role));
    if (m.role == Role::kTool) out += fmt::format("(result of tool call {})\n", m.tool_call_id);
    out += m.content;
    for (const auto& c : m.tool_calls) out += fmt::format("\n(called {} with {})", c.name, c.arguments_json);
    out += "\n\n";
  }
  return out;
}

}  // namespace kp::llm
