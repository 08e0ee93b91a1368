#include "build/artifact_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "util/hash.h"

namespace kp::build {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "prefix<i>" (append, not operator+: GCC 12 -O3 reports a false -Wrestrict on the latter).
std::string numbered(const char* prefix, int i) { return std::string(prefix).append(std::to_string(i)); }

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

class ArtifactCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kp-artifact-cache-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    scratch_ = pattern;
    root_ = scratch_ / "cache";  // not created: the cache must make it
  }
  void TearDown() override { fs::remove_all(scratch_); }

  // A stand-in for nvcc's output.
  fs::path built(const std::string& name, const std::string& bytes) {
    fs::path path = scratch_ / name;
    write_text(path, bytes);
    return path;
  }

  // Entries and writers' leftovers under root/tmp.
  size_t temp_entries() const {
    std::error_code ec;
    if (!fs::exists(root_ / "tmp")) return 0;
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(root_ / "tmp"), fs::directory_iterator()));
  }

  fs::path scratch_;
  fs::path root_;
  const std::string key_ = sha256_hex("nvcc -O3 kernel.cu");
};

TEST_F(ArtifactCacheTest, MissOnAnEmptyCacheTouchesNothing) {
  ArtifactCache cache(root_);
  auto hit = cache.lookup(key_);
  ASSERT_TRUE(hit.ok()) << hit.error().message;
  EXPECT_FALSE(hit->has_value());
  EXPECT_FALSE(fs::exists(root_));
  EXPECT_EQ(cache.root(), root_);
}

TEST_F(ArtifactCacheTest, StoreThenHit) {
  ArtifactCache cache(root_);
  nlohmann::json meta = {{"source", "kernel.cu"}, {"seconds", 1.5}};
  auto stored = cache.store(key_,
                            built("a.so",
                                  "\x7f"
                                  "ELF shared object"),
                            "ptxas info : Used 8 registers\n", meta);
  ASSERT_TRUE(stored.ok()) << stored.error().message;
  const fs::path entry = root_ / key_.substr(0, 2) / key_;
  EXPECT_EQ(stored->key, key_);
  EXPECT_EQ(stored->artifact_path, entry / "artifact.so");
  EXPECT_EQ(read_text(entry / "build.log"), "ptxas info : Used 8 registers\n");
  EXPECT_EQ(nlohmann::json::parse(read_text(entry / "meta.json")), meta);
  EXPECT_EQ(temp_entries(), 0u);

  auto hit = ArtifactCache(root_).lookup(key_);  // a fresh object: the state is on disk
  ASSERT_TRUE(hit.ok()) << hit.error().message;
  ASSERT_TRUE(hit->has_value());
  EXPECT_EQ((*hit)->artifact_path, entry / "artifact.so");
  EXPECT_EQ(read_text((*hit)->artifact_path),
            "\x7f"
            "ELF shared object");
  EXPECT_EQ((*hit)->build_log, "ptxas info : Used 8 registers\n");
  EXPECT_EQ((*hit)->meta, meta);

  auto other = cache.lookup(sha256_hex("another build"));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
}

TEST_F(ArtifactCacheTest, StoreKeepsTheExistingGoodEntry) {
  ArtifactCache cache(root_);
  ASSERT_TRUE(cache.store(key_, built("first.so", "first"), "first log", {{"n", 1}}).ok());
  auto second = cache.store(key_, built("second.so", "second"), "second log", {{"n", 2}});
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->build_log, "first log");
  EXPECT_EQ(second->meta["n"], 1);
  EXPECT_EQ(read_text(second->artifact_path), "first");
  EXPECT_EQ(temp_entries(), 0u);
}

TEST_F(ArtifactCacheTest, ConcurrentStoresOfOneKeyAllSucceedAndLeaveOneEntry) {
  constexpr int kWriters = 8;
  std::vector<fs::path> files;
  for (int i = 0; i < kWriters; ++i)
    files.push_back(built(numbered("w", i) + ".so", numbered("built by ", i)));
  std::vector<Result<CachedArtifact>> results(kWriters, Error{});
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      ArtifactCache cache(root_);
      results[i] = cache.store(key_, files[i], numbered("log of writer ", i), {{"writer", i}});
    });
  }
  for (auto& t : writers) t.join();

  auto hit = ArtifactCache(root_).lookup(key_);
  ASSERT_TRUE(hit.ok() && hit->has_value());
  const CachedArtifact& entry = **hit;
  int winner = entry.meta["writer"];
  EXPECT_EQ(read_text(entry.artifact_path), numbered("built by ", winner));
  EXPECT_EQ(entry.build_log, numbered("log of writer ", winner));
  for (int i = 0; i < kWriters; ++i) {
    ASSERT_TRUE(results[i].ok()) << "writer " << i << ": " << results[i].error().message;
    // Losers get the winner's entry, not their own copy of it.
    EXPECT_EQ(results[i]->artifact_path, entry.artifact_path);
    EXPECT_EQ(results[i]->build_log, entry.build_log) << "writer " << i;
    EXPECT_EQ(results[i]->meta, entry.meta) << "writer " << i;
  }
  EXPECT_EQ(temp_entries(), 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(root_ / key_.substr(0, 2)), fs::directory_iterator()), 1);
}

TEST_F(ArtifactCacheTest, CorruptedEntryIsAMissAndGetsReplaced) {
  ArtifactCache cache(root_);
  ASSERT_TRUE(cache.store(key_, built("a.so", "old"), "old log", {{"v", 1}}).ok());
  const fs::path entry = root_ / key_.substr(0, 2) / key_;

  fs::remove(entry / "meta.json");
  auto missing_meta = cache.lookup(key_);
  ASSERT_TRUE(missing_meta.ok()) << missing_meta.error().message;
  EXPECT_FALSE(missing_meta->has_value());

  auto replaced = cache.store(key_, built("b.so", "new"), "new log", {{"v", 2}});
  ASSERT_TRUE(replaced.ok()) << replaced.error().message;
  EXPECT_EQ(replaced->build_log, "new log");
  auto hit = cache.lookup(key_);
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->meta["v"], 2);
  EXPECT_EQ(read_text((*hit)->artifact_path), "new");
  EXPECT_EQ(temp_entries(), 0u);

  write_text(entry / "meta.json", "{ not json");
  auto bad_meta = cache.lookup(key_);
  ASSERT_TRUE(bad_meta.ok());
  EXPECT_FALSE(bad_meta->has_value());

  fs::remove_all(entry);
  fs::create_directories(entry);  // an empty directory, as a crashed older writer might leave
  auto empty = cache.lookup(key_);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
  ASSERT_TRUE(cache.store(key_, built("c.so", "newest"), "log", {{"v", 3}}).ok());
  EXPECT_EQ(read_text(entry / "artifact.so"), "newest");

  fs::remove(entry / "artifact.so");
  auto no_artifact = cache.lookup(key_);
  ASSERT_TRUE(no_artifact.ok());
  EXPECT_FALSE(no_artifact->has_value());
}

TEST_F(ArtifactCacheTest, EntriesBeingWrittenAreInvisible) {
  // What a writer killed before its rename leaves behind: a full entry under tmp/.
  fs::path leftover = root_ / "tmp" / (key_ + ".Ab12Cd");
  fs::create_directories(leftover);
  write_text(leftover / "artifact.so", "half");
  write_text(leftover / "build.log", "");
  write_text(leftover / "meta.json", "{}");
  ArtifactCache cache(root_);
  auto hit = cache.lookup(key_);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(hit->has_value());
  ASSERT_TRUE(cache.store(key_, built("a.so", "whole"), "log", {}).ok());
  EXPECT_EQ(read_text((*cache.lookup(key_))->artifact_path), "whole");
}

TEST_F(ArtifactCacheTest, RejectsBadKeysAndMissingFiles) {
  ArtifactCache cache(root_);
  for (const std::string& key :
       std::vector<std::string>{"", "ab", "ABCDEF", "../../etc", "abc/def", std::string(129, 'a')}) {
    auto looked = cache.lookup(key);
    ASSERT_FALSE(looked.ok()) << key;
    EXPECT_EQ(looked.error().code, ErrorCode::kInvalidInput);
    auto stored = cache.store(key, built("a.so", "x"), "", {});
    ASSERT_FALSE(stored.ok()) << key;
    EXPECT_EQ(stored.error().code, ErrorCode::kInvalidInput);
  }
  auto missing = cache.store(key_, scratch_ / "never_built.so", "", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("never_built.so"), std::string::npos);
  auto hit = cache.lookup(key_);
  ASSERT_TRUE(hit.ok());
  EXPECT_FALSE(hit->has_value());
}

}  // namespace
}  // namespace kp::build
