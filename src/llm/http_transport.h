// The HTTP transport the API providers post through: an interface with one real implementation
// (libcurl). Tests use the real one against a local server on loopback (tests/support).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"

namespace kp::llm {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // name, value
  std::string body;                                          // sent as POST data
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};          // the whole exchange
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};  // TCP and TLS set-up
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lowercased; a repeated header keeps the last
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Posts the request and returns the response, whatever its status. Errors: kTimeout when
  // `timeout` (or `connect_timeout`) passed, kUnavailable when the server could not be reached
  // or the connection broke, kInvalidInput for a malformed URL. Thread-safe.
  virtual Result<HttpResponse> post(const HttpRequest& request) = 0;
};

// libcurl. Honours the usual proxy variables (https_proxy, no_proxy) as curl does.
std::unique_ptr<HttpTransport> make_curl_transport();

}  // namespace kp::llm
