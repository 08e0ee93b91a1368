// The two HTTP wire formats, as pure functions from ChatRequest to a JSON body and from a
// response body (plain JSON, or the text of a server-sent-event stream) to ChatReply.
//
// OpenAI chat completions (POST {base_url}/chat/completions), as served by OpenAI, vLLM,
// llama.cpp's server, Ollama and others: system messages stay in "messages"; tools are
// {"type":"function","function":{name, description, parameters}}; an assistant's tool calls are
// "tool_calls" with the arguments as a JSON string; a tool result is {"role":"tool",
// "tool_call_id", "content"}. Usage is usage.prompt_tokens / completion_tokens. A stream is
// "data: {chunk}" lines ended by "data: [DONE]"; tool-call arguments arrive in pieces keyed by
// their index; usage comes in a last chunk with no choices when stream_options.include_usage is
// set (it is).
//
// Anthropic Messages (POST {base_url}/messages, headers x-api-key and anthropic-version):
// system messages go to the top-level "system"; content is a list of blocks ("text",
// "tool_use" {id, name, input}, "tool_result" {tool_use_id, content}); tool results travel in a
// user message (consecutive ones in one); tools are {name, description, input_schema}. A stream
// is "event: X" / "data: {...}" pairs: message_start (input tokens), content_block_start,
// content_block_delta (text_delta, or input_json_delta pieces of a tool's input),
// content_block_stop, message_delta (stop_reason, output tokens), message_stop, ping, error.
//
// Every parser returns kProtocol on a body it cannot read (not JSON, no choices or content, a
// stream that ends before its last event: truncated), with what was wrong, so the client can
// ask again.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "util/result.h"

namespace kp::llm {

// OpenAI chat completions. `max_tokens_key` is "max_tokens" (most servers) or
// "max_completion_tokens" (OpenAI's reasoning models refuse the older name).
nlohmann::json openai_body(const ChatRequest& request, const std::string& max_tokens_key = "max_tokens");
Result<ChatReply> parse_openai_reply(std::string_view body);
Result<ChatReply> parse_openai_stream(std::string_view sse);

// Anthropic Messages.
nlohmann::json anthropic_body(const ChatRequest& request);
Result<ChatReply> parse_anthropic_reply(std::string_view body);
Result<ChatReply> parse_anthropic_stream(std::string_view sse);

// The human-readable message of an error body of either API ({"error":{"message":...}}), or the
// first 300 bytes of the body when it has none.
std::string error_message_of(std::string_view body);

}  // namespace kp::llm
