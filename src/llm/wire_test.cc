// The wire formats on bodies shaped as the real APIs send them (OpenAI chat completions,
// Anthropic Messages, both plain and streamed).
#include "llm/wire.h"

#include <gtest/gtest.h>

namespace kp::llm {
namespace {

using nlohmann::json;

ChatRequest with_tool_turn() {
  ChatRequest r;
  r.model = "m";
  r.max_tokens = 1000;
  r.messages = {{Role::kSystem, "You write CUDA.", {}, ""},
                {Role::kUser, "Make gelu faster.", {}, ""},
                {Role::kAssistant, "", {{"call_1", "compile_check", R"({"source":"__global__ void k(){}"})"}}, ""},
                {Role::kTool, "compiled: 0 errors", {}, "call_1"}};
  r.tools = {{"compile_check", "Compile a draft with nvcc.", json::parse(R"({"type":"object","properties":{"source":{"type":"string"}},"required":["source"]})")}};
  return r;
}

TEST(LlmWire, OpenAiBodyCarriesToolsCallsAndResults) {
  ChatRequest r = with_tool_turn();
  r.stream = true;
  json b = openai_body(r);
  EXPECT_EQ(b["model"], "m");
  EXPECT_EQ(b["max_tokens"], 1000);
  EXPECT_EQ(b["messages"][0]["role"], "system");
  EXPECT_TRUE(b["messages"][2]["content"].is_null());
  EXPECT_EQ(b["messages"][2]["tool_calls"][0]["type"], "function");
  EXPECT_EQ(b["messages"][2]["tool_calls"][0]["function"]["arguments"], R"({"source":"__global__ void k(){}"})");
  EXPECT_EQ(b["messages"][3]["role"], "tool");
  EXPECT_EQ(b["messages"][3]["tool_call_id"], "call_1");
  EXPECT_EQ(b["tools"][0]["function"]["parameters"]["required"][0], "source");
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_EQ(openai_body(r, "max_completion_tokens").count("max_tokens"), 0u);
}

TEST(LlmWire, OpenAiReplyWithToolCallsAndUsage) {
  auto r = parse_openai_reply(R"({"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4.1-2025-04-14",
    "choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function",
    "function":{"name":"run_tool","arguments":"{\"name\":\"bank_conflicts\"}"}}]},"finish_reason":"tool_calls"}],
    "usage":{"prompt_tokens":812,"completion_tokens":23,"total_tokens":835}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->text, "");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].id, "call_a");
  EXPECT_EQ(r->tool_calls[0].arguments_json, R"({"name":"bank_conflicts"})");
  EXPECT_EQ(r->finish, FinishReason::kToolCalls);
  EXPECT_EQ(r->usage.input_tokens, 812);
  EXPECT_EQ(r->usage.output_tokens, 23);
  EXPECT_EQ(r->model, "gpt-4.1-2025-04-14");
}

TEST(LlmWire, OpenAiStreamAssemblesTextAndToolArgumentPieces) {
  const std::string sse =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"model\":\"m1\"}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Here \"}}]}\n\n"
      ": keep-alive comment\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"it is.\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\","
      "\"function\":{\"name\":\"compile_check\",\"arguments\":\"\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"sou\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"rce\\\":\\\"x\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":7}}\n\n"
      "data: [DONE]\n\n";
  auto r = parse_openai_stream(sse);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->text, "Here it is.");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].name, "compile_check");
  EXPECT_EQ(r->tool_calls[0].arguments_json, R"({"source":"x"})");
  EXPECT_EQ(r->usage.output_tokens, 7);
  EXPECT_EQ(r->model, "m1");
}

TEST(LlmWire, TruncatedOrGarbledBodiesAreProtocolErrors) {
  auto cut = parse_openai_stream("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"```cuda\\n__glo\"}}]}\n\n");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, ErrorCode::kProtocol);
  EXPECT_NE(cut.error().message.find("truncated"), std::string::npos) << cut.error().message;
  auto half = parse_openai_reply(R"({"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"```cu)");
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.error().code, ErrorCode::kProtocol);
  EXPECT_FALSE(parse_openai_reply(R"({"object":"list"})").ok());
  EXPECT_FALSE(parse_anthropic_reply("<html>502 Bad Gateway</html>").ok());
  auto a = parse_anthropic_stream("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("message_stop"), std::string::npos);
}

TEST(LlmWire, AnthropicBodyMovesSystemAndGroupsToolResults) {
  ChatRequest r = with_tool_turn();
  r.messages.push_back({Role::kTool, "second result", {}, "call_2"});
  json b = anthropic_body(r);
  EXPECT_EQ(b["system"], "You write CUDA.");
  ASSERT_EQ(b["messages"].size(), 3u);  // user, assistant (tool_use), user (both tool results)
  EXPECT_EQ(b["messages"][1]["content"][0]["type"], "tool_use");
  EXPECT_EQ(b["messages"][1]["content"][0]["input"]["source"], "__global__ void k(){}");
  EXPECT_EQ(b["messages"][2]["role"], "user");
  ASSERT_EQ(b["messages"][2]["content"].size(), 2u);
  EXPECT_EQ(b["messages"][2]["content"][1]["tool_use_id"], "call_2");
  EXPECT_EQ(b["tools"][0]["input_schema"]["type"], "object");
}

TEST(LlmWire, AnthropicReplyAndStream) {
  auto r = parse_anthropic_reply(R"({"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
    "content":[{"type":"text","text":"I will check."},{"type":"tool_use","id":"toolu_1","name":"run_tool","input":{"name":"warp_stalls"}}],
    "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":40}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->text, "I will check.");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(json::parse(r->tool_calls[0].arguments_json)["name"], "warp_stalls");
  EXPECT_EQ(r->finish, FinishReason::kToolCalls);
  EXPECT_EQ(r->usage.input_tokens, 1200);

  const std::string sse =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"compile_check\",\"input\":{}}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"source\\\": \"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"y\\\"}\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  auto s = parse_anthropic_stream(sse);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->text, "Hello");
  ASSERT_EQ(s->tool_calls.size(), 1u);
  EXPECT_EQ(json::parse(s->tool_calls[0].arguments_json)["source"], "y");
  EXPECT_EQ(s->usage.input_tokens, 25);
  EXPECT_EQ(s->usage.output_tokens, 15);
  EXPECT_EQ(s->finish, FinishReason::kToolCalls);
}

TEST(LlmWire, ErrorMessagesOfBothApis) {
  EXPECT_EQ(error_message_of(R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})"),
            "Rate limit reached (requests)");
  EXPECT_EQ(error_message_of(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
            "Overloaded (overloaded_error)");
  EXPECT_EQ(error_message_of("upstream connect error"), "upstream connect error");
}

TEST(LlmWire, ReplyJsonRoundTrips) {
  ChatReply r;
  r.text = "x";
  r.tool_calls = {{"i", "n", "{}"}};
  r.finish = FinishReason::kLength;
  r.usage = {3, 4};
  auto back = reply_from_json(to_json(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->tool_calls[0].name, "n");
  EXPECT_EQ(back->finish, FinishReason::kLength);
  EXPECT_EQ(back->usage.output_tokens, 4);
  EXPECT_FALSE(reply_from_json(json::parse(R"({"tool_calls":[]})")).ok());
}

}  // namespace
}  // namespace kp::llm
