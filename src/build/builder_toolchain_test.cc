// Toolchain tier: real nvcc builds of every example and of broken candidates.
#include "build/builder.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include <gtest/gtest.h>

#include "profile/sass/cuobjdump.h"
#include "sys/temp_dir.h"
#include "task/native_task_loader.h"
#include "task/tune_params.h"
#include "tests/support/paths.h"
#include "util/strings.h"

namespace kp::build {
namespace {

namespace fs = std::filesystem;

class BuilderToolchain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
    auto dir = sys::TempDir::create("kp-cache-test-");
    ASSERT_TRUE(dir.ok());
    cache_ = std::make_unique<sys::TempDir>(std::move(*dir));
  }
  BuildOptions options() {
    BuildOptions o;
    o.arch = "sm_90a";  // fixed: CI has no GPU to ask
    o.cache_dir = cache_->path();
    o.jobs = 2;
    o.find_cutlass = testing::cutlass_finder();
    return o;
  }
  std::unique_ptr<sys::TempDir> cache_;
};

TEST_F(BuilderToolchain, EveryExampleReferenceAndSeedBuildsWithEveryTuneValue) {
  Builder builder(options());
  std::vector<BuildRequest> requests;
  size_t tasks = 0;
  for (const auto& entry : fs::directory_iterator(testing::examples_dir())) {
    if (!fs::exists(entry.path() / "task.toml")) continue;
    auto task = task::load_native_task(entry.path());
    ASSERT_TRUE(task.ok()) << task.error().message;
    ++tasks;
    if (auto seed = read_file(task->seed_path.value_or(fs::path()).string());
        seed && uses_cutlass(*seed) && testing::cutlass_missing()) {
      continue;  // CuteSeedBuildsToWgmmaAndTma reports it skipped, with the reason
    }
    requests.push_back({task->reference_path, task->reference_libraries, {}});
    ASSERT_TRUE(task->seed_path) << task->name << " has no seed.cu";
    requests.push_back({*task->seed_path, task->candidate_libraries, {}});
    auto source = read_file(task->seed_path->string());
    auto params = task::parse_tune_params(*source);
    ASSERT_TRUE(params.ok());
    for (const auto& p : *params)
      for (size_t v = 1; v < p.values.size(); ++v) requests.push_back(BuildRequest{*task->seed_path, task->candidate_libraries, {{p.name, p.values[v]}}});
  }
  EXPECT_GE(tasks, 8u);
  auto results = builder.build_all(requests);
  for (size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << requests[i].source << ": " << results[i].error().message;
    EXPECT_TRUE(results[i]->ok) << requests[i].source << "\n" << results[i]->log;
    EXPECT_EQ(results[i]->exports_kp_run.value_or(true), true) << requests[i].source;
    EXPECT_FALSE(results[i]->resources.kernels.empty() && requests[i].libraries.empty())
        << requests[i].source << ": no kernel in the ptxas report";
    for (const auto& [name, value] : requests[i].tune) EXPECT_EQ(results[i]->tune.at(name), value);
  }
}

// The CuTe example's seed: built with CUTLASS's include directories and CuTe's flag, for sm_90a,
// into the Hopper instructions it is written for (wgmma, TMA loads, mbarrier waits) with no
// register spills; a CuTe candidate where no CUTLASS can be found fails with what to do.
TEST_F(BuilderToolchain, CuteSeedBuildsToWgmmaAndTma) {
  if (auto why = testing::cutlass_missing()) GTEST_SKIP() << *why;
  const fs::path seed = testing::examples_dir() / "gemm_bf16_cute" / "seed.cu";
  Builder builder(options());
  auto r = builder.build({seed, {}, {}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->ok) << r->log;
  const std::string command = join(r->command, " ");
  for (const std::string flag : {"-std=c++17", "--expt-relaxed-constexpr", "-gencode=arch=compute_90a,code=sm_90a",
                                 "-DKP_CUTLASS_VERSION="})
    EXPECT_NE(command.find(flag), std::string::npos) << flag << " missing from " << command;
  const auto headers = testing::cutlass_finder()();  // held: a range-for over a temporary's value dangles
  ASSERT_TRUE(headers.ok()) << headers.error().message;
  for (const auto& dir : headers->include_dirs)
    EXPECT_NE(command.find("-I" + dir.string()), std::string::npos) << command;
  ASSERT_FALSE(r->resources.kernels.empty());
  for (const auto& k : r->resources.kernels) EXPECT_FALSE(k.has_spills()) << k.name;
  EXPECT_EQ(r->log.find("C7514"), std::string::npos) << "ptxas serialized the wgmmas:\n" << r->log;
  if (auto why = testing::cuobjdump_missing()) {
    std::cout << "[ NOTE     ] SASS not checked: " << *why << "\n";
  } else {
    profile::SassToolOptions tools;
    tools.search_dirs = {testing::kp_tools_python_dir()};
    auto listing = profile::disassemble(tools, r->artifact);
    ASSERT_TRUE(listing.ok()) << listing.error().message;
    std::map<std::string, int> n;
    for (const auto& f : listing->functions)
      for (const auto& ins : f.instructions) ++n[ins.opcode];
    EXPECT_GT(n["HGMMA"], 0) << "no wgmma in the SASS";
    EXPECT_GT(n["UTMALDG"], 0) << "no TMA load in the SASS";
    EXPECT_GT(n["SYNCS"], 0) << "no mbarrier operation in the SASS";
  }

  BuildOptions none = options();
  none.find_cutlass = [] () -> Result<CutlassHeaders> {
    return make_error(ErrorCode::kNotFound, "no CUTLASS found: pass --cutlass DIR");
  };
  auto missing = Builder(none).build({seed, {}, {}});
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->ok);
  EXPECT_NE(missing->log.find("includes CuTe/CUTLASS headers, but no CUTLASS found: pass --cutlass DIR"),
            std::string::npos)
      << missing->log;
}

TEST_F(BuilderToolchain, SecondBuildIsACacheHitAndFlagsChangeTheKey) {
  Builder builder(options());
  fs::path seed = testing::examples_dir() / "gelu" / "seed.cu";
  auto cold = builder.build({seed, {}, {}});
  ASSERT_TRUE(cold.ok() && cold->ok);
  EXPECT_FALSE(cold->cache_hit);
  auto warm = builder.build({seed, {}, {}});
  ASSERT_TRUE(warm.ok() && warm->ok);
  EXPECT_TRUE(warm->cache_hit);
  EXPECT_EQ(warm->key, cold->key);
  EXPECT_EQ(warm->artifact, cold->artifact);
  EXPECT_LT(warm->seconds, cold->seconds);
  EXPECT_EQ(warm->resources.kernels.size(), cold->resources.kernels.size());
  auto tuned = builder.build({seed, {}, {{"BLOCK", 512}}});
  ASSERT_TRUE(tuned.ok() && tuned->ok);
  EXPECT_NE(tuned->key, cold->key);
}

TEST_F(BuilderToolchain, BrokenCandidateGivesParsedDiagnostics) {
  Builder builder(options());
  fs::path broken = testing::test_data_dir() / "candidates" / "gelu" / "compile_error.cu";
  auto r = builder.build({broken, {}, {}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->ok);
  ASSERT_FALSE(r->diagnostics.empty()) << r->log;
  const Diagnostic& d = r->diagnostics.front();
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_NE(d.file.find("compile_error.cu"), std::string::npos);
  EXPECT_GT(d.line, 0);
  EXPECT_NE(d.message.find("undeclared_helper"), std::string::npos) << d.message;
  EXPECT_NE(summarize_diagnostics(r->diagnostics, 5).find("undeclared_helper"), std::string::npos);
}

TEST_F(BuilderToolchain, MissingEntryPointIsSeenInTheSymbolTable) {
  Builder builder(options());
  auto r = builder.build({testing::test_data_dir() / "candidates" / "gelu" / "no_entry_point.cu", {}, {}});
  ASSERT_TRUE(r.ok() && r->ok);
  if (!r->exports_kp_run) GTEST_SKIP() << "nm is not available";
  EXPECT_FALSE(*r->exports_kp_run);
}

TEST_F(BuilderToolchain, LinkedLibrariesAndTheSourcesOwnImportsAreRecordedAndCached) {
  Builder builder(options());
  fs::path ref = testing::examples_dir() / "gemm_fp32" / "reference.cu";
  auto cold = builder.build({ref, {"cublas"}, {}});
  ASSERT_TRUE(cold.ok() && cold->ok) << (cold.ok() ? cold->log : cold.error().message);
  if (!cold->needed_libraries || !cold->imported_symbols) GTEST_SKIP() << "readelf or nm is not available";
  auto has_prefix = [](const std::vector<std::string>& v, const std::string& p) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.rfind(p, 0) == 0; });
  };
  EXPECT_TRUE(has_prefix(*cold->needed_libraries, "libcublas.so"));
  EXPECT_TRUE(has_prefix(*cold->imported_symbols, "cublasSgemm"));
  // The object's imports, not the .so's: the static CUDA runtime's own dlopen is not among them.
  EXPECT_FALSE(has_prefix(*cold->imported_symbols, "dlopen"));
  auto warm = builder.build({ref, {"cublas"}, {}});
  ASSERT_TRUE(warm.ok() && warm->ok);
  EXPECT_TRUE(warm->cache_hit);
  EXPECT_EQ(warm->needed_libraries, cold->needed_libraries);
  EXPECT_EQ(warm->imported_symbols, cold->imported_symbols);

  auto dl = builder.build({testing::test_data_dir() / "cheats" / "native" / "dlopen_cublas.cu", {}, {}});
  ASSERT_TRUE(dl.ok() && dl->ok);
  ASSERT_TRUE(dl->imported_symbols);
  EXPECT_TRUE(has_prefix(*dl->imported_symbols, "dlopen"));
  EXPECT_FALSE(has_prefix(*dl->needed_libraries, "libcublas"));
}

TEST_F(BuilderToolchain, UndeclaredTuneOverrideIsAnError) {
  Builder builder(options());
  fs::path seed = testing::examples_dir() / "gelu" / "seed.cu";
  auto bad_value = builder.build({seed, {}, {{"BLOCK", 100}}});
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.error().message.find("not one of the declared values"), std::string::npos);
  auto bad_name = builder.build({seed, {}, {{"TILE", 16}}});
  ASSERT_FALSE(bad_name.ok());
}

TEST_F(BuilderToolchain, MissingNvccSaysHowToFixIt) {
  BuildOptions o = options();
  o.nvcc = "/nonexistent/nvcc";
  Builder builder(o);
  auto r = builder.build({testing::examples_dir() / "gelu" / "seed.cu", {}, {}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("install the CUDA toolkit"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace kp::build
