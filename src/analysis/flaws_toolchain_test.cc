// Toolchain tier: every flaw of bench/flaws/ (a native task with reference.cu, flawed.cu and
// fixed.cu, and expected.toml naming the tool that must fire) loads, and its three sources build
// with the real nvcc. Where the build alone proves the flaw, the test checks it: the ptxas report
// (spills, static shared memory) or the SASS (fp64 instructions, unfused FMUL, HMMA, LDG.128),
// the SASS checks only when cuobjdump is found (else they are skipped with the reason).
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "build/builder.h"
#include "profile/sass/cuobjdump.h"
#include "sys/temp_dir.h"
#include "task/native_task_loader.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp {
namespace {

namespace fs = std::filesystem;

const std::set<std::string>& flaw_tools() {
  static const std::set<std::string> tools = {
      "roofline_headroom", "uncoalesced_access", "narrow_loads",      "bank_conflicts",     "dram_over_ideal",
      "low_l2_hit_rate",   "register_spills",    "accidental_fp64",   "occupancy_limiter",  "tail_effect",
      "small_grid",        "warp_stalls",        "branch_divergence", "tensor_cores_unused", "hopper_path_unused",
      "special_functions", "atomics_contention", "barrier_overhead",  "launch_overhead",    "host_device_copies",
      "low_ilp",           "fp32_unfused"};
  return tools;
}

struct Flaw {
  fs::path dir;
  std::string tool;  // expected.toml's flaw
  task::Task task;
};

// expected.toml's `flaw = "..."` (the file is three plain keys; no TOML parser needed).
std::string expected_tool(const fs::path& dir) {
  auto text = read_file((dir / "expected.toml").string());
  if (!text.ok()) return "";
  std::smatch m;
  static const std::regex re(R"re((^|\n)flaw\s*=\s*"([a-z0-9_]+)")re");
  return std::regex_search(*text, m, re) ? m[2].str() : "";
}

fs::path flaws_dir() { return testing::source_dir() / "bench" / "flaws"; }

std::vector<fs::path> flaw_dirs() {
  std::vector<fs::path> dirs;
  if (!fs::exists(flaws_dir())) return dirs;
  for (const auto& e : fs::directory_iterator(flaws_dir()))
    if (e.is_directory() && fs::exists(e.path() / "task.toml")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

TEST(FlawSuite, EveryFolderLoadsAndNamesAKnownTool) {
  const auto dirs = flaw_dirs();
  EXPECT_GE(dirs.size(), 20u);
  std::set<std::string> covered;
  for (const auto& d : dirs) {
    auto task = task::load_native_task(d);
    ASSERT_TRUE(task.ok()) << d << ": " << task.error().message;
    EXPECT_GT(task->ideal_bytes, 0) << d;
    for (const char* f : {"flawed.cu", "fixed.cu", "expected.toml"}) EXPECT_TRUE(fs::exists(d / f)) << d / f;
    const std::string tool = expected_tool(d);
    EXPECT_TRUE(flaw_tools().count(tool)) << d << ": expected.toml names no known tool (\"" << tool << "\")";
    EXPECT_TRUE(covered.insert(tool).second) << d << ": a second flaw for " << tool;
  }
  EXPECT_GE(covered.size(), 20u);
}

class FlawSuiteBuild : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::nvcc_missing()) return;
    auto dir = sys::TempDir::create("kp-flaws-cache-");
    ASSERT_TRUE(dir.ok());
    cache_ = new sys::TempDir(std::move(*dir));
    build::BuildOptions o;
    o.arch = "sm_90a";  // fixed: CI has no GPU to ask
    o.cache_dir = cache_->path();
    o.jobs = 0;         // one nvcc per core
    build::Builder builder(o);
    std::vector<build::BuildRequest> requests;
    std::vector<std::pair<std::string, std::string>> keys;  // (tool, variant)
    for (const auto& d : flaw_dirs()) {
      auto task = task::load_native_task(d);
      if (!task.ok()) continue;
      const std::string tool = expected_tool(d);
      requests.push_back({task->reference_path, task->reference_libraries, {}});
      keys.push_back({tool, "reference"});
      for (const char* v : {"flawed", "fixed"}) {
        requests.push_back({d / (std::string(v) + ".cu"), task->candidate_libraries, {}});
        keys.push_back({tool, v});
      }
    }
    auto results = builder.build_all(requests);
    built_ = new std::map<std::pair<std::string, std::string>, Result<build::BuildResult>>();
    for (size_t i = 0; i < results.size(); ++i) built_->emplace(keys[i], std::move(results[i]));
  }
  static void TearDownTestSuite() {
    delete built_;
    built_ = nullptr;
    delete cache_;
    cache_ = nullptr;
  }
  void SetUp() override {
    if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
    ASSERT_NE(built_, nullptr);
  }
  // The build of one variant of the flaw for `tool`; fails the test when it did not build.
  const build::BuildResult* get(const std::string& tool, const std::string& variant) {
    auto it = built_->find({tool, variant});
    if (it == built_->end()) {
      ADD_FAILURE() << "no flaw folder for " << tool;
      return nullptr;
    }
    if (!it->second.ok()) {
      ADD_FAILURE() << tool << "/" << variant << ": " << it->second.error().message;
      return nullptr;
    }
    if (!it->second->ok) {
      ADD_FAILURE() << tool << "/" << variant << " does not build:\n" << it->second->log;
      return nullptr;
    }
    return &*it->second;
  }
  // Opcode counts ("DFMA", "LDG.E.128" as full_opcode prefixes are matched by the caller) over
  // every function of the artifact; nullopt-like empty map with `why` set when cuobjdump is missing.
  std::map<std::string, int> opcodes(const build::BuildResult& b) {
    std::map<std::string, int> counts;
    profile::SassToolOptions tools;
    tools.search_dirs = {testing::kp_tools_python_dir()};
    auto listing = profile::disassemble(tools, b.artifact);
    EXPECT_TRUE(listing.ok()) << (listing.ok() ? "" : listing.error().message);
    if (!listing.ok()) return counts;
    for (const auto& f : listing->functions) {
      if (f.name.find("kp_") != std::string::npos) continue;
      for (const auto& ins : f.instructions) {
        ++counts[ins.opcode];
        ++counts[ins.full_opcode()];
      }
    }
    return counts;
  }
  static int count_prefix(const std::map<std::string, int>& c, const std::string& prefix) {
    int n = 0;
    for (const auto& [op, k] : c)
      if (op.rfind(prefix, 0) == 0 && op.find('.') == std::string::npos) n += k;
    return n;
  }
  static sys::TempDir* cache_;
  static std::map<std::pair<std::string, std::string>, Result<build::BuildResult>>* built_;
};
sys::TempDir* FlawSuiteBuild::cache_ = nullptr;
std::map<std::pair<std::string, std::string>, Result<build::BuildResult>>* FlawSuiteBuild::built_ = nullptr;

TEST_F(FlawSuiteBuild, ReferenceFlawedAndFixedBuildAndExportKpRun) {
  EXPECT_GE(built_->size(), 60u);
  for (const auto& [key, result] : *built_) {
    ASSERT_TRUE(result.ok()) << key.first << "/" << key.second << ": " << result.error().message;
    EXPECT_TRUE(result->ok) << key.first << "/" << key.second << "\n" << result->log;
    EXPECT_EQ(result->exports_kp_run.value_or(true), true) << key.first << "/" << key.second;
    EXPECT_TRUE(result->resources.warnings.empty()) << key.first << "/" << key.second << ": " << result->log;
  }
}

TEST_F(FlawSuiteBuild, RegisterSpillsShowInPtxasOnlyForTheFlawed) {
  auto* flawed = get("register_spills", "flawed");
  auto* fixed = get("register_spills", "fixed");
  ASSERT_TRUE(flawed && fixed);
  auto spills = [](const build::BuildResult& b) {
    return std::any_of(b.resources.kernels.begin(), b.resources.kernels.end(), [](const auto& k) { return k.has_spills(); });
  };
  EXPECT_TRUE(spills(*flawed)) << flawed->log;
  EXPECT_FALSE(spills(*fixed)) << fixed->log;
}

TEST_F(FlawSuiteBuild, OccupancyLimiterFlawedDeclaresFortyKiBOfSharedMemory) {
  auto* flawed = get("occupancy_limiter", "flawed");
  auto* fixed = get("occupancy_limiter", "fixed");
  ASSERT_TRUE(flawed && fixed);
  auto smem = [](const build::BuildResult& b) {
    int64_t s = 0;
    for (const auto& k : b.resources.kernels) s = std::max(s, k.shared_bytes);
    return s;
  };
  // 40 KiB per 128-thread block: 5 blocks (20 warps of 64) per SM on the 228 KB of an H200.
  EXPECT_GE(smem(*flawed), 40 * 1024);
  EXPECT_LE(smem(*fixed), 4 * 1024);
}

TEST_F(FlawSuiteBuild, SassShowsTheInstructionLevelFlaws) {
  if (auto why = testing::cuobjdump_missing()) GTEST_SKIP() << *why;
  struct Check {
    std::string tool, prefix;  // opcode (no modifiers) or full opcode
    bool in_flawed;            // true: present in flawed, absent in fixed; false: the reverse
  };
  const std::vector<Check> checks = {
      {"accidental_fp64", "DFMA", true},
      {"fp32_unfused", "FMUL", true},             {"tensor_cores_unused", "HMMA", false},
      {"hopper_path_unused", "HMMA", true},       {"narrow_loads", "LDG.E.128", false},
      {"special_functions", "MUFU", true},        {"warp_stalls", "MEMBAR", true},
  };
  for (const auto& c : checks) {
    auto* flawed = get(c.tool, "flawed");
    auto* fixed = get(c.tool, "fixed");
    if (!flawed || !fixed) continue;
    const auto fl = opcodes(*flawed), fx = opcodes(*fixed);
    auto n = [&](const std::map<std::string, int>& m) {
      if (c.prefix.find('.') != std::string::npos) {
        int k = 0;
        for (const auto& [op, v] : m)
          if (op.rfind(c.prefix, 0) == 0) k += v;
        return k;
      }
      return count_prefix(m, c.prefix);
    };
    if (c.prefix == "MUFU") {
      // The 8 expf calls issue MUFU.EX2 (logf is a polynomial); the fixed twin keeps a couple.
      EXPECT_GE(n(fl), n(fx) + 6) << c.tool << ": flawed.cu has " << n(fl) << " MUFU, fixed.cu " << n(fx);
    } else if (c.in_flawed) {
      EXPECT_GT(n(fl), 0) << c.tool << ": flawed.cu has no " << c.prefix;
      EXPECT_EQ(n(fx), 0) << c.tool << ": fixed.cu still has " << c.prefix;
    } else {
      EXPECT_EQ(n(fl), 0) << c.tool << ": flawed.cu already has " << c.prefix;
      EXPECT_GT(n(fx), 0) << c.tool << ": fixed.cu has no " << c.prefix;
    }
  }
}

}  // namespace
}  // namespace kp
