// kp::llm: the model side of the loop. chat.h holds the provider-neutral request and reply that
// every provider (OpenAI-compatible, Anthropic, command, manual) translates to its wire format.
//
// A conversation is a list of messages. Tool calling: the request lists tools (name, description,
// JSON Schema of the arguments); a reply may carry tool calls instead of, or beside, text; the
// caller runs them and appends one kTool message per call (tool_call_id = the call's id) before
// asking again. Providers without tool calling (command, manual) get the tools described in the
// prompt text and return text only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace kp::llm {

enum class Role { kSystem, kUser, kAssistant, kTool };
const char* to_string(Role role);
Result<Role> role_from_string(std::string_view s);

struct ToolCall {
  std::string id;              // the provider's id of the call, echoed in the tool result
  std::string name;            // the tool's name
  std::string arguments_json;  // the arguments as JSON text (an object), as the model wrote them
};

struct Message {
  Role role = Role::kUser;
  std::string content;               // text; for kTool, the tool's result
  std::vector<ToolCall> tool_calls;  // kAssistant only: the calls the model made
  std::string tool_call_id;          // kTool only: which call this answers
};

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();  // JSON Schema of the arguments object
};

struct ChatRequest {
  std::string model;              // as the provider names it ("gpt-4.1", "claude-sonnet-4-5", ...)
  std::vector<Message> messages;  // kSystem messages first, then the conversation
  std::vector<ToolSpec> tools;    // empty: no tool calling
  int max_tokens = 8192;          // the most tokens the reply may have
  double temperature = 0;
  bool stream = false;            // ask for server-sent events (the reply is the same)
  // Who asks, for people and files only ("planner", "coder", "debugger", "analyst"): never sent,
  // and not part of to_json (so not of a cache or manual key).
  std::string purpose;
};

// Why the model stopped.
enum class FinishReason { kStop, kLength, kToolCalls, kOther };
const char* to_string(FinishReason reason);
Result<FinishReason> finish_reason_from_string(std::string_view s);

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
};

struct ChatReply {
  std::string text;                  // the concatenated text blocks; may be empty with tool calls
  std::vector<ToolCall> tool_calls;  // in the order the model made them
  FinishReason finish = FinishReason::kStop;
  std::string finish_raw;  // the provider's own word ("end_turn", "length", ...)
  Usage usage;
  std::string model;  // the model that answered, as the provider reports it
};

// Canonical JSON of a request (keys sorted by nlohmann::json), used for the cache key and the
// call records. Holds no credentials: those live in the provider options only.
nlohmann::json to_json(const ChatRequest& request);
nlohmann::json to_json(const ChatReply& reply);
// The inverse of to_json(ChatReply); an error names the missing or mistyped field.
Result<ChatReply> reply_from_json(const nlohmann::json& j);

// The request as plain text for providers without a chat API (command, manual): each message
// under a "### role" heading, the tools listed with their schemas first when there are any.
std::string render_as_text(const ChatRequest& request);

}  // namespace kp::llm
