// A content-addressed on-disk cache of build outputs: the key is a hash of everything that
// determines the build (builder.h says what), the value the built shared object with its nvcc
// log and free-form metadata.
//
// Layout, one directory per entry, named by the key and fanned out by its first two characters:
//   root/ab/abcdef0123.../artifact.so   the built file, byte for byte
//                         build.log     nvcc's combined output
//                         meta.json     the caller's metadata
//   root/tmp/                           entries being written (and leftovers of killed writers)
//
// An entry is written completely (and fsync'ed) in a directory under root/tmp/ and then renamed
// into place, which is atomic: readers see no entry or a whole one, never a half-written one.
// Any number of threads and processes may use one root at once; when several store the same
// key, all succeed and one entry remains. An entry is never modified after it appears, except
// that a corrupted one (a file missing, meta.json not JSON) reads as a miss and the next store
// of its key replaces it. Nothing is ever evicted.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace kp::build {

struct CachedArtifact {
  std::string key;
  std::filesystem::path artifact_path;  // root/ab/<key>/artifact.so; owned by the cache: load or
                                        // copy it, never modify or delete it
  std::string build_log;
  nlohmann::json meta;
};

// Thread-safe: holds no mutable state; every call works on the file system only.
class ArtifactCache {
 public:
  // Does not touch the disk; directories are created by the first store().
  explicit ArtifactCache(std::filesystem::path root);

  // Returns the entry for `key`, or nullopt when there is none or it is corrupted. Errors:
  // kInvalidInput for a key that is not 3 to 128 lowercase hex digits [0-9a-f]; kIo when an
  // entry exists but cannot be read (permissions).
  Result<std::optional<CachedArtifact>> lookup(const std::string& key);

  // Copies `built_file` into the entry for `key` with `build_log` and `meta`, and returns the
  // entry as stored. When a good entry for the key already exists (another writer won), it is
  // kept and returned instead: keys address content, so both are the same build. Errors:
  // kInvalidInput for a bad key (as lookup), kNotFound when `built_file` does not exist, kIo
  // when writing fails (disk full, permissions); no partial entry is left visible either way.
  Result<CachedArtifact> store(const std::string& key, const std::filesystem::path& built_file,
                               std::string_view build_log, const nlohmann::json& meta);

  std::filesystem::path root() const { return root_; }

 private:
  std::filesystem::path entry_dir(const std::string& key) const;

  std::filesystem::path root_;
};

}  // namespace kp::build
