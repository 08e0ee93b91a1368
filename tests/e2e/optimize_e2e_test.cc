// e2e tier: `kernelpro optimize` as a user runs it, on the transpose example (nine points in its
// KP_TUNE space). Without a GPU it builds the seed and exits 3; with one it tunes, stops at the
// budget, and a resumed run evaluates only the points not yet measured.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "sys/temp_dir.h"
#include "tests/support/cli_run.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(OptimizeE2e, TunesTheTransposeSeedAndResumes) {
  if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
  auto dir = sys::TempDir::create("kp-opt-e2e-").value();
  const fs::path run = dir.path() / "run";
  const std::vector<std::pair<std::string, std::string>> env = {{"XDG_CACHE_HOME", (dir.path() / "cache").string()},
                                                                {"XDG_DATA_HOME", (dir.path() / "data").string()}};
  const std::string task = (testing::examples_dir() / "transpose").string();
  auto first = testing::run_kernelpro({"optimize", task, "--run-dir", run.string(), "--budget", "4"}, env);
  if (testing::gpu_missing()) {
    EXPECT_EQ(first.exit_code, 3) << first.err;
    EXPECT_NE(first.out.find("No GPU here"), std::string::npos) << first.out;
    return;
  }
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("stopped: budget"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("--resume"), std::string::npos) << first.out;
  auto blocked = testing::run_kernelpro({"optimize", task, "--run-dir", run.string()}, env);
  EXPECT_EQ(blocked.exit_code, 2) << blocked.err;
  auto second = testing::run_kernelpro({"optimize", task, "--run-dir", run.string(), "--resume", "--json"}, env);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const json j = json::parse(second.out);
  EXPECT_EQ(j["stopped"], "exhausted");
  EXPECT_EQ(j["nodes"], 9);
  EXPECT_EQ(j["evaluated"], 5) << "only the points the first run did not measure";
  EXPECT_GT(j["speedup_vs_seed"].get<double>(), 0.9);
  EXPECT_TRUE(fs::exists(run / "best.cu"));
  auto store = store::RunStore::open(run / "store.db", store::RunStore::Access::kReader);
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_EQ(store->evaluations().value().size(), 9u);
  EXPECT_TRUE(fs::exists(dir.path() / "data" / "kernelpro" / "memory.db")) << "the lessons were shared";
}

}  // namespace
}  // namespace kp
