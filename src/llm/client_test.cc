// The providers and the client against a real HTTP server on loopback that answers in the
// OpenAI and Anthropic wire formats (tests/support/fake_llm_server.h), through the real curl
// transport: headers, status handling, retries, budget, cache and records.
#include "llm/client.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "llm/llm_config.h"
#include "tests/support/fake_llm_server.h"
#include "util/strings.h"

namespace kp::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CannedResponse;
using testing::FakeLlmServer;
using testing::openai_completion;

constexpr const char* kKey = "sk-test-0123456789abcdef";

ChatRequest ask(const std::string& text) {
  ChatRequest r;
  r.model = "gpt-test";
  r.messages = {{Role::kSystem, "You write CUDA kernels.", {}, ""}, {Role::kUser, text, {}, ""}};
  return r;
}

struct Rig {
  FakeLlmServer server;
  std::unique_ptr<HttpTransport> transport = make_curl_transport();
  std::unique_ptr<Provider> provider;
  std::vector<double> sleeps;
  ClientHooks hooks{[this](double s) { sleeps.push_back(s); }, [] { return 0.5; }, nullptr};

  explicit Rig(const std::string& kind = "openai", int timeout_ms = 5000) {
    HttpProviderOptions o;
    o.base_url = server.base_url();
    o.api_key = kKey;
    o.api_key_env = kind == "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
    o.timeout = std::chrono::milliseconds(timeout_ms);
    provider = kind == "openai" ? make_openai_provider(o, *transport) : make_anthropic_provider(o, *transport);
  }
};

TEST(LlmClient, OpenAiRequestOnTheWireAndTheReply) {
  Rig rig;
  rig.server.push({.body = openai_completion("```cuda\n__global__ void k() {}\n```", nullptr, 812, 23)});
  LlmClient client(*rig.provider, {}, rig.hooks);
  ChatRequest r = ask("make it faster");
  r.tools = {{"compile_check", "Compile a draft.", json::parse(R"({"type":"object"})")}};
  auto reply = client.chat(r);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_NE(reply->text.find("__global__"), std::string::npos);
  EXPECT_EQ(reply->usage.input_tokens, 812);
  auto got = rig.server.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/v1/chat/completions");
  EXPECT_EQ(got[0].headers["authorization"], std::string("Bearer ") + kKey);
  EXPECT_EQ(got[0].headers["content-type"], "application/json");
  json body = json::parse(got[0].body);
  EXPECT_EQ(body["messages"][1]["content"], "make it faster");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "compile_check");
  ASSERT_EQ(client.records().size(), 1u);
  EXPECT_EQ(client.records()[0].attempts, 1);
  EXPECT_EQ(client.records()[0].provider, "openai");
}

TEST(LlmClient, OpenAiStreamOverChunkedSse) {
  Rig rig;
  rig.server.push(
      {.content_type = "text/event-stream",
       .chunks = testing::openai_sse({R"({"choices":[{"index":0,"delta":{"content":"par"}}]})",
                                      R"({"choices":[{"index":0,"delta":{"content":"tial"}}]})",
                                      R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})",
                                      R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}})"})});
  LlmClient client(*rig.provider, {}, rig.hooks);
  ChatRequest r = ask("hi");
  r.stream = true;
  auto reply = client.chat(r);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->text, "partial");
  EXPECT_EQ(reply->usage.output_tokens, 2);
  EXPECT_EQ(json::parse(rig.server.requests()[0].body)["stream"], true);
  EXPECT_EQ(rig.server.requests()[0].headers["accept"], "text/event-stream");
}

TEST(LlmClient, AServerThatIgnoresStreamAnswersPlainJson) {
  Rig rig;
  rig.server.push({.body = openai_completion("plain")});  // application/json, although stream was asked for
  LlmClient client(*rig.provider, {}, rig.hooks);
  ChatRequest r = ask("hi");
  r.stream = true;
  auto reply = client.chat(r);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->text, "plain");
  EXPECT_EQ(client.records()[0].attempts, 1);
}

TEST(LlmClient, AnthropicHeadersBodyAndStream) {
  Rig rig("anthropic");
  rig.server.push(
      {.content_type = "text/event-stream",
       .chunks = testing::anthropic_sse(
           {{"message_start",
             R"({"type":"message_start","message":{"model":"claude-t","usage":{"input_tokens":30,"output_tokens":1}}})"},
            {"content_block_start",
             R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"},
            {"content_block_delta",
             R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}})"},
            {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
            {"message_delta",
             R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}})"},
            {"message_stop", R"({"type":"message_stop"})"}})});
  LlmClient client(*rig.provider, {}, rig.hooks);
  ChatRequest r = ask("hi");
  r.model = "claude-t";
  r.stream = true;
  auto reply = client.chat(r);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->text, "ok");
  EXPECT_EQ(reply->usage.input_tokens, 30);
  auto got = rig.server.requests();
  EXPECT_EQ(got[0].path, "/v1/messages");
  EXPECT_EQ(got[0].headers["x-api-key"], kKey);
  EXPECT_EQ(got[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(got[0].headers.count("authorization"), 0u);
  EXPECT_EQ(json::parse(got[0].body)["system"], "You write CUDA kernels.");
}

TEST(LlmClient, RateLimitHonoursRetryAfterThenSucceeds) {
  Rig rig;
  rig.server.push({.status = 429,
                   .body = R"({"error":{"message":"Rate limit reached for gpt-test","type":"requests"}})",
                   .headers = {{"Retry-After", "7"}}});
  rig.server.push({.body = openai_completion("done")});
  LlmClient client(*rig.provider, {}, rig.hooks);
  auto reply = client.chat(ask("x"));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->text, "done");
  ASSERT_EQ(rig.sleeps.size(), 1u);
  EXPECT_DOUBLE_EQ(rig.sleeps[0], 7);  // the server's wait, longer than the 1 s backoff
  EXPECT_EQ(client.records()[0].attempts, 2);
  EXPECT_EQ(rig.server.requests().size(), 2u);
}

TEST(LlmClient, ServerErrorsBackOffExponentiallyWithJitterAndGiveUp) {
  Rig rig;
  for (int i = 0; i < 3; ++i)
    rig.server.push({.status = i == 1 ? 503 : 500, .body = R"({"error":{"message":"boom"}})"});
  ClientOptions o;
  o.retry.max_attempts = 3;
  double u = 0;
  ClientHooks hooks{[&](double s) { rig.sleeps.push_back(s); }, [&] { return u = (u == 0 ? 1.0 : 0.0); }, nullptr};
  LlmClient client(*rig.provider, o, hooks);
  auto reply = client.chat(ask("x"));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(reply.error().message.find("HTTP 500"), std::string::npos) << reply.error().message;
  EXPECT_NE(reply.error().message.find("after 3 attempts"), std::string::npos) << reply.error().message;
  ASSERT_EQ(rig.sleeps.size(), 2u);
  EXPECT_DOUBLE_EQ(rig.sleeps[0], 1.0 * 1.25);  // 1 s, jitter at its top
  EXPECT_DOUBLE_EQ(rig.sleeps[1], 2.0 * 0.75);  // 2 s, jitter at its bottom
  EXPECT_FALSE(client.records()[0].error.empty());
}

TEST(LlmClient, TimeoutsAndTruncatedRepliesAreRetried) {
  Rig rig("openai", 300);
  rig.server.push({.body = openai_completion("late"), .delay_ms = 1000});
  rig.server.push({.body = openai_completion("whole").substr(0, 60)});  // a 200 whose body was cut
  rig.server.push({.content_type = "text/event-stream",
                   .chunks = testing::openai_sse({R"({"choices":[{"index":0,"delta":{"content":"cut"}}]})"}, false),
                   .drop_after_chunks = true});
  rig.server.push({.body = openai_completion("whole")});
  LlmClient client(*rig.provider, {}, rig.hooks);
  ChatRequest r = ask("x");
  auto reply = client.chat(r);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->text, "whole");
  EXPECT_EQ(client.records()[0].attempts, 4);
}

TEST(LlmClient, BadKeyAndUnknownModelAreClearAndNotRetried) {
  Rig rig;
  rig.server.push({.status = 401,
                   .body = std::string(R"({"error":{"message":"Incorrect API key provided: )") + kKey +
                           R"(","type":"invalid_request_error","code":"invalid_api_key"}})"});
  rig.server.push(
      {.status = 404,
       .body = R"({"error":{"message":"The model `gpt-nope` does not exist","type":"invalid_request_error"}})"});
  LlmClient client(*rig.provider, {}, rig.hooks);
  auto a = client.chat(ask("x"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(a.error().message.find("refused the API key"), std::string::npos) << a.error().message;
  EXPECT_NE(a.error().message.find("OPENAI_API_KEY"), std::string::npos);
  EXPECT_EQ(a.error().message.find(kKey), std::string::npos) << "the key leaked: " << a.error().message;
  ChatRequest r = ask("x");
  r.model = "gpt-nope";
  auto b = client.chat(r);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("Check the model name (\"gpt-nope\")"), std::string::npos) << b.error().message;
  EXPECT_TRUE(rig.sleeps.empty());
  EXPECT_EQ(rig.server.requests().size(), 2u);
  for (const auto& rec : client.records()) {
    EXPECT_EQ(rec.request.dump().find(kKey), std::string::npos);
    EXPECT_EQ(rec.error.find(kKey), std::string::npos);
  }
}

TEST(LlmClient, BudgetStopsCallsAndPricesCost) {
  Rig rig;
  rig.server.push({.body = openai_completion("one", nullptr, 1000000, 200000)});
  rig.server.push({.body = openai_completion("two")});
  ClientOptions o;
  o.budget.max_cost_usd = 3;
  o.prices["gpt-test"] = {2.0, 8.0};
  LlmClient client(*rig.provider, o, rig.hooks);
  ASSERT_TRUE(client.chat(ask("1")).ok());
  EXPECT_NEAR(client.records()[0].cost_usd, 2.0 + 1.6, 1e-9);
  EXPECT_TRUE(client.records()[0].priced);
  EXPECT_TRUE(client.budget_exhausted());
  auto second = client.chat(ask("2"));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("budget is spent ($3.60 of $3.00"), std::string::npos)
      << second.error().message;
  EXPECT_EQ(rig.server.requests().size(), 1u);
  EXPECT_EQ(client.spent().tokens, 1200000);
}

TEST(LlmClient, CacheReplaysARunExactly) {
  Rig rig;
  fs::path dir = fs::temp_directory_path() / ("kp-llm-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  rig.server.push({.body = openai_completion("first answer")});
  ClientOptions o;
  o.cache = CacheMode::kReadWrite;
  o.cache_dir = dir.string();
  {
    LlmClient client(*rig.provider, o, rig.hooks);
    ASSERT_EQ(client.chat(ask("q")).value().text, "first answer");
  }
  o.cache = CacheMode::kReplay;
  LlmClient replay(*rig.provider, o, rig.hooks);
  auto again = replay.chat(ask("q"));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->text, "first answer");
  EXPECT_TRUE(replay.records()[0].cached);
  EXPECT_EQ(replay.records()[0].attempts, 0);
  auto miss = replay.chat(ask("another question"));
  ASSERT_FALSE(miss.ok());
  EXPECT_EQ(miss.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(rig.server.requests().size(), 1u);  // neither replayed call reached the server
  for (const auto& f : fs::directory_iterator(dir))
    EXPECT_EQ(read_file(f.path().string()).value().find(kKey), std::string::npos);
  fs::remove_all(dir);
}

TEST(LlmClient, UnreachableServerIsRetriedThenNamed) {
  FakeLlmServer closed;
  const std::string url = closed.base_url();
  auto transport = make_curl_transport();
  HttpProviderOptions po;
  po.base_url = "http://127.0.0.1:1/v1";  // nothing listens on port 1
  auto provider = make_openai_provider(po, *transport);
  std::vector<double> sleeps;
  ClientOptions o;
  o.retry.max_attempts = 2;
  LlmClient client(*provider, o, {[&](double s) { sleeps.push_back(s); }, [] { return 0.5; }, nullptr});
  auto r = client.chat(ask("x"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("127.0.0.1:1"), std::string::npos) << r.error().message;
  EXPECT_EQ(sleeps.size(), 1u);
}

}  // namespace
}  // namespace kp::llm
