// The [llm] section of kernelpro's config file (TOML), and the provider it describes.
//
//   [llm]
//   provider = "openai"            # openai | anthropic | command | manual
//   model = "gpt-4.1"
//   base_url = "https://api.openai.com/v1"   # default per provider
//   api_key_env = "OPENAI_API_KEY"  # the variable holding the key; keys are never in the file
//   timeout_s = 600
//   max_tokens = 8192
//   max_tokens_key = "max_tokens"   # "max_completion_tokens" for OpenAI's reasoning models
//   temperature = 0.2
//   stream = false
//   command = ["llm", "-m", "gpt-4.1"]   # provider = "command"
//   cache = "read-write"            # off | read-write (the default: a run resumes by replaying) | replay
//   [llm.retry]   max_attempts, initial_backoff_s, multiplier, max_backoff_s, jitter, max_retry_after_s
//   [llm.budget]  max_calls, max_tokens, max_cost_usd
//   [llm.prices."gpt-4.1"]  input_per_mtok = 2.0, output_per_mtok = 8.0
//
// Unknown keys are errors (a typo must not silently fall back to a default), and so is an
// api_key in the file.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llm/client.h"
#include "llm/http_transport.h"
#include "llm/provider.h"
#include "util/result.h"

namespace kp::llm {

struct LlmConfig {
  std::string provider = "openai";
  std::string model;
  std::string base_url;     // empty: the provider's default
  std::string api_key_env;  // empty: OPENAI_API_KEY or ANTHROPIC_API_KEY by provider
  double timeout_s = 600;
  int max_tokens = 8192;
  std::string max_tokens_key = "max_tokens";
  double temperature = 0.2;
  bool stream = false;
  std::vector<std::string> command;
  ClientOptions client{.cache = CacheMode::kReadWrite};  // cache_dir is set by the caller (the run directory)
};

// Parses the [llm] table of `toml_text`; `origin` names the file in messages. A file without an
// [llm] table gives the defaults.
Result<LlmConfig> parse_llm_config(std::string_view toml_text, const std::string& origin);

// The base URL used when the config names none.
std::string default_base_url(const std::string& provider);
// The variable the key is read from when the config names none ("" for command and manual).
std::string default_api_key_env(const std::string& provider);

struct ProviderContext {
  std::string api_key{};       // read by the caller from the environment
  HttpTransport* transport = nullptr;  // required for openai and anthropic; must outlive the provider
  std::string manual_dir{};    // required for manual
  std::string resume_hint{};   // manual: the command that continues the run
};

std::unique_ptr<Provider> make_provider(const LlmConfig& config, const ProviderContext& context, Error* error);

}  // namespace kp::llm
