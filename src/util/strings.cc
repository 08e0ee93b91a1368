#include "util/strings.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <cerrno>
#include <ctime>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace kp {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(text.substr(start));
      return out;
    }
    out.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t pos = text.find('\n', start);
    std::string_view line = text.substr(start, pos == std::string_view::npos ? text.npos : pos - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return lines;
}

std::string_view trim(std::string_view text) {
  const char* ws = " \t\r\n\f\v";
  size_t b = text.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = text.find_last_not_of(ws);
  return text.substr(b, e - b + 1);
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string tail_lines(std::string_view text, size_t max_lines) {
  auto lines = split_lines(text);
  if (lines.size() <= max_lines) return std::string(text);
  std::string out = fmt::format("[{} earlier lines cut]\n", lines.size() - max_lines);
  for (size_t i = lines.size() - max_lines; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (err == ENOENT) return make_error(ErrorCode::kNotFound, fmt::format("{}: no such file", path));
    return make_error(ErrorCode::kIo, fmt::format("{}: cannot read: {}", path, std::strerror(err)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Status write_file(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(ErrorCode::kIo, fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) return make_error(ErrorCode::kIo, fmt::format("{}: write failed", path));
  return ok_status();
}

Status write_file_atomic(const std::string& path, std::string_view content) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  Status w = write_file(tmp, content);
  if (w.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    w = make_error(ErrorCode::kIo, fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(errno)));
  if (!w.ok()) std::remove(tmp.c_str());
  return w;
}

static std::string three_digits(double v, const char* unit) {
  if (v >= 100) return fmt::format("{:.0f} {}", v, unit);
  if (v >= 10) return fmt::format("{:.1f} {}", v, unit);
  return fmt::format("{:.2f} {}", v, unit);
}

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "n/a";
  double a = std::fabs(s);
  if (a >= 1.0 || a == 0) return three_digits(s, "s");
  if (a >= 1e-3) return three_digits(s * 1e3, "ms");
  if (a >= 1e-6) return three_digits(s * 1e6, "us");
  return three_digits(s * 1e9, "ns");
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.1f} {}", bytes, units[u]);
}

// A word as a POSIX shell reads it back: as is when it is plain, else in single quotes.
std::string shell_quote(const std::string& word) {
  bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789_-+=./,:@%") == std::string::npos;
  if (plain) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace kp
