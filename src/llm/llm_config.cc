#include "llm/llm_config.h"

#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace kp::llm {
namespace {

Error bad(const std::string& origin, const std::string& what) {
  return make_error(ErrorCode::kInvalidInput, fmt::format("{}: {}", origin, what));
}

// Every key of `t` must be in `known`.
std::optional<Error> check_keys(const toml::table& t, const std::set<std::string>& known, const std::string& where,
                                const std::string& origin) {
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "api_key" || key == "key")
      return bad(origin, fmt::format("[{}] {}: API keys are read only from the environment; remove it and name the "
                                     "variable with api_key_env",
                                     where, key));
    if (!known.count(key)) {
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      return bad(origin, fmt::format("[{}] has an unknown key \"{}\" (known: {})", where, key, list));
    }
  }
  return std::nullopt;
}

template <typename T>
std::optional<Error> get(const toml::table& t, const char* key, T& out, const std::string& where, const std::string& origin) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!n->is_string()) return bad(origin, fmt::format("[{}] {} must be a string", where, key));
    out = *n->value<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!n->is_boolean()) return bad(origin, fmt::format("[{}] {} must be true or false", where, key));
    out = *n->value<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!n->is_integer()) return bad(origin, fmt::format("[{}] {} must be an integer", where, key));
    out = static_cast<T>(*n->value<int64_t>());
  } else {
    if (!n->is_number()) return bad(origin, fmt::format("[{}] {} must be a number", where, key));
    out = *n->value<double>();
  }
  return std::nullopt;
}

}  // namespace

std::string default_base_url(const std::string& provider) {
  if (provider == "openai") return "https://api.openai.com/v1";
  if (provider == "anthropic") return "https://api.anthropic.com/v1";
  return "";
}

std::string default_api_key_env(const std::string& provider) {
  if (provider == "openai") return "OPENAI_API_KEY";
  if (provider == "anthropic") return "ANTHROPIC_API_KEY";
  return "";
}

Result<LlmConfig> parse_llm_config(std::string_view text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << e.source().begin;
    return bad(origin, fmt::format("not valid TOML at {}: {}", where.str(), e.description()));
  }
  LlmConfig c;
  const toml::table* llm = root["llm"].as_table();
  if (!llm) return c;
  if (auto e = check_keys(*llm,
                          {"provider", "model", "base_url", "api_key_env", "timeout_s", "max_tokens", "max_tokens_key",
                           "temperature", "stream", "command", "cache", "retry", "budget", "prices"},
                          "llm", origin))
    return *e;
  std::string cache = "read-write";
  for (auto e : {get(*llm, "provider", c.provider, "llm", origin), get(*llm, "model", c.model, "llm", origin),
                 get(*llm, "base_url", c.base_url, "llm", origin), get(*llm, "api_key_env", c.api_key_env, "llm", origin),
                 get(*llm, "timeout_s", c.timeout_s, "llm", origin), get(*llm, "max_tokens", c.max_tokens, "llm", origin),
                 get(*llm, "max_tokens_key", c.max_tokens_key, "llm", origin),
                 get(*llm, "temperature", c.temperature, "llm", origin), get(*llm, "stream", c.stream, "llm", origin),
                 get(*llm, "cache", cache, "llm", origin)})
    if (e) return *e;
  static const std::set<std::string> kinds{"openai", "anthropic", "command", "manual"};
  if (!kinds.count(c.provider))
    return bad(origin, fmt::format("[llm] provider \"{}\" is not one of openai, anthropic, command, manual", c.provider));
  auto mode = cache_mode_from_string(cache);
  if (!mode) return bad(origin, "[llm] cache: " + mode.error().message);
  c.client.cache = *mode;
  if (const toml::node* cmd = llm->get("command")) {
    const toml::array* a = cmd->as_array();
    if (!a) return bad(origin, "[llm] command must be a list of strings, e.g. [\"llm\", \"-m\", \"gpt-4.1\"]");
    for (const auto& x : *a) {
      if (!x.is_string()) return bad(origin, "[llm] command must be a list of strings");
      c.command.push_back(*x.value<std::string>());
    }
  }
  if (c.provider == "command" && c.command.empty()) return bad(origin, "[llm] provider = \"command\" needs command = [...]");
  if (c.max_tokens <= 0) return bad(origin, "[llm] max_tokens must be positive");
  if (c.timeout_s <= 0) return bad(origin, "[llm] timeout_s must be positive");

  if (const toml::table* r = (*llm)["retry"].as_table()) {
    RetryPolicy& p = c.client.retry;
    if (auto e = check_keys(*r, {"max_attempts", "initial_backoff_s", "multiplier", "max_backoff_s", "jitter", "max_retry_after_s"},
                            "llm.retry", origin))
      return *e;
    for (auto e : {get(*r, "max_attempts", p.max_attempts, "llm.retry", origin),
                   get(*r, "initial_backoff_s", p.initial_backoff_s, "llm.retry", origin),
                   get(*r, "multiplier", p.multiplier, "llm.retry", origin),
                   get(*r, "max_backoff_s", p.max_backoff_s, "llm.retry", origin), get(*r, "jitter", p.jitter, "llm.retry", origin),
                   get(*r, "max_retry_after_s", p.max_retry_after_s, "llm.retry", origin)})
      if (e) return *e;
    if (p.max_attempts < 1) return bad(origin, "[llm.retry] max_attempts must be at least 1");
    if (p.jitter < 0 || p.jitter > 1) return bad(origin, "[llm.retry] jitter must be between 0 and 1");
  }
  if (const toml::table* b = (*llm)["budget"].as_table()) {
    Budget& g = c.client.budget;
    if (auto e = check_keys(*b, {"max_calls", "max_tokens", "max_cost_usd"}, "llm.budget", origin)) return *e;
    for (auto e : {get(*b, "max_calls", g.max_calls, "llm.budget", origin), get(*b, "max_tokens", g.max_tokens, "llm.budget", origin),
                   get(*b, "max_cost_usd", g.max_cost_usd, "llm.budget", origin)})
      if (e) return *e;
  }
  if (const toml::table* ps = (*llm)["prices"].as_table()) {
    for (const auto& [model, v] : *ps) {
      const toml::table* t = v.as_table();
      const std::string where = fmt::format("llm.prices.\"{}\"", model.str());
      if (!t) return bad(origin, fmt::format("[{}] must be a table with input_per_mtok and output_per_mtok", where));
      if (auto e = check_keys(*t, {"input_per_mtok", "output_per_mtok"}, where, origin)) return *e;
      Price p;
      for (auto e : {get(*t, "input_per_mtok", p.input_per_mtok, where, origin),
                     get(*t, "output_per_mtok", p.output_per_mtok, where, origin)})
        if (e) return *e;
      c.client.prices[std::string(model.str())] = p;
    }
  }
  return c;
}

std::unique_ptr<Provider> make_provider(const LlmConfig& c, const ProviderContext& ctx, Error* error) {
  auto fail = [&](const std::string& what) {
    if (error) *error = make_error(ErrorCode::kInvalidInput, what);
    return nullptr;
  };
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(c.timeout_s * 1000));
  if (c.provider == "openai" || c.provider == "anthropic") {
    if (!ctx.transport) return fail("an HTTP provider needs a transport");
    HttpProviderOptions o;
    o.base_url = c.base_url.empty() ? default_base_url(c.provider) : c.base_url;
    o.api_key = ctx.api_key;
    o.api_key_env = c.api_key_env.empty() ? default_api_key_env(c.provider) : c.api_key_env;
    o.timeout = timeout;
    o.max_tokens_key = c.max_tokens_key;
    return c.provider == "openai" ? make_openai_provider(o, *ctx.transport) : make_anthropic_provider(o, *ctx.transport);
  }
  if (c.provider == "command") return make_command_provider({c.command, timeout});
  if (c.provider == "manual") {
    if (ctx.manual_dir.empty()) return fail("the manual provider needs a folder for its prompts");
    return make_manual_provider({ctx.manual_dir, ctx.resume_hint});
  }
  return fail(fmt::format("unknown provider \"{}\"", c.provider));
}

}  // namespace kp::llm
