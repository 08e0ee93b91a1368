#include "sys/temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace kp::sys {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, CreatesAndRemovesRecursively) {
  fs::path path;
  {
    auto dir = TempDir::create("kp-temp-test-");
    ASSERT_TRUE(dir.ok()) << dir.error().message;
    path = dir->path();
    EXPECT_TRUE(path.is_absolute());
    EXPECT_TRUE(fs::is_directory(path));
    EXPECT_EQ(path.filename().string().rfind("kp-temp-test-", 0), 0u);
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_all);
    fs::create_directories(path / "a" / "b");
    std::ofstream(path / "a" / "b" / "file") << "data";
    fs::create_directory_symlink("/tmp", path / "link");  // removed, not followed
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::exists("/tmp"));
}

TEST(TempDir, KeepLeavesDirectory) {
  fs::path path;
  {
    auto dir = TempDir::create("kp-temp-test-");
    ASSERT_TRUE(dir.ok());
    path = dir->path();
    dir->keep();
  }
  EXPECT_TRUE(fs::is_directory(path));
  fs::remove_all(path);
}

TEST(TempDir, MoveTransfersOwnership) {
  auto first = TempDir::create("kp-temp-test-");
  ASSERT_TRUE(first.ok());
  fs::path path = first->path();
  std::optional<TempDir> moved;
  moved.emplace(std::move(*first));
  EXPECT_TRUE(first->path().empty());
  EXPECT_EQ(moved->path(), path);
  { TempDir gone = std::move(*first); }  // an empty TempDir removes nothing
  EXPECT_TRUE(fs::is_directory(path));

  auto second = TempDir::create("kp-temp-test-");
  ASSERT_TRUE(second.ok());
  fs::path second_path = second->path();
  *moved = std::move(*second);  // removes the first directory
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(moved->path(), second_path);
  moved.reset();
  EXPECT_FALSE(fs::exists(second_path));
}

TEST(TempDir, HonorsTmpdirAndRejectsBadPrefix) {
  auto base = TempDir::create("kp-temp-base-");
  ASSERT_TRUE(base.ok());
  const char* old = std::getenv("TMPDIR");
  std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("TMPDIR", base->path().c_str(), 1);
  auto inner = TempDir::create("x-");
  if (saved)
    ::setenv("TMPDIR", saved->c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner->path().parent_path(), base->path());

  auto bad = TempDir::create("a/b");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace kp::sys
