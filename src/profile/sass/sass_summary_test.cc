#include "profile/sass/sass_summary.h"

#include <gtest/gtest.h>

#include "util/strings.h"

#include <fstream>
#include <sstream>
#include <string>

#include "build/ptxas_report.h"
#include "profile/sass/sass_parser.h"

namespace kp::profile {
namespace {

// Listings and ptxas logs captured from the kernels in tests/data/sass/*.cu (each .cu says how
// it was built); CUDA 13.0 nvcc, cuobjdump 13.2.
std::string read_data(const std::string& relative) {
  auto text = read_file(std::string(KP_TEST_DATA_DIR) + "/sass/" + relative);
  EXPECT_TRUE(text.ok()) << "missing test data sass/" << relative;
  return text.ok() ? *text : std::string();
}

SassListing listing(const std::string& stem) {
  auto l = parse_cuobjdump_sass(read_data(stem + ".sass"));
  EXPECT_TRUE(l.ok()) << stem << ": " << (l.ok() ? "" : l.error().message);
  return l.ok() ? *l : SassListing{};
}

build::PtxasReport ptxas(const std::string& stem) {
  auto r = build::parse_ptxas_report(read_data(stem + ".log"));
  EXPECT_TRUE(r.ok()) << stem << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : build::PtxasReport{};
}

// The summary of one function of a captured listing (the first one when arch is "").
SassSummary summary_of(const std::string& stem, const std::string& mangled, const std::string& arch = "") {
  SassListing l = listing(stem);
  const SassFunction* f = l.find(mangled, arch);
  EXPECT_NE(f, nullptr) << mangled << " not in " << stem;
  if (f == nullptr) return {};
  return summarize(*f, sass_arch(f->arch));
}

const KernelSass* find_kernel(const std::vector<KernelSass>& ks, const std::string& mangled) {
  for (const auto& k : ks)
    if (k.mangled_name == mangled) return &k;
  return nullptr;
}

TEST(SassSummaryTest, VectorizedCopyUses128BitAccesses) {
  SassSummary s = summary_of("kernels", "_Z11copy_float4PK6float4PS_i");
  EXPECT_EQ(s.global_load_bits, (std::map<int, int64_t>{{128, 1}}));
  EXPECT_EQ(s.global_store_bits, (std::map<int, int64_t>{{128, 1}}));
  EXPECT_EQ(s.global_loads(), 1);
  EXPECT_EQ(s.count(SassClass::kGlobalLoad), 1);
  EXPECT_EQ(s.local_loads + s.local_stores, 0);
  EXPECT_EQ(s.tensor_instructions(), 0);
  EXPECT_EQ(s.arch, "sm_90a");
}

TEST(SassSummaryTest, ScalarAndByteCopiesUseNarrowAccesses) {
  SassSummary scalar = summary_of("kernels", "_Z11copy_scalarPKfPfi");
  EXPECT_EQ(scalar.global_load_bits, (std::map<int, int64_t>{{32, 1}}));
  EXPECT_EQ(scalar.global_store_bits, (std::map<int, int64_t>{{32, 1}}));
  SassSummary bytes = summary_of("kernels", "_Z10copy_bytesPKhPhi");
  EXPECT_EQ(bytes.global_load_bits, (std::map<int, int64_t>{{8, 1}}));
  EXPECT_EQ(bytes.global_store_bits, (std::map<int, int64_t>{{8, 1}}));
}

TEST(SassSummaryTest, AlignmentPaddingIsNotCounted) {
  SassListing l = listing("kernels");
  const SassFunction* f = l.find("_Z11copy_scalarPKfPfi");
  ASSERT_NE(f, nullptr);
  // The listing ends "EXIT ; BRA <own pc> ; NOP ; NOP ; ...": the last EXIT is the last
  // instruction counted.
  size_t last_exit = 0;
  for (size_t i = 0; i < f->instructions.size(); ++i)
    if (f->instructions[i].opcode == "EXIT") last_exit = i;
  ASSERT_LT(last_exit + 2, f->instructions.size());
  EXPECT_EQ(f->instructions[last_exit + 1].opcode, "BRA");
  SassSummary s = summarize(*f, sass_arch(9, 0));
  EXPECT_EQ(s.instructions, static_cast<int64_t>(last_exit + 1));
  EXPECT_EQ(s.by_opcode.count("NOP"), 0u);
  int64_t by_class = 0;
  for (int64_t n : s.by_class) by_class += n;
  EXPECT_EQ(by_class, s.instructions);
  int64_t by_opcode = 0;
  for (const auto& [op, n] : s.by_opcode) by_opcode += n;
  EXPECT_EQ(by_opcode, s.instructions);
}

TEST(SassSummaryTest, DoublePrecisionFastMathExpAndBarriers) {
  SassSummary d = summary_of("kernels", "_Z9daxpy_sumPKdS0_Pddi");
  EXPECT_GT(d.count(SassClass::kFp64), 0);
  EXPECT_GT(d.by_opcode["DFMA"], 0);
  EXPECT_GT(d.by_opcode["DADD"], 0);
  EXPECT_EQ(d.global_load_bits, (std::map<int, int64_t>{{64, 2}}));

  SassSummary e = summary_of("kernels", "_Z8fast_expPKfPfi");
  EXPECT_EQ(e.mufu, (std::map<std::string, int64_t>{{"EX2", 1}}));
  EXPECT_EQ(e.count(SassClass::kSpecialFunction), 1);
  EXPECT_EQ(e.count(SassClass::kFp64), 0);

  SassSummary b = summary_of("kernels", "_Z9block_sumPKfPf");
  EXPECT_GT(b.by_opcode["BAR"], 0);
  EXPECT_GE(b.count(SassClass::kBarrier), b.by_opcode["BAR"]);
  EXPECT_GT(b.count(SassClass::kShared), 0);
  EXPECT_GT(b.fp32_add, 0);
}

TEST(SassSummaryTest, TensorCoreShapes) {
  SassSummary warp = summary_of("mma_sync", "_Z14mma_bf16_16816PKjS0_Pf");
  EXPECT_EQ(warp.tensor_shapes, (std::map<std::string, int64_t>{{"HMMA.16816.F32.BF16", 1}}));
  EXPECT_EQ(warp.count(SassClass::kTensorWarp), 1);
  EXPECT_EQ(warp.count(SassClass::kTensorWarpgroup), 0);

  SassSummary group = summary_of("wgmma", "_Z18wgmma_bf16_64x8x16PKtS0_Pf");
  EXPECT_EQ(group.arch, "sm_90a");
  EXPECT_EQ(group.tensor_shapes, (std::map<std::string, int64_t>{{"HGMMA.64x8x16.F32.BF16", 1}}));
  EXPECT_EQ(group.tensor_instructions(), 1);               // WARPGROUP.* are not MMAs
  EXPECT_GT(group.count(SassClass::kTensorWarpgroup), 1);  // but are in the class
  EXPECT_GT(group.by_opcode["WARPGROUP"], 0);
}

TEST(SassSummaryTest, AsyncCopiesTmaAndMbarriers) {
  SassSummary cp = summary_of("async_copy", "_Z11cp_async_16PK6float4PS_");
  EXPECT_EQ(cp.count(SassClass::kAsyncCopy), 3);  // LDGSTS, LDGDEPBAR, DEPBAR
  EXPECT_EQ(cp.count(SassClass::kTma), 0);
  SassSummary bulk = summary_of("async_copy", "_Z9bulk_copyPKfPf");
  EXPECT_EQ(bulk.count(SassClass::kTma), 1);  // UBLKCP
  EXPECT_GE(bulk.count(SassClass::kMbarrier), 3);
  EXPECT_EQ(bulk.count(SassClass::kAsyncCopy), 0);
}

TEST(SassSummaryTest, SpillsAgreeWithThePtxasReportPerArchitecture) {
  auto kernels = join_with_ptxas(listing("spills"), ptxas("spills"), sass_arch(9, 0));
  ASSERT_EQ(kernels.size(), 2u);
  for (const auto& k : kernels) {
    EXPECT_EQ(k.name, "pressure(float const*, float*)");
    EXPECT_GT(k.sass.local_stores, 0) << k.sass.arch;
    EXPECT_GT(k.sass.local_loads, 0) << k.sass.arch;
    ASSERT_TRUE(k.resources.has_value()) << k.sass.arch;
    EXPECT_EQ(k.resources->arch, k.sass.arch);  // matched by architecture, not just by name
    EXPECT_TRUE(k.resources->has_spills());
    EXPECT_EQ(k.resources->registers, 24);
  }
  EXPECT_EQ(kernels[0].sass.arch, "sm_90");
  EXPECT_EQ(kernels[1].sass.arch, "sm_90a");
  std::string text = describe(kernels[0]);
  EXPECT_NE(text.find("; spills: "), std::string::npos) << text;
  EXPECT_NE(text.find("ptxas: 328 B stores, 344 B loads"), std::string::npos) << text;
}

TEST(SassSummaryTest, LocalArrayIsLocalMemoryNotASpill) {
  auto kernels = join_with_ptxas(listing("local_array"), ptxas("local_array"), sass_arch(9, 0));
  ASSERT_EQ(kernels.size(), 1u);
  const KernelSass& k = kernels[0];
  EXPECT_GT(k.sass.local_loads, 0);
  EXPECT_GT(k.sass.local_stores, 0);
  ASSERT_TRUE(k.resources.has_value());
  EXPECT_FALSE(k.resources->has_spills());
  EXPECT_EQ(k.resources->stack_frame_bytes, 256);
  std::string text = describe(k);
  EXPECT_EQ(text.find("; spills:"), std::string::npos) << text;
  EXPECT_NE(text.find("local memory: "), std::string::npos) << text;
  EXPECT_NE(text.find("no ptxas spills"), std::string::npos) << text;
}

TEST(SassSummaryTest, JoinFindsEveryKernelOfASharedObject) {
  auto kernels = join_with_ptxas(listing("kernels"), ptxas("kernels"), sass_arch(9, 0));
  ASSERT_EQ(kernels.size(), 6u);
  for (const auto& k : kernels) {
    ASSERT_TRUE(k.resources.has_value()) << k.mangled_name;
    EXPECT_EQ(k.resources->mangled_name, k.mangled_name);
    EXPECT_FALSE(k.resources->has_spills());
    EXPECT_EQ(k.sass.local_loads + k.sass.local_stores, 0) << k.mangled_name;
  }
  const KernelSass* reduce = find_kernel(kernels, "_Z9block_sumPKfPf");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->resources->barriers, 1);
  EXPECT_EQ(reduce->resources->shared_bytes, 1024);
}

TEST(SassSummaryTest, JoinFallsBackToTheOnlyEntryOfThatNameAndLeavesUnknownsEmpty) {
  SassListing l = listing("mma_sync");
  build::PtxasReport other_arch = ptxas("mma_sync");
  ASSERT_EQ(other_arch.kernels.size(), 1u);
  other_arch.kernels[0].arch = "sm_80";
  auto joined = join_with_ptxas(l, other_arch, sass_arch(9, 0));
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_TRUE(joined[0].resources.has_value());

  auto unrelated = join_with_ptxas(l, ptxas("wgmma"), sass_arch(9, 0));
  ASSERT_EQ(unrelated.size(), 1u);
  EXPECT_FALSE(unrelated[0].resources.has_value());
  EXPECT_TRUE(to_json(unrelated[0])["resources"].is_null());
}

TEST(SassSummaryTest, DescribeSaysWhatMatters) {
  auto kernels = join_with_ptxas(listing("kernels"), ptxas("kernels"), sass_arch(9, 0));
  const KernelSass* copy = find_kernel(kernels, "_Z11copy_float4PK6float4PS_i");
  ASSERT_NE(copy, nullptr);
  std::string text = describe(*copy);
  EXPECT_NE(text.find("copy_float4(float4 const*, float4*, int) [sm_90a]"), std::string::npos) << text;
  EXPECT_NE(text.find("128-bit global loads 1 of 1"), std::string::npos) << text;
  EXPECT_NE(text.find("128-bit stores 1 of 1"), std::string::npos) << text;
  EXPECT_NE(text.find("no spills"), std::string::npos) << text;
  EXPECT_NE(text.find("0 tensor instructions"), std::string::npos) << text;
  EXPECT_NE(text.find("14 registers"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;  // nothing else worth a second line

  const KernelSass* exp = find_kernel(kernels, "_Z8fast_expPKfPfi");
  ASSERT_NE(exp, nullptr);
  EXPECT_NE(describe(*exp).find("\nMUFU 1 EX2"), std::string::npos) << describe(*exp);

  auto wg = join_with_ptxas(listing("wgmma"), ptxas("wgmma"), sass_arch(9, 0));
  ASSERT_EQ(wg.size(), 1u);
  EXPECT_NE(describe(wg[0]).find("tensor: 1 HGMMA.64x8x16.F32.BF16"), std::string::npos) << describe(wg[0]);
}

TEST(SassSummaryTest, JsonCarriesClassesWidthsAndResources) {
  auto kernels = join_with_ptxas(listing("kernels"), ptxas("kernels"), sass_arch(9, 0));
  const KernelSass* copy = find_kernel(kernels, "_Z11copy_float4PK6float4PS_i");
  ASSERT_NE(copy, nullptr);
  nlohmann::json j = to_json(*copy);
  EXPECT_EQ(j["mangled_name"], "_Z11copy_float4PK6float4PS_i");
  EXPECT_EQ(j["sass"]["global_load_bits"]["128"], 1);
  EXPECT_EQ(j["sass"]["by_class"]["global_load"], 1);
  EXPECT_FALSE(j["sass"]["by_class"].contains("tensor_warp"));  // zero classes are left out
  EXPECT_EQ(j["sass"]["instructions"], copy->sass.instructions);
  EXPECT_EQ(j["resources"]["registers"], 14);
  EXPECT_EQ(j["sass"]["tensor_instructions"], 0);
}

}  // namespace
}  // namespace kp::profile
