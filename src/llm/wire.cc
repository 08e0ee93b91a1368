#include "llm/wire.h"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "util/strings.h"

namespace kp::llm {

using nlohmann::json;

namespace {

Error protocol(const std::string& what) { return make_error(ErrorCode::kProtocol, what); }

FinishReason openai_finish(const std::string& s) {
  if (s == "stop") return FinishReason::kStop;
  if (s == "length") return FinishReason::kLength;
  if (s == "tool_calls" || s == "function_call") return FinishReason::kToolCalls;
  return FinishReason::kOther;
}

FinishReason anthropic_finish(const std::string& s) {
  if (s == "end_turn" || s == "stop_sequence") return FinishReason::kStop;
  if (s == "max_tokens") return FinishReason::kLength;
  if (s == "tool_use") return FinishReason::kToolCalls;
  return FinishReason::kOther;
}

// The "data:" payloads of an SSE text, each with the event name before it ("" when none).
std::vector<std::pair<std::string, std::string>> sse_events(std::string_view sse) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string event, data;
  auto flush = [&] {
    if (!data.empty()) out.emplace_back(event, data);
    event.clear();
    data.clear();
  };
  for (auto line : split(std::string(sse), '\n')) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      flush();
      continue;
    }
    if (line.rfind("event:", 0) == 0) {
      event = trim(line.substr(6));
    } else if (line.rfind("data:", 0) == 0) {
      if (!data.empty()) data += "\n";
      data += trim(line.substr(5));
    }  // comments (":") and other fields are ignored
  }
  flush();
  return out;
}

// The usage object's two counts, under the API's names for them; a count it lacks keeps base's.
Usage usage_of(const json& usage, const char* input_key, const char* output_key, Usage base = {}) {
  if (!usage.is_object()) return base;
  return {usage.value(input_key, base.input_tokens), usage.value(output_key, base.output_tokens)};
}

// j[key] when it is a string, else "" (null, absent, another type).
std::string string_or_empty(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string arguments_text(const json& input) { return input.is_null() ? "{}" : input.dump(); }

json parse_arguments(const std::string& text) {
  json j = json::parse(text.empty() ? "{}" : text, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

}  // namespace

// ---- OpenAI ----------------------------------------------------------------------------------

json openai_body(const ChatRequest& r, const std::string& max_tokens_key) {
  json msgs = json::array();
  for (const auto& m : r.messages) {
    json j = {{"role", to_string(m.role)}, {"content", m.content}};
    if (m.role == Role::kAssistant && !m.tool_calls.empty()) {
      json calls = json::array();
      for (const auto& c : m.tool_calls)
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}});
      j["tool_calls"] = calls;
      if (m.content.empty()) j["content"] = nullptr;
    }
    if (m.role == Role::kTool) j["tool_call_id"] = m.tool_call_id;
    msgs.push_back(std::move(j));
  }
  json body = {{"model", r.model}, {"messages", msgs}, {max_tokens_key, r.max_tokens}, {"temperature", r.temperature}};
  if (!r.tools.empty()) {
    json tools = json::array();
    for (const auto& t : r.tools)
      tools.push_back({{"type", "function"},
                       {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    body["tools"] = tools;
  }
  if (r.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

Result<ChatReply> parse_openai_reply(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return protocol(fmt::format("the reply is not JSON ({} bytes; truncated?)", body.size()));
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    return protocol("the reply has no \"choices\"" + (j.contains("error") ? ": " + error_message_of(body) : ""));
  const json& choice = j["choices"][0];
  if (!choice.contains("message") || !choice["message"].is_object()) return protocol("choices[0] has no \"message\"");
  const json& msg = choice["message"];
  ChatReply r;
  if (msg.contains("content") && msg["content"].is_string()) r.text = msg["content"].get<std::string>();
  if (msg.contains("tool_calls") && msg["tool_calls"].is_array())
    for (const auto& c : msg["tool_calls"]) {
      const json fn = c.value("function", json::object());
      if (!fn.is_object() || !fn.value("name", json()).is_string()) return protocol("a tool call without a function name");
      std::string args = fn.value("arguments", json("{}")).is_string() ? fn["arguments"].get<std::string>() : fn["arguments"].dump();
      r.tool_calls.push_back({c.value("id", ""), fn["name"].get<std::string>(), args});
    }
  r.finish_raw = string_or_empty(choice, "finish_reason");
  r.finish = openai_finish(r.finish_raw);
  r.usage = usage_of(j.value("usage", json()), "prompt_tokens", "completion_tokens");
  r.model = j.value("model", "");
  return r;
}

Result<ChatReply> parse_openai_stream(std::string_view sse) {
  ChatReply r;
  std::map<int, ToolCall> calls;
  bool done = false, finished = false;
  for (const auto& [event, data] : sse_events(sse)) {
    if (data == "[DONE]") {
      done = true;
      break;
    }
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return protocol("a stream chunk is not JSON: " + data.substr(0, 200));
    if (j.contains("error")) return protocol("the stream reported an error: " + error_message_of(data));
    if (j.contains("model") && j["model"].is_string()) r.model = j["model"].get<std::string>();
    if (j.contains("usage")) r.usage = usage_of(j["usage"], "prompt_tokens", "completion_tokens");
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) continue;
    const json& choice = j["choices"][0];
    const json delta = choice.value("delta", json::object());
    if (delta.contains("content") && delta["content"].is_string()) r.text += delta["content"].get<std::string>();
    if (delta.contains("tool_calls") && delta["tool_calls"].is_array())
      for (const auto& c : delta["tool_calls"]) {
        ToolCall& call = calls[c.value("index", 0)];
        if (c.contains("id") && c["id"].is_string()) call.id = c["id"].get<std::string>();
        const json fn = c.value("function", json::object());
        if (fn.contains("name") && fn["name"].is_string()) call.name += fn["name"].get<std::string>();
        if (fn.contains("arguments") && fn["arguments"].is_string()) call.arguments_json += fn["arguments"].get<std::string>();
      }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
      r.finish_raw = choice["finish_reason"].get<std::string>();
      r.finish = openai_finish(r.finish_raw);
      finished = true;
    }
  }
  if (!done || !finished)
    return protocol(fmt::format("the stream ended before {} (truncated after {} bytes of text)",
                                finished ? "\"data: [DONE]\"" : "a finish_reason", r.text.size()));
  for (auto& [index, call] : calls) {
    if (call.name.empty()) return protocol(fmt::format("streamed tool call {} has no name", index));
    r.tool_calls.push_back(std::move(call));
  }
  return r;
}

// ---- Anthropic -------------------------------------------------------------------------------

json anthropic_body(const ChatRequest& r) {
  std::string system;
  json msgs = json::array();
  for (const auto& m : r.messages) {
    if (m.role == Role::kSystem) {
      if (!system.empty()) system += "\n\n";
      system += m.content;
      continue;
    }
    if (m.role == Role::kTool) {
      json block = {{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}};
      if (!msgs.empty() && msgs.back()["role"] == "user" && msgs.back()["content"].is_array() &&
          !msgs.back()["content"].empty() && msgs.back()["content"].back().value("type", "") == "tool_result")
        msgs.back()["content"].push_back(block);  // results of one turn's calls go together
      else
        msgs.push_back({{"role", "user"}, {"content", json::array({block})}});
      continue;
    }
    json content = json::array();
    if (!m.content.empty()) content.push_back({{"type", "text"}, {"text", m.content}});
    for (const auto& c : m.tool_calls)
      content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", parse_arguments(c.arguments_json)}});
    msgs.push_back({{"role", to_string(m.role)}, {"content", content}});
  }
  json body = {{"model", r.model}, {"max_tokens", r.max_tokens}, {"messages", msgs}, {"temperature", r.temperature}};
  if (!system.empty()) body["system"] = system;
  if (!r.tools.empty()) {
    json tools = json::array();
    for (const auto& t : r.tools)
      tools.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
    body["tools"] = tools;
  }
  if (r.stream) body["stream"] = true;
  return body;
}

Result<ChatReply> parse_anthropic_reply(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return protocol(fmt::format("the reply is not JSON ({} bytes; truncated?)", body.size()));
  if (j.value("type", "") == "error") return protocol("the reply is an error: " + error_message_of(body));
  if (!j.contains("content") || !j["content"].is_array()) return protocol("the reply has no \"content\" list");
  ChatReply r;
  for (const auto& b : j["content"]) {
    const std::string type = b.value("type", "");
    if (type == "text") r.text += b.value("text", "");
    if (type == "tool_use") r.tool_calls.push_back({b.value("id", ""), b.value("name", ""), arguments_text(b.value("input", json()))});
  }
  r.finish_raw = string_or_empty(j, "stop_reason");
  r.finish = anthropic_finish(r.finish_raw);
  r.usage = usage_of(j.value("usage", json()), "input_tokens", "output_tokens");
  r.model = j.value("model", "");
  return r;
}

Result<ChatReply> parse_anthropic_stream(std::string_view sse) {
  ChatReply r;
  struct Block {
    std::string type, text, id, name, input_json;
  };
  std::map<int, Block> blocks;
  bool stopped = false;
  for (const auto& [event, data] : sse_events(sse)) {
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return protocol("a stream event is not JSON: " + data.substr(0, 200));
    const std::string type = j.value("type", event);
    if (type == "error") return protocol("the stream reported an error: " + error_message_of(data));
    if (type == "message_start") {
      const json m = j.value("message", json::object());
      r.model = m.value("model", "");
      r.usage = usage_of(m.value("usage", json()), "input_tokens", "output_tokens");
    } else if (type == "content_block_start") {
      const json cb = j.value("content_block", json::object());
      Block& b = blocks[j.value("index", 0)];
      b.type = cb.value("type", "");
      b.text = cb.value("text", "");
      b.id = cb.value("id", "");
      b.name = cb.value("name", "");
    } else if (type == "content_block_delta") {
      Block& b = blocks[j.value("index", 0)];
      const json d = j.value("delta", json::object());
      if (d.value("type", "") == "text_delta") b.text += d.value("text", "");
      if (d.value("type", "") == "input_json_delta") b.input_json += d.value("partial_json", "");
    } else if (type == "message_delta") {
      const json d = j.value("delta", json::object());
      if (d.contains("stop_reason") && d["stop_reason"].is_string()) {
        r.finish_raw = d["stop_reason"].get<std::string>();
        r.finish = anthropic_finish(r.finish_raw);
      }
      r.usage = usage_of(j.value("usage", json()), "input_tokens", "output_tokens", r.usage);
    } else if (type == "message_stop") {
      stopped = true;
    }
  }
  if (!stopped) return protocol("the stream ended before \"message_stop\" (truncated)");
  for (auto& [index, b] : blocks) {
    if (b.type == "text") r.text += b.text;
    if (b.type == "tool_use") {
      if (!b.input_json.empty() && json::parse(b.input_json, nullptr, false).is_discarded())
        return protocol(fmt::format("streamed tool_use block {} has input that is not JSON", index));
      r.tool_calls.push_back({b.id, b.name, b.input_json.empty() ? "{}" : b.input_json});
    }
  }
  return r;
}

std::string error_message_of(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      std::string msg = e["message"].get<std::string>();
      if (e.contains("type") && e["type"].is_string()) msg += " (" + e["type"].get<std::string>() + ")";
      return msg;
    }
    if (e.is_string()) return e.get<std::string>();
  }
  std::string s(body.substr(0, 300));
  return s.empty() ? "(empty body)" : s;
}

}  // namespace kp::llm
