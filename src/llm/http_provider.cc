#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "llm/provider.h"
#include "llm/wire.h"

namespace kp::llm {
namespace {

enum class Api { kOpenAi, kAnthropic };

std::string redact(std::string text, const std::string& secret) {
  if (secret.size() < 4) return text;
  for (size_t at; (at = text.find(secret)) != std::string::npos;) text.replace(at, secret.size(), "[redacted]");
  return text;
}

std::optional<double> retry_after(const HttpResponse& r) {
  if (auto it = r.headers.find("retry-after-ms"); it != r.headers.end()) {
    char* end = nullptr;
    double ms = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && ms >= 0) return ms / 1000;
  }
  if (auto it = r.headers.find("retry-after"); it != r.headers.end()) {
    char* end = nullptr;
    double s = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && s >= 0) return s;  // an HTTP date is left to the backoff
  }
  return std::nullopt;
}

bool retryable_status(int s) { return s == 408 || s == 409 || s == 429 || s == 529 || (s >= 500 && s <= 599); }

class HttpProvider final : public Provider {
 public:
  HttpProvider(Api api, HttpProviderOptions o, HttpTransport& t) : api_(api), o_(std::move(o)), transport_(t) {
    while (!o_.base_url.empty() && o_.base_url.back() == '/') o_.base_url.pop_back();
  }

  std::string kind() const override { return api_ == Api::kOpenAi ? "openai" : "anthropic"; }
  std::string endpoint() const override { return o_.base_url; }

  Attempt chat(const ChatRequest& request) override {
    HttpRequest http;
    http.timeout = o_.timeout;
    http.headers.emplace_back("content-type", "application/json");
    if (api_ == Api::kOpenAi) {
      http.url = o_.base_url + "/chat/completions";
      http.body = openai_body(request, o_.max_tokens_key).dump();
      if (!o_.api_key.empty()) http.headers.emplace_back("authorization", "Bearer " + o_.api_key);
    } else {
      http.url = o_.base_url + "/messages";
      http.body = anthropic_body(request).dump();
      if (!o_.api_key.empty()) http.headers.emplace_back("x-api-key", o_.api_key);
      http.headers.emplace_back("anthropic-version", o_.anthropic_version);
    }
    if (request.stream) http.headers.emplace_back("accept", "text/event-stream");
    for (const auto& h : o_.extra_headers) http.headers.push_back(h);

    Attempt a;
    auto response = transport_.post(http);
    if (!response) {
      a.error = response.error();
      a.error.message = redact(a.error.message, o_.api_key);
      a.retry = a.error.code == ErrorCode::kInvalidInput ? Retry::kNo : Retry::kYes;
      return a;
    }
    a.http_status = response->status;
    const std::string who = fmt::format("{} at {}", kind(), o_.base_url);
    if (response->status != 200) {
      const std::string msg = redact(error_message_of(response->body), o_.api_key);
      if (retryable_status(response->status)) {
        a.error = make_error(ErrorCode::kUnavailable, fmt::format("{}: HTTP {}: {}", who, response->status, msg));
        a.retry = Retry::kYes;
        a.retry_after_s = retry_after(*response);
      } else if (response->status == 401 || response->status == 403) {
        a.error = make_error(ErrorCode::kInvalidInput,
                             fmt::format("{} refused the API key (HTTP {}): {}. Check the key in ${}{}", who,
                                         response->status, msg, o_.api_key_env.empty() ? "(api_key_env)" : o_.api_key_env,
                                         o_.api_key.empty() ? ", which is empty or unset" : ""));
      } else if (response->status == 404) {
        a.error = make_error(ErrorCode::kInvalidInput,
                             fmt::format("{}: HTTP 404: {}. Check the model name (\"{}\") and base_url", who, msg,
                                         request.model));
      } else {
        a.error = make_error(ErrorCode::kInvalidInput, fmt::format("{}: HTTP {}: {}", who, response->status, msg));
      }
      return a;
    }
    // A stream when the server says so; a server that ignores "stream" answers plain JSON.
    const std::string& type = response->headers["content-type"];
    const bool sse = type.rfind("text/event-stream", 0) == 0 ||
                     (request.stream && type.rfind("application/json", 0) != 0 &&
                      std::string_view(response->body).substr(0, 1) != "{");
    Result<ChatReply> reply = api_ == Api::kOpenAi ? (sse ? parse_openai_stream(response->body) : parse_openai_reply(response->body))
                                                   : (sse ? parse_anthropic_stream(response->body) : parse_anthropic_reply(response->body));
    if (!reply) {
      a.error = reply.error();
      a.error.message = redact(who + ": " + a.error.message, o_.api_key);
      a.retry = Retry::kYes;  // a truncated or garbled body: the same request may come back whole
      return a;
    }
    a.reply = std::move(*reply);
    return a;
  }

 private:
  Api api_;
  HttpProviderOptions o_;
  HttpTransport& transport_;
};

}  // namespace

std::unique_ptr<Provider> make_openai_provider(HttpProviderOptions o, HttpTransport& t) {
  return std::make_unique<HttpProvider>(Api::kOpenAi, std::move(o), t);
}
std::unique_ptr<Provider> make_anthropic_provider(HttpProviderOptions o, HttpTransport& t) {
  return std::make_unique<HttpProvider>(Api::kAnthropic, std::move(o), t);
}

}  // namespace kp::llm
