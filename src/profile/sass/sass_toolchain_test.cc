// Toolchain tier: the kernels of tests/data/sass/*.cu compiled by the real nvcc (as each file's
// header says), disassembled by the real cuobjdump (toolkit, or the wheel scripts/setup.sh puts
// in .kp-tools/python), summarized and joined with the real ptxas report. Skips with the reason
// when nvcc or cuobjdump is missing.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "build/ptxas_report.h"
#include "profile/sass/cuobjdump.h"
#include "profile/sass/sass_summary.h"
#include "sys/subprocess.h"
#include "sys/temp_dir.h"
#include "tests/support/paths.h"

namespace kp::profile {
namespace {

namespace fs = std::filesystem;

struct Built {
  SassListing listing;
  build::PtxasReport ptxas;
};

class SassToolchain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::nvcc_missing()) GTEST_SKIP() << *why;
    if (auto why = testing::cuobjdump_missing()) GTEST_SKIP() << *why;
    auto d = sys::TempDir::create("kp-sass-toolchain-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<sys::TempDir>(std::move(*d));
    tools_.search_dirs = {testing::kp_tools_python_dir()};
  }

  // nvcc -O3 -Xptxas -v <flags> tests/data/sass/<source> -o <output>, then cuobjdump -sass.
  Built build(const std::string& source, const std::vector<std::string>& flags, const std::string& output) {
    sys::Command c;
    c.argv = {"nvcc", "-O3", "-Xptxas", "-v"};
    c.argv.insert(c.argv.end(), flags.begin(), flags.end());
    fs::path out = dir_->path() / output;
    c.argv.insert(c.argv.end(), {(testing::test_data_dir() / "sass" / source).string(), "-o", out.string()});
    c.cwd = dir_->path().string();
    c.timeout = std::chrono::milliseconds(300000);
    auto done = sys::run(c);
    Built b;
    EXPECT_TRUE(done.ok() && done->success())
        << source << ": " << (done.ok() ? done->describe() + "\n" + done->stderr_text : done.error().message);
    if (!done.ok() || !done->success()) return b;
    auto report = build::parse_ptxas_report(done->stdout_text + done->stderr_text);
    EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.error().message);
    if (report.ok()) b.ptxas = *report;
    auto listing = disassemble(tools_, out);
    EXPECT_TRUE(listing.ok()) << (listing.ok() ? "" : listing.error().message);
    if (listing.ok()) b.listing = *listing;
    return b;
  }

  static const KernelSass* find(const std::vector<KernelSass>& ks, const std::string& mangled) {
    for (const auto& k : ks)
      if (k.mangled_name == mangled) return &k;
    ADD_FAILURE() << mangled << " not in the listing";
    return nullptr;
  }

  std::unique_ptr<sys::TempDir> dir_;
  SassToolOptions tools_;
};

TEST_F(SassToolchain, SharedObjectOfSeveralKernelsAsTheBuilderMakesIt) {
  Built b = build("kernels.cu",
                  {"-std=c++17", "-lineinfo", "-shared", "-Xcompiler", "-fPIC", "-use_fast_math",
                   "-gencode=arch=compute_90a,code=sm_90a"},
                  "kernels.so");
  auto ks = join_with_ptxas(b.listing, b.ptxas, sass_arch("sm_90a"));
  ASSERT_EQ(ks.size(), 6u);
  for (const auto& k : ks) {
    EXPECT_EQ(k.sass.arch, "sm_90a");
    EXPECT_TRUE(k.resources.has_value()) << k.mangled_name << " not matched in the ptxas report";
  }

  if (const KernelSass* v = find(ks, "_Z11copy_float4PK6float4PS_i")) {
    EXPECT_EQ(v->sass.global_load_bits, (std::map<int, int64_t>{{128, 1}})) << describe(*v);
    EXPECT_EQ(v->sass.global_store_bits, (std::map<int, int64_t>{{128, 1}})) << describe(*v);
  }
  if (const KernelSass* s = find(ks, "_Z11copy_scalarPKfPfi")) {
    EXPECT_EQ(s->sass.global_load_bits, (std::map<int, int64_t>{{32, 1}})) << describe(*s);
    EXPECT_EQ(s->sass.global_store_bits, (std::map<int, int64_t>{{32, 1}})) << describe(*s);
  }
  if (const KernelSass* d = find(ks, "_Z9daxpy_sumPKdS0_Pddi")) {
    EXPECT_GT(d->sass.by_opcode.count("DFMA") + d->sass.by_opcode.count("DADD"), 1u) << describe(*d);
    EXPECT_GT(d->sass.count(SassClass::kFp64), 0);
  }
  if (const KernelSass* e = find(ks, "_Z8fast_expPKfPfi")) {
    EXPECT_GE(e->sass.mufu.count("EX2"), 1u) << describe(*e);
  }
  if (const KernelSass* r = find(ks, "_Z9block_sumPKfPf")) {
    EXPECT_GT(r->sass.by_opcode.count("BAR"), 0u) << describe(*r);
    EXPECT_EQ(r->resources->barriers, 1);
  }
}

TEST_F(SassToolchain, SpillsUnderARegisterCapShowAsLocalMemoryAndPtxasAgrees) {
  Built b = build("spills.cu",
                  {"-shared", "-Xcompiler", "-fPIC", "-maxrregcount=16", "-gencode=arch=compute_90,code=sm_90",
                   "-gencode=arch=compute_90a,code=sm_90a"},
                  "spills.so");
  auto ks = join_with_ptxas(b.listing, b.ptxas, sass_arch(9, 0));
  ASSERT_EQ(ks.size(), 2u);  // one per architecture
  std::vector<std::string> archs;
  for (const auto& k : ks) {
    archs.push_back(k.sass.arch);
    EXPECT_GT(k.sass.local_stores, 0) << describe(k);
    EXPECT_GT(k.sass.local_loads, 0) << describe(k);
    ASSERT_TRUE(k.resources.has_value());
    EXPECT_EQ(k.resources->arch, k.sass.arch);
    EXPECT_TRUE(k.resources->has_spills()) << describe(k);
  }
  std::sort(archs.begin(), archs.end());
  EXPECT_EQ(archs, (std::vector<std::string>{"sm_90", "sm_90a"}));
}

TEST_F(SassToolchain, MmaSyncIsAWarpLevelHmma) {
  Built b = build("mma_sync.cu", {"-cubin", "-gencode=arch=compute_90,code=sm_90"}, "mma_sync.cubin");
  ASSERT_EQ(b.listing.functions.size(), 1u);
  SassSummary s = summarize(b.listing.functions[0], sass_arch(b.listing.functions[0].arch));
  EXPECT_EQ(s.tensor_shapes.count("HMMA.16816.F32.BF16"), 1u);
  EXPECT_GT(s.count(SassClass::kTensorWarp), 0);
  EXPECT_EQ(s.count(SassClass::kTensorWarpgroup), 0);
}

TEST_F(SassToolchain, WgmmaIsAWarpgroupHgmmaOnSm90a) {
  Built b = build("wgmma.cu", {"-cubin", "-gencode=arch=compute_90a,code=sm_90a"}, "wgmma.cubin");
  ASSERT_EQ(b.listing.functions.size(), 1u);
  const SassFunction& f = b.listing.functions[0];
  EXPECT_EQ(f.arch, "sm_90a");
  SassSummary s = summarize(f, sass_arch(f.arch));
  EXPECT_EQ(s.tensor_shapes.count("HGMMA.64x8x16.F32.BF16"), 1u);
  EXPECT_GT(s.by_opcode.count("WARPGROUP"), 0u);
  EXPECT_EQ(s.count(SassClass::kTensorWarp), 0);
}

TEST_F(SassToolchain, AsyncCopiesBulkCopyAndMbarriers) {
  Built b = build("async_copy.cu", {"-cubin", "-gencode=arch=compute_90a,code=sm_90a"}, "async_copy.cubin");
  const SassFunction* cp = b.listing.find("_Z11cp_async_16PK6float4PS_");
  const SassFunction* bulk = b.listing.find("_Z9bulk_copyPKfPf");
  ASSERT_TRUE(cp && bulk);
  SassSummary c = summarize(*cp, sass_arch(cp->arch));
  EXPECT_GT(c.by_opcode.count("LDGSTS"), 0u);
  EXPECT_GT(c.count(SassClass::kAsyncCopy), 1);
  SassSummary k = summarize(*bulk, sass_arch(bulk->arch));
  EXPECT_GT(k.count(SassClass::kTma), 0);
  EXPECT_GT(k.count(SassClass::kMbarrier), 0);
}

TEST_F(SassToolchain, AFileWithoutDeviceCodeGivesAnEmptyListing) {
  auto r = disassemble(tools_, testing::test_data_dir() / "sass" / "kernels.cu");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->functions.empty());
}

}  // namespace
}  // namespace kp::profile
