#include "sys/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

namespace kp::sys {

Result<TempDir> TempDir::create(std::string_view prefix) {
  if (prefix.find('/') != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidInput,
                      "temporary directory prefix '" + std::string(prefix) + "' contains '/'");
  }
  const char* tmpdir = std::getenv("TMPDIR");
  std::string base = tmpdir && *tmpdir ? tmpdir : "/tmp";
  std::string pattern = base + "/" + std::string(prefix) + "XXXXXX";
  if (!mkdtemp(pattern.data())) {
    return make_error(ErrorCode::kIo, "cannot create a temporary directory in '" + base +
                                          "': " + std::strerror(errno) + " (check TMPDIR)");
  }
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(pattern, ec);
  return TempDir(ec ? std::filesystem::path(pattern) : path);
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})), keep_(other.keep_) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
    keep_ = other.keep_;
  }
  return *this;
}

TempDir::~TempDir() { remove(); }

void TempDir::remove() {
  if (path_.empty() || keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

}  // namespace kp::sys
