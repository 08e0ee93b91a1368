// find_cuobjdump and disassemble with stand-in cuobjdumps (shell scripts): the search order,
// the errors and their advice, and the plumbing from tool output to listing. The real tool runs
// in sass_toolchain_test.cc.
#include "profile/sass/cuobjdump.h"

#include <chrono>
#include <thread>

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "profile/profiler.h"
#include "sys/temp_dir.h"
#include "util/strings.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;

// Writes an executable shell script at path.
void write_script(const fs::path& path, const std::string& body) {
  fs::create_directories(path.parent_path());
  ASSERT_TRUE(write_file(path.string(), "#!/bin/sh\n" + body + "\n").ok());
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
}

class CuobjdumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::create("kp-cuobjdump-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<sys::TempDir>(std::move(*d));
    object_ = dir_->path() / "k.cubin";
    ASSERT_TRUE(write_file(object_.string(), "not really a cubin").ok());
  }
  // A stand-in cuobjdump that runs `body`, given explicitly.
  SassToolOptions fake(const std::string& body, double timeout_s = 30) {
    fs::path tool = dir_->path() / "bin" / "cuobjdump";
    write_script(tool, body);
    SassToolOptions o;
    o.cuobjdump = tool;
    o.timeout_s = timeout_s;
    return o;
  }
  std::unique_ptr<sys::TempDir> dir_;
  fs::path object_;
};

TEST_F(CuobjdumpTest, ExplicitPathMustBeAnExecutable) {
  SassToolOptions o;
  o.cuobjdump = dir_->path() / "no-such-cuobjdump";
  auto r = find_cuobjdump(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("no-such-cuobjdump"), std::string::npos) << r.error().message;
  o.cuobjdump = object_;  // exists, not executable
  EXPECT_FALSE(find_cuobjdump(o).ok());
  SassToolOptions real = fake("exit 0");
  auto found = find_cuobjdump(real);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, real.cuobjdump);
}

TEST_F(CuobjdumpTest, SearchesWhereTheWheelPutsIt) {
  fs::path wheel = dir_->path() / "python";
  write_script(wheel / "nvidia" / "cu13" / "bin" / "cuobjdump", "exit 0");
  // Only this process's PATH and the toolkit could come first; hide PATH for the test.
  const char* saved = std::getenv("PATH");
  std::string old = saved ? saved : "";
  ::setenv("PATH", (dir_->path() / "empty").c_str(), 1);
  SassToolOptions o;
  o.search_dirs = {dir_->path() / "elsewhere", wheel};
  auto found = find_cuobjdump(o);
  SassToolOptions none;
  none.search_dirs = {dir_->path() / "elsewhere"};
  auto missing = find_cuobjdump(none);
  ::setenv("PATH", old.c_str(), 1);

  ASSERT_TRUE(found.ok()) << found.error().message;
  bool toolkit = fs::exists("/usr/local/cuda/bin/cuobjdump");
  EXPECT_EQ(*found, toolkit ? fs::path("/usr/local/cuda/bin/cuobjdump") : wheel / "nvidia/cu13/bin/cuobjdump");
  if (!toolkit) {
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
    const std::string& m = missing.error().message;
    EXPECT_NE(m.find("elsewhere"), std::string::npos) << m;  // says where it looked
    EXPECT_NE(m.find("install the CUDA toolkit"), std::string::npos) << m;
    EXPECT_NE(m.find("nvidia-cuda-cuobjdump"), std::string::npos) << m;
    EXPECT_NE(m.find("--cuobjdump"), std::string::npos) << m;
  }
}

TEST_F(CuobjdumpTest, ParsesWhatTheToolPrints) {
  fs::path listing = fs::path(KP_TEST_DATA_DIR) / "sass" / "mma_sync.sass";
  // The fake checks that it was asked for SASS of the right file.
  auto o =
      fake("[ \"$1\" = -sass ] && [ \"$2\" = '" + object_.string() + "' ] || exit 9\ncat '" + listing.string() + "'");
  auto r = disassemble(o, object_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->functions.size(), 1u);
  EXPECT_EQ(r->functions[0].mangled_name, "_Z14mma_bf16_16816PKjS0_Pf");
  EXPECT_EQ(r->functions[0].arch, "sm_90");
}

// The model loop starts disassembling each candidate as it builds it (Profiler::prefetch_sass,
// which returns at once); the analysis then waits for that run instead of starting cuobjdump
// again, and reads the listing from the cache until the object changes.
TEST_F(CuobjdumpTest, APrefetchedListingIsRunOnceAndReadFromTheCacheUntilTheObjectChanges) {
  fs::path listing = fs::path(KP_TEST_DATA_DIR) / "sass" / "mma_sync.sass";
  fs::path runs = dir_->path() / "runs";
  auto o = fake("echo run >> '" + runs.string() + "'\nsleep 0.5\ncat '" + listing.string() + "'");
  auto count = [&] {
    auto text = read_file(runs.string());
    return text.ok() ? split_lines(*text).size() : size_t{0};
  };
  const auto t0 = std::chrono::steady_clock::now();
  Profiler::prefetch_sass(o, object_);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.4)
      << "the prefetch waited for cuobjdump";
  auto first = Profiler::sass_listing(o, object_);  // comes while the prefetch still runs
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->functions.size(), 1u);
  ASSERT_TRUE(Profiler::sass_listing(o, object_).ok());
  EXPECT_EQ(count(), 1u) << "the reader ran cuobjdump beside the prefetch, or again after it";
  // A rebuilt object (new contents, new size and time) is disassembled anew.
  ASSERT_TRUE(write_file(object_.string(), "another build, longer than the first").ok());
  ASSERT_TRUE(Profiler::sass_listing(o, object_).ok());
  EXPECT_EQ(count(), 2u);
}

TEST_F(CuobjdumpTest, AFailedListingIsNotCached) {
  fs::path listing = fs::path(KP_TEST_DATA_DIR) / "sass" / "mma_sync.sass";
  fs::path ready = dir_->path() / "ready";
  auto o = fake("[ -e '" + ready.string() + "' ] || { echo 'cuobjdump fatal: busy' >&2; exit 9; }\ncat '" +
                listing.string() + "'");
  Profiler::prefetch_sass(o, object_);
  EXPECT_FALSE(Profiler::sass_listing(o, object_).ok()) << "failed in the prefetch and again in the reader";
  ASSERT_TRUE(write_file(ready.string(), "").ok());
  auto again = Profiler::sass_listing(o, object_);
  ASSERT_TRUE(again.ok()) << "the failure was kept: " << again.error().message;
  // A prefetch that failed before its reader came is tried again by the reader.
  ASSERT_TRUE(write_file(object_.string(), "rebuilt").ok());
  fs::remove(ready);
  Profiler::prefetch_sass(o, object_);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the fake fails at once: let it
  ASSERT_TRUE(write_file(ready.string(), "").ok());
  EXPECT_TRUE(Profiler::sass_listing(o, object_).ok()) << "the prefetch's failure reached the reader";
  EXPECT_FALSE(Profiler::sass_listing(o, dir_->path() / "missing.so").ok());
}

TEST_F(CuobjdumpTest, ObjectWithoutDeviceCodeIsAnEmptyListing) {
  auto o = fake("echo \"cuobjdump info    : File '$2' does not contain device code\" >&2\nexit 255");
  auto r = disassemble(o, object_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->functions.empty());
}

TEST_F(CuobjdumpTest, ToolFailuresQuoteItAndSayWhatToDo) {
  auto bad = disassemble(fake("echo \"cuobjdump fatal   : Invalid fatbin header in '$2'\" >&2\nexit 1"), object_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kTool);
  EXPECT_NE(bad.error().message.find("Invalid fatbin header"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("exited with status 1"), std::string::npos) << bad.error().message;

  auto no_nvdisasm = disassemble(
      fake("echo \"cuobjdump fatal   : Could not find executable file 'nvdisasm'; you can try adding path to "
           "environment variables PATH or NVDISASM_PATH\" >&2\nexit 1"),
      object_);
  ASSERT_FALSE(no_nvdisasm.ok());
  EXPECT_NE(no_nvdisasm.error().message.find("install nvidia-cuda-nvdisasm"), std::string::npos)
      << no_nvdisasm.error().message;

  auto garbage = disassemble(fake("echo '\t\tFunction : f'\necho '        /*00zz*/  EXIT ;'"), object_);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, ErrorCode::kTool);
  EXPECT_NE(garbage.error().message.find(object_.string()), std::string::npos) << garbage.error().message;
}

TEST_F(CuobjdumpTest, MissingObjectAndTimeout) {
  auto missing = disassemble(fake("exit 0"), dir_->path() / "absent.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("absent.so"), std::string::npos) << missing.error().message;

  auto slow = disassemble(fake("sleep 30", 0.3), object_);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.error().code, ErrorCode::kTimeout);
}

}  // namespace
}  // namespace kp::profile
