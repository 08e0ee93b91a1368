#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include <fmt/format.h>

#include "llm/http_transport.h"
#include "util/strings.h"

namespace kp::llm {
namespace {

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * n);
  const auto colon = line.find(':');
  if (line.rfind("HTTP/", 0) == 0) headers->clear();  // a new response (after 100 Continue, redirects)
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    (*headers)[name] = std::string(trim(line.substr(colon + 1)));
  }
  return size * n;
}

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  Result<HttpResponse> post(const HttpRequest& request) override {
    CURL* curl = curl_easy_init();
    if (!curl) return make_error(ErrorCode::kInternal, "curl_easy_init failed");
    HttpResponse response;
    curl_slist* headers = nullptr;
    for (const auto& [name, value] : request.headers) headers = curl_slist_append(headers, (name + ": " + value).c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // thread-safe timeouts
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    const CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    response.status = static_cast<int>(status);
    if (rc == CURLE_OK) return response;
    const std::string why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    const std::string where = request.url.substr(0, request.url.find('?'));
    if (rc == CURLE_OPERATION_TIMEDOUT)
      return make_error(ErrorCode::kTimeout, fmt::format("POST {} timed out after {} ms ({})", where,
                                                         request.timeout.count(), why));
    if (rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL)
      return make_error(ErrorCode::kInvalidInput, fmt::format("POST {}: {} (check base_url)", where, why));
    return make_error(ErrorCode::kUnavailable, fmt::format("POST {}: {}", where, why));
  }
};

}  // namespace

std::unique_ptr<HttpTransport> make_curl_transport() { return std::make_unique<CurlTransport>(); }

}  // namespace kp::llm
