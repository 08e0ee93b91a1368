// The command provider with real child processes, the manual provider through a real stop and
// resume (a second provider over the same folder, as a resumed run makes), and the [llm] config.
#include <gtest/gtest.h>

#include <filesystem>

#include "llm/client.h"
#include "llm/llm_config.h"
#include "llm/provider.h"
#include "util/strings.h"

namespace kp::llm {
namespace {

namespace fs = std::filesystem;

ChatRequest ask(const std::string& text) {
  ChatRequest r;
  r.model = "local";
  r.messages = {{Role::kSystem, "You write CUDA kernels.", {}, ""}, {Role::kUser, text, {}, ""}};
  return r;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kp-llm-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST(LlmCommand, PromptOnStdinReplyOnStdout) {
  // The "model": counts the prompt's lines and echoes its user section's first line.
  auto p = make_command_provider({{"/bin/sh", "-c", "sed -n '/^### user$/{n;p;}' | sed 's/^/you said: /'"}});
  auto a = p->chat(ask("make gelu faster"));
  ASSERT_TRUE(a.reply) << a.error.message;
  EXPECT_EQ(a.reply->text, "you said: make gelu faster\n");
  EXPECT_EQ(p->kind(), "command");
}

TEST(LlmCommand, FailureCarriesStderrAndTimeoutIsRetryable) {
  auto bad = make_command_provider({{"/bin/sh", "-c", "cat > /dev/null; echo 'quota exceeded' >&2; exit 3"}});
  auto a = bad->chat(ask("x"));
  ASSERT_FALSE(a.reply);
  EXPECT_EQ(a.retry, Retry::kNo);
  EXPECT_NE(a.error.message.find("quota exceeded"), std::string::npos) << a.error.message;
  EXPECT_NE(a.error.message.find("status 3"), std::string::npos) << a.error.message;
  auto slow = make_command_provider({{"/bin/sh", "-c", "sleep 5"}, std::chrono::milliseconds(200)});
  auto b = slow->chat(ask("x"));
  ASSERT_FALSE(b.reply);
  EXPECT_EQ(b.error.code, ErrorCode::kTimeout);
  EXPECT_EQ(b.retry, Retry::kYes);
  auto missing = make_command_provider({{"no-such-llm-cli-kp"}});
  auto c = missing->chat(ask("x"));
  ASSERT_FALSE(c.reply);
  EXPECT_EQ(c.error.code, ErrorCode::kNotFound);
}

TEST(LlmManual, StopsWithThePromptThenResumesFromTheAnswer) {
  TempDir dir;
  const ChatRequest r = ask("write the kernel");
  {
    auto p = make_manual_provider({dir.path.string(), "kernelpro optimize examples/gelu --resume"});
    LlmClient client(*p, {});
    auto first = client.chat(r);
    ASSERT_FALSE(first.ok());
    EXPECT_EQ(first.error().code, ErrorCode::kPending);
    EXPECT_NE(first.error().message.find("kernelpro optimize examples/gelu --resume"), std::string::npos);
  }
  const fs::path prompt = dir.path / (manual_key(r) + ".prompt.md");
  const fs::path answer = dir.path / (manual_key(r) + ".answer.md");
  auto text = read_file(prompt.string());
  ASSERT_TRUE(text.ok()) << prompt;
  EXPECT_NE(text->find("### user\nwrite the kernel"), std::string::npos) << *text;
  EXPECT_NE(text->find(answer.string()), std::string::npos) << "the prompt says where the answer goes";

  ASSERT_TRUE(write_file(answer.string(), "   \n").ok());  // an empty answer is still pending
  auto p2 = make_manual_provider({dir.path.string(), ""});
  EXPECT_EQ(p2->chat(r).error.code, ErrorCode::kPending);
  ASSERT_TRUE(write_file(answer.string(), "```cuda\n__global__ void k() {}\n```\n").ok());
  auto resumed = p2->chat(r);  // the resumed run asks the same request
  ASSERT_TRUE(resumed.reply) << resumed.error.message;
  EXPECT_NE(resumed.reply->text.find("__global__"), std::string::npos);
  EXPECT_EQ(p2->chat(ask("another prompt")).error.code, ErrorCode::kPending);  // a different request
}

TEST(LlmConfig, ParsesEverySectionAndMakesTheProvider) {
  auto c = parse_llm_config(R"(
[llm]
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_env = "MY_KEY"
timeout_s = 30
stream = true
cache = "replay"
[llm.retry]
max_attempts = 3
jitter = 0.1
[llm.budget]
max_calls = 40
max_cost_usd = 12.5
[llm.prices."claude-sonnet-4-5"]
input_per_mtok = 3.0
output_per_mtok = 15.0
)",
                            "kernelpro.toml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->provider, "anthropic");
  EXPECT_TRUE(c->stream);
  EXPECT_EQ(c->client.cache, CacheMode::kReplay);
  EXPECT_EQ(c->client.retry.max_attempts, 3);
  EXPECT_EQ(c->client.budget.max_calls, 40);
  EXPECT_DOUBLE_EQ(c->client.prices.at("claude-sonnet-4-5").output_per_mtok, 15.0);
  auto transport = make_curl_transport();
  Error e;
  auto p = make_provider(*c, {.api_key = "k", .transport = transport.get()}, &e);
  ASSERT_TRUE(p) << e.message;
  EXPECT_EQ(p->kind(), "anthropic");
  EXPECT_EQ(p->endpoint(), "https://api.anthropic.com/v1");
  auto defaults = parse_llm_config("[task]\nname = 1\n", "x.toml");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(default_api_key_env(defaults->provider), "OPENAI_API_KEY");
}

TEST(LlmConfig, MistakesAreNamed) {
  auto expect_error = [](const std::string& toml, const std::string& part) {
    auto c = parse_llm_config(toml, "k.toml");
    ASSERT_FALSE(c.ok()) << toml;
    EXPECT_EQ(c.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(c.error().message.find(part), std::string::npos) << c.error().message;
    EXPECT_EQ(c.error().message.rfind("k.toml: ", 0), 0u) << c.error().message;
  };
  expect_error("[llm]\napi_key = \"sk-123\"\n", "only from the environment");
  expect_error("[llm]\nmodle = \"x\"\n", "unknown key \"modle\"");
  expect_error("[llm]\nprovider = \"gemini\"\n", "not one of openai, anthropic, command, manual");
  expect_error("[llm]\nprovider = \"command\"\n", "needs command");
  expect_error("[llm]\ntimeout_s = \"long\"\n", "timeout_s must be a number");
  expect_error("[llm]\ncache = \"sometimes\"\n", "unknown cache mode");
  expect_error("[llm.retry]\nmax_attempts = 0\n", "at least 1");
  expect_error("[llm]\nmodel = \n", "not valid TOML");
}

}  // namespace
}  // namespace kp::llm
