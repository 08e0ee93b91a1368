#include "build/artifact_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace kp::build {
namespace fs = std::filesystem;
namespace {

constexpr char kArtifactFile[] = "artifact.so";
constexpr char kLogFile[] = "build.log";
constexpr char kMetaFile[] = "meta.json";
constexpr char kTempDir[] = "tmp";
constexpr size_t kMinKeyLength = 3;
constexpr size_t kMaxKeyLength = 128;
constexpr int kMaxPublishAttempts = 8;

Error io_error(const std::string& what, const fs::path& path, int err) {
  return make_error(ErrorCode::kIo, what + " " + path.string() + ": " + std::strerror(err));
}

Status check_key(const std::string& key) {
  bool hex = key.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex || key.size() < kMinKeyLength || key.size() > kMaxKeyLength) {
    return make_error(
        ErrorCode::kInvalidInput,
        "artifact cache key '" + key + "' is not 3 to 128 lowercase hex digits (use sha256_hex)");
  }
  return ok_status();
}

// The file's bytes, or nullopt when it does not exist.
Result<std::optional<std::string>> read_if_exists(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return io_error("cannot open", path, errno);
  }
  std::string text;
  char buffer[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buffer, static_cast<size_t>(n));
  }
  int err = errno;
  ::close(fd);
  if (n < 0) return io_error("cannot read", path, err);
  return std::optional<std::string>(std::move(text));
}

Status write_synced(const fs::path& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", path, errno);
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return io_error("cannot write", path, err);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) return io_error("cannot flush", path, errno);
  return ok_status();
}

// fsync of a file or directory already written, so that a crash cannot publish an entry whose
// blocks never reached the disk.
Status sync_path(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return io_error("cannot flush", path, err);
  return ok_status();
}

// A fresh, uniquely named directory under root/tmp/.
Result<fs::path> make_temp_dir(const fs::path& root, const std::string& prefix) {
  std::error_code ec;
  fs::create_directories(root / kTempDir, ec);
  if (ec) return io_error("cannot create", root / kTempDir, ec.value());
  std::string pattern = (root / kTempDir / (prefix + ".XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return io_error("cannot create a directory like", pattern, errno);
  return fs::path(pattern);
}

// Removes a directory tree on scope exit unless released.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(fs::path path) : path_(std::move(path)) {}
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;
  ~RemoveOnExit() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

}  // namespace

ArtifactCache::ArtifactCache(fs::path root) : root_(std::move(root)) {}

fs::path ArtifactCache::entry_dir(const std::string& key) const { return root_ / key.substr(0, 2) / key; }

Result<std::optional<CachedArtifact>> ArtifactCache::lookup(const std::string& key) {
  KP_TRY_STATUS(check_key(key));
  const fs::path dir = entry_dir(key);
  KP_TRY(std::optional<std::string> meta_text, read_if_exists(dir / kMetaFile));
  if (!meta_text) return std::optional<CachedArtifact>();
  nlohmann::json meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded()) return std::optional<CachedArtifact>();
  KP_TRY(std::optional<std::string> log, read_if_exists(dir / kLogFile));
  std::error_code ec;
  if (!log || !fs::is_regular_file(dir / kArtifactFile, ec)) return std::optional<CachedArtifact>();
  return std::optional<CachedArtifact>(
      CachedArtifact{key, dir / kArtifactFile, std::move(*log), std::move(meta)});
}

Result<CachedArtifact> ArtifactCache::store(const std::string& key, const fs::path& built_file,
                                            std::string_view build_log, const nlohmann::json& meta) {
  KP_TRY_STATUS(check_key(key));
  std::error_code ec;
  if (!fs::is_regular_file(built_file, ec)) {
    return make_error(ErrorCode::kNotFound, "cannot cache " + built_file.string() + ": no such file");
  }

  // Write the whole entry where no reader looks.
  KP_TRY(fs::path temp, make_temp_dir(root_, key));
  RemoveOnExit cleanup(temp);
  ::chmod(temp.c_str(), 0755);  // mkdtemp makes it 0700
  fs::copy_file(built_file, temp / kArtifactFile, ec);
  if (ec) return io_error("cannot copy " + built_file.string() + " to", temp / kArtifactFile, ec.value());
  KP_TRY_STATUS(sync_path(temp / kArtifactFile));
  KP_TRY_STATUS(write_synced(temp / kLogFile, build_log));
  KP_TRY_STATUS(write_synced(temp / kMetaFile, meta.dump(2) + "\n"));
  KP_TRY_STATUS(sync_path(temp));

  // Publish it with one rename. rename(2) of a directory fails when the target is a non-empty
  // directory: then another writer got there first, or a corrupted entry is in the way.
  const fs::path dir = entry_dir(key);
  fs::create_directories(dir.parent_path(), ec);
  if (ec) return io_error("cannot create", dir.parent_path(), ec.value());
  for (int attempt = 0; attempt < kMaxPublishAttempts; ++attempt) {
    if (::rename(temp.c_str(), dir.c_str()) == 0) {
      cleanup.release();
      KP_TRY_STATUS(sync_path(dir.parent_path()));
      return CachedArtifact{key, dir / kArtifactFile, std::string(build_log), meta};
    }
    if (errno != EEXIST && errno != ENOTEMPTY)
      return io_error("cannot rename " + temp.string() + " to", dir, errno);
    KP_TRY(std::optional<CachedArtifact> existing, lookup(key));
    if (existing) return std::move(*existing);
    // Corrupted: move it aside (rename onto an empty directory replaces it), then retry. Two
    // writers racing here may move each other's good entry aside; one good entry still remains.
    KP_TRY(fs::path trash, make_temp_dir(root_, key + ".corrupt"));
    RemoveOnExit remove_trash(trash);
    if (::rename(dir.c_str(), trash.c_str()) != 0 && errno != ENOENT) {
      return io_error("cannot move the corrupted cache entry aside:", dir, errno);
    }
  }
  return make_error(ErrorCode::kIo, "cannot publish cache entry " + dir.string() +
                                        ": it kept changing under " + std::to_string(kMaxPublishAttempts) +
                                        " attempts");
}

}  // namespace kp::build
