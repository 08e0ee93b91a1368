// Providers: one interface over the ways kernelpro reaches a model. Each call is one attempt;
// retries, the cache, the budget and the call records are the client's (client.h).
//
//   openai     OpenAI-compatible chat completions over HTTP (OpenAI, vLLM, llama.cpp's server,
//              Ollama, ...): base_url and model configurable, tool calling, streaming.
//   anthropic  Anthropic Messages over HTTP, tool use, streaming.
//   command    the prompt (render_as_text) on the stdin of any command; its stdout is the reply.
//   manual     the prompt written to a file; the reply is read from an answer file beside it. A
//              call whose answer is not there yet fails with kPending, and the run stops cleanly;
//              `--resume` asks again, and the same request finds the same files.
//
// HTTP status mapping (openai, anthropic): 200 parsed (a body that cannot be read is kProtocol,
// retried); 408, 409, 429, 500, 502, 503, 504, 529 and transport timeouts or broken
// connections retried, with the server's Retry-After (seconds, or retry-after-ms) passed on;
// 401 and 403 (the key), 404 (the model or base_url), 400 and other 4xx are not retried
// (kInvalidInput, with the server's message and what to check).
//
// Secrets: the API key is in the options only (the CLI reads it from the environment variable
// the config names); it goes into the request header and nowhere else. Any error text that
// echoes it (a server that quotes the header) has it replaced by "[redacted]".
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llm/chat.h"
#include "llm/http_transport.h"
#include "util/result.h"

namespace kp::llm {

enum class Retry { kNo, kYes };

// The outcome of one attempt.
struct Attempt {
  std::optional<ChatReply> reply;  // set on success; then `error` is unused
  Error error;
  Retry retry = Retry::kNo;             // whether asking again may succeed
  std::optional<double> retry_after_s;  // the server's Retry-After, when it sent one
  int http_status = 0;                  // 0 when no HTTP exchange completed
};

class Provider {
 public:
  virtual ~Provider() = default;
  // "openai", "anthropic", "command" or "manual".
  virtual std::string kind() const = 0;
  // Where the provider sends requests (base URL, command line, folder), for the cache key and
  // the records; never a credential.
  virtual std::string endpoint() const = 0;
  virtual Attempt chat(const ChatRequest& request) = 0;
};

struct HttpProviderOptions {
  std::string base_url;  // e.g. https://api.openai.com/v1, http://127.0.0.1:8000/v1, https://api.anthropic.com/v1
  std::string api_key;   // may be empty (local servers); never logged
  std::string api_key_env;  // the variable it came from, named in the 401 message
  std::vector<std::pair<std::string, std::string>> extra_headers;  // e.g. OpenAI-Organization
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::string max_tokens_key = "max_tokens";  // openai only; "max_completion_tokens" for o-series
  std::string anthropic_version = "2023-06-01";  // anthropic only: the anthropic-version header
};

// The transport must outlive the provider.
std::unique_ptr<Provider> make_openai_provider(HttpProviderOptions options, HttpTransport& transport);
std::unique_ptr<Provider> make_anthropic_provider(HttpProviderOptions options, HttpTransport& transport);

struct CommandProviderOptions {
  std::vector<std::string> argv;  // e.g. {"llm", "-m", "gpt-4.1"}; the prompt arrives on stdin
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};
// A non-zero exit is an error with the command's stderr (not retried); a timeout is retried.
std::unique_ptr<Provider> make_command_provider(CommandProviderOptions options);

struct ManualProviderOptions {
  std::string dir;          // where prompts and answers live (the run directory's llm/manual)
  std::string resume_hint;  // the command that continues the run, written into each prompt file
};
// For a request, the files are DIR/<key>.prompt.md and DIR/<key>.answer.md, key = the first 16
// hex digits of the SHA-256 of to_json(request). The answer file's whole text is the reply.
// Beside the prompt, DIR/<key>.json records who asks (ChatRequest::purpose) and when.
std::unique_ptr<Provider> make_manual_provider(ManualProviderOptions options);
std::string manual_key(const ChatRequest& request);

// A prompt of the manual provider that waits for its answer: no answer file, or an empty one.
struct WaitingPrompt {
  std::string key;
  std::string purpose;  // from DIR/<key>.json, else read from the reply format the prompt asks for
  std::string prompt;   // DIR/<key>.prompt.md
  std::string answer;   // DIR/<key>.answer.md: where the reply goes
  std::string asked;    // ISO 8601 UTC, when it was written ("" when unknown)
};
// The prompts waiting in `dir`, oldest first; none when it does not exist.
std::vector<WaitingPrompt> waiting_prompts(const std::string& dir);

}  // namespace kp::llm
