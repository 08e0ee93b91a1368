// The command and manual providers: the model reached through a process or a person.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/provider.h"
#include "sys/subprocess.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kp::llm {
namespace {

namespace fs = std::filesystem;

std::string tail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

class CommandProvider final : public Provider {
 public:
  explicit CommandProvider(CommandProviderOptions o) : o_(std::move(o)) {}
  std::string kind() const override { return "command"; }
  std::string endpoint() const override { return join(o_.argv, " "); }

  Attempt chat(const ChatRequest& request) override {
    Attempt a;
    if (o_.argv.empty()) {
      a.error = make_error(ErrorCode::kInvalidInput, "the command provider has no command (set [llm] command = [...])");
      return a;
    }
    sys::Command c{.argv = o_.argv, .timeout = o_.timeout, .stdin_data = render_as_text(request)};
    auto done = sys::run(c);
    if (!done) {
      a.error = done.error();
      return a;
    }
    if (done->timed_out) {
      a.error = make_error(ErrorCode::kTimeout, fmt::format("`{}` {}", endpoint(), done->describe()));
      a.retry = Retry::kYes;
      return a;
    }
    if (!done->success()) {
      a.error = make_error(ErrorCode::kTool, fmt::format("`{}` {}: {}", endpoint(), done->describe(),
                                                         tail(std::string(trim(done->stderr_text)), 800)));
      return a;
    }
    ChatReply r;
    r.text = done->stdout_text;
    r.finish_raw = "exit 0";
    r.model = request.model;
    a.reply = std::move(r);
    return a;
  }

 private:
  CommandProviderOptions o_;
};

class ManualProvider final : public Provider {
 public:
  explicit ManualProvider(ManualProviderOptions o) : o_(std::move(o)) {}
  std::string kind() const override { return "manual"; }
  std::string endpoint() const override { return o_.dir; }

  Attempt chat(const ChatRequest& request) override {
    Attempt a;
    const std::string key = manual_key(request);
    const fs::path prompt = fs::path(o_.dir) / (key + ".prompt.md");
    const fs::path answer = fs::path(o_.dir) / (key + ".answer.md");
    std::error_code ec;
    if (fs::exists(answer, ec)) {
      auto text = read_file(answer.string());
      if (!text) {
        a.error = text.error();
        return a;
      }
      if (trim(*text).empty()) {
        a.error = make_error(ErrorCode::kPending, fmt::format("the answer file {} is empty: write the reply into it, then {}",
                                                              answer.string(), resume()));
        return a;
      }
      ChatReply r;
      r.text = *text;
      r.finish_raw = "answer file";
      r.model = request.model;
      a.reply = std::move(r);
      return a;
    }
    fs::create_directories(o_.dir, ec);
    if (ec) {
      a.error = make_error(ErrorCode::kIo, fmt::format("creating {}: {}", o_.dir, ec.message()));
      return a;
    }
    const std::string header = fmt::format(
        "<!-- kernelpro manual provider. Answer this prompt as the model would: write the reply to\n"
        "     {}\n     then {}. -->\n\n",
        answer.string(), resume());
    if (Status s = write_file(prompt.string(), header + render_as_text(request)); !s) {
      a.error = s.error();
      return a;
    }
    const nlohmann::json meta = {{"purpose", request.purpose}, {"asked", utc_now_iso8601()}};
    if (Status s = write_file((fs::path(o_.dir) / (key + ".json")).string(), meta.dump(1) + "\n"); !s) {
      a.error = s.error();
      return a;
    }
    a.error = make_error(ErrorCode::kPending, fmt::format("waiting for a manual answer: the prompt is in {}; write the "
                                                          "reply to {}, then {}",
                                                          prompt.string(), answer.string(), resume()));
    return a;
  }

 private:
  std::string resume() const { return o_.resume_hint.empty() ? "run the same command with --resume" : "run " + o_.resume_hint; }
  ManualProviderOptions o_;
};

}  // namespace

std::string manual_key(const ChatRequest& request) { return sha256_hex(to_json(request).dump()).substr(0, 16); }

namespace {
// Who a prompt without its record asks, from the reply format it asks for.
std::string purpose_from_text(const std::string& text) {
  if (text.find("Reply with exactly two code blocks") != std::string::npos) return "coder";
  if (text.find("\"tools\"") != std::string::npos) return "analyst";
  if (text.find("\"direction\"") != std::string::npos) return "planner";
  return "";
}
}  // namespace

std::vector<WaitingPrompt> waiting_prompts(const std::string& dir) {
  std::vector<std::pair<fs::file_time_type, WaitingPrompt>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    constexpr std::string_view kSuffix = ".prompt.md";
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) continue;
    WaitingPrompt w;
    w.key = name.substr(0, name.size() - kSuffix.size());
    w.prompt = e.path().string();
    w.answer = (fs::path(dir) / (w.key + ".answer.md")).string();
    if (fs::exists(w.answer, ec)) {
      auto text = read_file(w.answer);
      if (text && !trim(*text).empty()) continue;
    }
    if (auto meta = read_file((fs::path(dir) / (w.key + ".json")).string())) {
      const auto j = nlohmann::json::parse(*meta, nullptr, false);
      if (j.is_object()) {
        w.purpose = j.value("purpose", "");
        w.asked = j.value("asked", "");
      }
    }
    if (w.purpose.empty())
      if (auto text = read_file(w.prompt)) w.purpose = purpose_from_text(*text);
    found.emplace_back(fs::last_write_time(e.path(), ec), std::move(w));
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<WaitingPrompt> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::unique_ptr<Provider> make_command_provider(CommandProviderOptions o) { return std::make_unique<CommandProvider>(std::move(o)); }
std::unique_ptr<Provider> make_manual_provider(ManualProviderOptions o) { return std::make_unique<ManualProvider>(std::move(o)); }

}  // namespace kp::llm
