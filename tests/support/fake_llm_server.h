// A real HTTP server on loopback (cpp-httplib) that answers LLM API requests with canned
// responses, in order, and keeps what it received. The responses are written by each test in
// the exact wire format of the API it stands for (OpenAI chat completions, Anthropic Messages),
// including server-sent-event streams, so the client under test runs its real transport, headers
// and parsers. Only the model is fake.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace kp::testing {

struct CannedResponse {
  int status = 200;
  std::string body{};  // sent whole (Content-Length) when `chunks` is empty
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers{};  // e.g. {"Retry-After", "2"}
  int delay_ms = 0;                                            // wait before answering (a slow or hung server)
  std::vector<std::string> chunks{};                           // sent with chunked transfer encoding, one write each
  bool drop_after_chunks = false;                              // close the connection after the chunks, without the end
};

struct ReceivedRequest {
  std::string path;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

class FakeLlmServer {
 public:
  FakeLlmServer();  // listens on 127.0.0.1, on a free port, until destroyed
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  // "http://127.0.0.1:PORT/v1".
  std::string base_url() const;
  // Queues a response; requests take them in order. With none queued: 500 "no canned response".
  void push(CannedResponse response);
  // Answers the requests left when the queue is empty (a model that replies by what it is
  // asked: the planner, the coder, the debugger), in place of the 500.
  void respond_with(std::function<CannedResponse(const ReceivedRequest&)> responder);
  std::vector<ReceivedRequest> requests() const;

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<CannedResponse> queue_;
  std::function<CannedResponse(const ReceivedRequest&)> responder_;
  size_t next_ = 0;
  std::vector<ReceivedRequest> received_;
};

// The body of a whole (not streamed) OpenAI chat completion: one choice with `content`, and with
// `tool_calls` when given (finish_reason "tool_calls", else "stop").
std::string openai_completion(const std::string& content, const nlohmann::json& tool_calls = nullptr,
                              int input_tokens = 100, int output_tokens = 50);
// SSE text of an OpenAI stream: one "data: {...}" event per chunk JSON, then "data: [DONE]".
std::vector<std::string> openai_sse(const std::vector<std::string>& chunk_json, bool done = true);
// SSE of an Anthropic stream: "event: TYPE" + "data: {...}" for each (type, json) pair.
std::vector<std::string> anthropic_sse(const std::vector<std::pair<std::string, std::string>>& events);

}  // namespace kp::testing
