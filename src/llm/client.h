// LlmClient: what the agents call. Wraps a Provider with the policies every call needs:
//
//   retries  an attempt marked Retry::kYes (429, 5xx, timeouts, broken connections, a body that
//            cannot be read) is repeated up to RetryPolicy::max_attempts in all. The wait before
//            attempt n+1 is min(max_backoff_s, initial_backoff_s x multiplier^(n-1)), times a
//            jitter factor drawn uniformly from [1 - jitter, 1 + jitter]; a server's Retry-After
//            replaces it when longer (capped at max_retry_after_s: beyond it the call fails and
//            says how long the server asked to wait).
//            Worked example, the defaults (1 s, x2, 60 s cap, jitter 0.25): waits of 0.75-1.25 s,
//            1.5-2.5 s, 3-5 s, 6-10 s between five attempts; a 429 with Retry-After: 7 waits 7 s.
//   budget   calls, tokens (input + output) and dollars per client (one run). A call is refused
//            before it is made once a limit is reached, with kUnavailable and the limit's name;
//            budget_exhausted() then says true. Cost = tokens x the model's price per million
//            (ClientOptions::prices; a model without a price costs 0, and the record says so).
//   cache    keyed by SHA-256 of the provider kind, endpoint and canonical request JSON. kReadWrite
//            answers a request seen before from DIR/<key>.json and stores new replies;
//            kReplay answers only from the cache (a miss is kNotFound: the run diverged from
//            the recorded one); kOff neither reads nor writes.
//   records  one CallRecord per chat() call, success or not, for the run store.
//
// Not thread-safe: one client per thread, or a lock around it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "llm/provider.h"
#include "util/result.h"

namespace kp::llm {

struct RetryPolicy {
  int max_attempts = 5;          // attempts in all, the first included; >= 1
  double initial_backoff_s = 1;  // the wait after the first failure, before jitter
  double multiplier = 2;         // each further wait is this many times the previous
  double max_backoff_s = 60;     // no computed wait is longer
  double jitter = 0.25;          // +-25%: clients that failed together do not retry together
  double max_retry_after_s = 300;  // a longer Retry-After fails the call instead of waiting
};

struct Budget {  // 0: no limit
  int64_t max_calls = 0;
  int64_t max_tokens = 0;
  double max_cost_usd = 0;
};

struct Price {
  double input_per_mtok = 0;   // dollars per million input tokens
  double output_per_mtok = 0;  // dollars per million output tokens
};

enum class CacheMode { kOff, kReadWrite, kReplay };
const char* to_string(CacheMode mode);
Result<CacheMode> cache_mode_from_string(std::string_view s);  // "off", "read-write", "replay"

struct ClientOptions {
  RetryPolicy retry{};
  Budget budget{};
  std::map<std::string, Price> prices{};  // by model name, as in ChatRequest::model
  CacheMode cache = CacheMode::kOff;
  std::string cache_dir{};  // required unless cache is kOff
};

// Waiting and chance, injected so tests run without sleeping and reproducibly.
struct ClientHooks {
  std::function<void(double seconds)> sleep;  // default: std::this_thread::sleep_for
  std::function<double()> uniform01;          // default: a std::mt19937_64 seeded from random_device
  std::function<double()> now_s;              // default: the steady clock, in seconds
};

struct CallRecord {
  std::string provider;   // Provider::kind()
  std::string endpoint;   // Provider::endpoint()
  std::string model;
  nlohmann::json request;  // to_json(ChatRequest): the prompt, tools and settings
  nlohmann::json reply;    // to_json(ChatReply), or null when the call failed
  std::string error;       // why it failed, or empty
  Usage usage;
  double cost_usd = 0;
  bool priced = false;    // whether the model had a price
  double latency_s = 0;   // from the first attempt to the reply, waits included
  int attempts = 0;       // provider calls made (0 when answered from the cache or refused)
  bool cached = false;
};

struct Spend {
  int64_t calls = 0;  // provider calls that returned a reply (cache hits not counted)
  int64_t tokens = 0;
  double cost_usd = 0;
};

class LlmClient {
 public:
  // `provider` must outlive the client.
  LlmClient(Provider& provider, ClientOptions options, ClientHooks hooks = {});

  // One reply for the request, after retries, from the cache or the provider. Errors: the last
  // attempt's (with how many were made), kUnavailable when the budget is spent, kNotFound on a
  // replay-mode miss, kPending from the manual provider (not retried).
  Result<ChatReply> chat(const ChatRequest& request);

  const std::vector<CallRecord>& records() const { return records_; }
  const Spend& spent() const { return spent_; }
  bool budget_exhausted() const;

  // The wait before attempt `next` (2 for the first retry) given the server's Retry-After.
  double backoff_s(int next, std::optional<double> retry_after_s);

 private:
  std::string cache_key(const ChatRequest& request) const;
  Price price_of(const std::string& model, bool* found) const;

  Provider& provider_;
  ClientOptions o_;
  ClientHooks hooks_;
  std::vector<CallRecord> records_;
  Spend spent_;
};

}  // namespace kp::llm
