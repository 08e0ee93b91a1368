#include "tests/support/fake_llm_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>

namespace kp::testing {

FakeLlmServer::FakeLlmServer() : server_(std::make_unique<httplib::Server>()) {
  server_->Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
    CannedResponse r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ReceivedRequest got{req.path, {}, req.body};
      for (const auto& [k, v] : req.headers) {
        std::string name = k;
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        got.headers[name] = v;
      }
      received_.push_back(std::move(got));
      if (next_ < queue_.size()) {
        r = queue_[next_++];
      } else if (responder_) {
        r = responder_(received_.back());
      } else {
        r.status = 500;
        r.body = R"({"error":{"message":"no canned response","type":"test"}})";
      }
    }
    if (r.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(r.delay_ms));
    res.status = r.status;
    for (const auto& [k, v] : r.headers) res.set_header(k, v);
    if (r.chunks.empty()) {
      res.set_content(r.body, r.content_type.c_str());
      return;
    }
    auto chunks = std::make_shared<std::vector<std::string>>(r.chunks);
    const bool drop = r.drop_after_chunks;
    res.set_chunked_content_provider(r.content_type, [chunks, drop](size_t, httplib::DataSink& sink) {
      for (const auto& c : *chunks)
        if (!sink.write(c.data(), c.size())) return false;
      if (drop) return false;  // abort: the client sees the connection close mid-body
      sink.done();
      return true;
    });
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) std::abort();
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeLlmServer::~FakeLlmServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeLlmServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

void FakeLlmServer::push(CannedResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(response));
}

void FakeLlmServer::respond_with(std::function<CannedResponse(const ReceivedRequest&)> responder) {
  std::lock_guard<std::mutex> lock(mu_);
  responder_ = std::move(responder);
}

std::vector<ReceivedRequest> FakeLlmServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

std::string openai_completion(const std::string& content, const nlohmann::json& tool_calls, int input_tokens,
                              int output_tokens) {
  nlohmann::json msg = {{"role", "assistant"}, {"content", content}};
  if (!tool_calls.is_null()) msg["tool_calls"] = tool_calls;
  return nlohmann::json{
      {"id", "chatcmpl-1"},
      {"object", "chat.completion"},
      {"model", "gpt-test"},
      {"choices",
       nlohmann::json::array(
           {{{"index", 0}, {"message", msg}, {"finish_reason", tool_calls.is_null() ? "stop" : "tool_calls"}}})},
      {"usage",
       {{"prompt_tokens", input_tokens},
        {"completion_tokens", output_tokens},
        {"total_tokens", input_tokens + output_tokens}}}}
      .dump();
}

std::vector<std::string> openai_sse(const std::vector<std::string>& chunk_json, bool done) {
  std::vector<std::string> out;
  for (const auto& c : chunk_json) out.push_back("data: " + c + "\n\n");
  if (done) out.push_back("data: [DONE]\n\n");
  return out;
}

std::vector<std::string> anthropic_sse(const std::vector<std::pair<std::string, std::string>>& events) {
  std::vector<std::string> out;
  for (const auto& [type, data] : events) out.push_back("event: " + type + "\ndata: " + data + "\n\n");
  return out;
}

}  // namespace kp::testing
