#include "llm/client.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "util/hash.h"
#include "util/strings.h"

namespace kp::llm {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(CacheMode mode) {
  switch (mode) {
    case CacheMode::kOff: return "off";
    case CacheMode::kReadWrite: return "read-write";
    case CacheMode::kReplay: return "replay";
  }
  return "off";
}

Result<CacheMode> cache_mode_from_string(std::string_view s) {
  for (CacheMode m : {CacheMode::kOff, CacheMode::kReadWrite, CacheMode::kReplay})
    if (s == to_string(m)) return m;
  return make_error(ErrorCode::kInvalidInput, fmt::format("unknown cache mode \"{}\" (off, read-write, replay)", s));
}

LlmClient::LlmClient(Provider& provider, ClientOptions options, ClientHooks hooks)
    : provider_(provider), o_(std::move(options)), hooks_(std::move(hooks)) {
  if (!hooks_.sleep) hooks_.sleep = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };
  if (!hooks_.uniform01) {
    auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
    hooks_.uniform01 = [rng] { return std::uniform_real_distribution<double>(0, 1)(*rng); };
  }
  if (!hooks_.now_s)
    hooks_.now_s = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  o_.retry.max_attempts = std::max(1, o_.retry.max_attempts);
}

bool LlmClient::budget_exhausted() const {
  const Budget& b = o_.budget;
  return (b.max_calls > 0 && spent_.calls >= b.max_calls) || (b.max_tokens > 0 && spent_.tokens >= b.max_tokens) ||
         (b.max_cost_usd > 0 && spent_.cost_usd >= b.max_cost_usd);
}

double LlmClient::backoff_s(int next, std::optional<double> retry_after_s) {
  const RetryPolicy& p = o_.retry;
  double wait = std::min(p.max_backoff_s, p.initial_backoff_s * std::pow(p.multiplier, next - 2));
  wait *= 1 + p.jitter * (2 * hooks_.uniform01() - 1);
  if (retry_after_s) wait = std::max(wait, *retry_after_s);
  return std::max(0.0, wait);
}

std::string LlmClient::cache_key(const ChatRequest& request) const {
  return sha256_hex(provider_.kind() + "\n" + provider_.endpoint() + "\n" + to_json(request).dump());
}

Price LlmClient::price_of(const std::string& model, bool* found) const {
  auto it = o_.prices.find(model);
  *found = it != o_.prices.end();
  return *found ? it->second : Price{};
}

Result<ChatReply> LlmClient::chat(const ChatRequest& request) {
  CallRecord rec;
  rec.provider = provider_.kind();
  rec.endpoint = provider_.endpoint();
  rec.model = request.model;
  rec.request = to_json(request);
  const double t0 = hooks_.now_s();
  auto finish = [&](Result<ChatReply> r) -> Result<ChatReply> {
    rec.latency_s = hooks_.now_s() - t0;
    if (r) {
      rec.reply = to_json(*r);
      rec.usage = r->usage;
    } else {
      rec.error = r.error().message;
    }
    records_.push_back(std::move(rec));
    return r;
  };

  const std::string key = cache_key(request);
  const fs::path cache_file = fs::path(o_.cache_dir) / (key + ".json");
  if (o_.cache != CacheMode::kOff) {
    std::error_code ec;
    if (fs::exists(cache_file, ec)) {
      auto text = read_file(cache_file.string());
      json j = text ? json::parse(*text, nullptr, false) : json();
      if (!j.is_discarded() && j.is_object() && j.contains("reply")) {
        if (auto reply = reply_from_json(j["reply"])) {
          rec.cached = true;
          return finish(std::move(*reply));
        }
      }
      if (o_.cache == CacheMode::kReplay)
        return finish(make_error(ErrorCode::kInvalidInput, fmt::format("the cached reply {} is unreadable", cache_file.string())));
    } else if (o_.cache == CacheMode::kReplay) {
      return finish(make_error(ErrorCode::kNotFound,
                               fmt::format("replay: no cached reply for this request in {} (key {}): the run asked "
                                           "something the recorded run did not; run with the cache in read-write mode "
                                           "to call the model",
                                           o_.cache_dir, key.substr(0, 16))));
    }
  }

  if (budget_exhausted()) {
    const Budget& b = o_.budget;
    std::string which = b.max_calls > 0 && spent_.calls >= b.max_calls ? fmt::format("{} of {} calls", spent_.calls, b.max_calls)
                        : b.max_tokens > 0 && spent_.tokens >= b.max_tokens
                            ? fmt::format("{} of {} tokens", spent_.tokens, b.max_tokens)
                            : fmt::format("${:.2f} of ${:.2f}", spent_.cost_usd, b.max_cost_usd);
    return finish(make_error(ErrorCode::kUnavailable,
                             fmt::format("the LLM budget is spent ({} used): raise [llm.budget] in the config", which)));
  }

  Attempt a;
  for (int n = 1; n <= o_.retry.max_attempts; ++n) {
    if (n > 1) {
      const double wait = backoff_s(n, a.retry_after_s);
      if (a.retry_after_s && *a.retry_after_s > o_.retry.max_retry_after_s)
        return finish(make_error(a.error.code, fmt::format("{} (the server asked to wait {:.0f} s, more than "
                                                           "max_retry_after_s = {:.0f}; try again later)",
                                                           a.error.message, *a.retry_after_s, o_.retry.max_retry_after_s)));
      hooks_.sleep(wait);
    }
    a = provider_.chat(request);
    rec.attempts = n;
    if (a.reply || a.retry == Retry::kNo) break;
  }
  if (!a.reply) {
    Error e = a.error;
    if (rec.attempts > 1) e.message += fmt::format(" (after {} attempts)", rec.attempts);
    return finish(e);
  }

  ChatReply reply = std::move(*a.reply);
  bool priced = false;
  const Price p = price_of(request.model, &priced);
  rec.priced = priced;
  rec.cost_usd = (reply.usage.input_tokens * p.input_per_mtok + reply.usage.output_tokens * p.output_per_mtok) / 1e6;
  spent_.calls += 1;
  spent_.tokens += reply.usage.input_tokens + reply.usage.output_tokens;
  spent_.cost_usd += rec.cost_usd;
  if (o_.cache == CacheMode::kReadWrite) {
    std::error_code ec;
    fs::create_directories(o_.cache_dir, ec);
    const std::string tmp = cache_file.string() + ".tmp";
    json entry = {{"request", rec.request}, {"reply", to_json(reply)}, {"provider", rec.provider}};
    if (write_file(tmp, entry.dump(1))) fs::rename(tmp, cache_file, ec);
  }
  return finish(std::move(reply));
}

}  // namespace kp::llm
