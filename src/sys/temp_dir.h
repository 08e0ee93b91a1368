// TempDir: a fresh private directory (mode 0700) that is removed with its contents on destruction.
#pragma once

#include <filesystem>
#include <string_view>

#include "util/result.h"

namespace kp::sys {

// Move-only owner of a temporary directory. Not thread-safe; the directory itself may be used
// from any thread while the TempDir lives.
class TempDir {
 public:
  // Creates <base>/<prefix>XXXXXX with mkdtemp, where base is $TMPDIR when set and non-empty,
  // else /tmp. The prefix must not contain '/' (kInvalidInput). kIo when mkdtemp fails.
  static Result<TempDir> create(std::string_view prefix = "kernelpro-");

  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;  // removes the directory this one owned
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Removes the directory recursively (symlinks are removed, not followed) unless keep() was
  // called. Errors are ignored.
  ~TempDir();

  // The absolute path of the directory; empty for a moved-from TempDir.
  const std::filesystem::path& path() const { return path_; }
  // Leaves the directory in place on destruction (for debugging or for results to keep).
  void keep() { keep_ = true; }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  void remove();

  std::filesystem::path path_;
  bool keep_ = false;
};

}  // namespace kp::sys
