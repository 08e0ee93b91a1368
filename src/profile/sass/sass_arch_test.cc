#include "profile/sass/sass_arch.h"

#include <gtest/gtest.h>

#include <string>

#include "profile/sass/sass_parser.h"

namespace kp::profile {
namespace {

// Classifies one instruction line as cuobjdump prints it.
SassClass classify_line(const SassArch& arch, const std::string& line) {
  auto l = parse_cuobjdump_sass("\t\tFunction : f\n        /*0000*/                   " + line + "\n");
  EXPECT_TRUE(l.ok() && l->functions.size() == 1 && l->functions[0].instructions.size() == 1) << line;
  if (!l.ok() || l->functions.empty() || l->functions[0].instructions.empty()) return SassClass::kOther;
  return arch.classify(l->functions[0].instructions[0]);
}

TEST(SassArchTest, LookupByComputeCapabilityAndName) {
  EXPECT_EQ(sass_arch(9, 0).name, "sm_90");
  EXPECT_EQ(&sass_arch("sm_90a"), &sass_arch(9, 0));
  EXPECT_EQ(&sass_arch("sm_90"), &sass_arch(9, 0));
  EXPECT_FALSE(sass_arch(9, 0).is_generic());
  EXPECT_TRUE(sass_arch(8, 0).is_generic());
  EXPECT_TRUE(sass_arch("sm_80").is_generic());
  EXPECT_TRUE(sass_arch("sm_100a").is_generic());
  EXPECT_TRUE(sass_arch("compute_90").is_generic());
  EXPECT_TRUE(sass_arch("").is_generic());
}

// Lines captured from the listings in tests/data/sass/ (and profiling.md section 3.4 for the
// TMA loads, which the captured kernels do not use).
TEST(SassArchTest, HopperClassesOfCapturedInstructions) {
  const SassArch& h = sass_arch(9, 0);
  struct Case {
    const char* line;
    SassClass expected;
  };
  const Case cases[] = {
      {"LDG.E.128.CONSTANT R8, desc[UR4][R4.64] ;", SassClass::kGlobalLoad},
      {"STG.E.U8 desc[UR4][R4.64], R3 ;", SassClass::kGlobalStore},
      {"LDS.128 R4, [R3] ;", SassClass::kShared},
      {"STS.U16 [R5], R4 ;", SassClass::kShared},
      {"LDL.LU.64 R2, [R1+0x8] ;", SassClass::kLocal},
      {"STL [R1+0x4], R5 ;", SassClass::kLocal},
      {"LDC.64 R2, c[0x0][0x210] ;", SassClass::kConstant},
      {"ULDC.64 UR4, c[0x0][0x208] ;", SassClass::kConstant},
      {"LDGSTS.E.BYPASS.128 [R7], desc[UR6][R4.64] ;", SassClass::kAsyncCopy},
      {"LDGDEPBAR ;", SassClass::kAsyncCopy},
      {"DEPBAR.LE SB0, 0x0 ;", SassClass::kAsyncCopy},
      {"UBLKCP.S.G [UR8], [UR4], UR6 ;", SassClass::kTma},
      {"UTMALDG.2D [UR8], [UR4] ;", SassClass::kTma},
      {"SYNCS.ARRIVE.TRANS64 RZ, [UR9], R2 ;", SassClass::kMbarrier},
      {"SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4], R2 ;", SassClass::kMbarrier},
      {"HMMA.16816.F32.BF16 R12, R12, R10, RZ ;", SassClass::kTensorWarp},
      {"HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;", SassClass::kTensorWarpgroup},
      {"WARPGROUP.ARRIVE ;", SassClass::kTensorWarpgroup},
      {"FFMA R6, R2, R4, R6 ;", SassClass::kFp32},
      {"FADD.FTZ R0, R3, R4 ;", SassClass::kFp32},
      {"DFMA R6, R2, UR6, R4 ;", SassClass::kFp64},
      {"HFMA2 R4, R2, R3, R4 ;", SassClass::kHalf},
      {"MUFU.EX2 R9, R0 ;", SassClass::kSpecialFunction},
      {"F2FP.BF16.F32.PACK_AB R0, R3, R2 ;", SassClass::kConversion},
      {"IMAD.WIDE R2, R7, 0x4, R2 ;", SassClass::kInteger},
      {"VIADD R0, R3, 0x1 ;", SassClass::kInteger},
      {"ISETP.GE.AND P0, PT, R7, UR4, PT ;", SassClass::kInteger},
      {"SHFL.BFLY PT, R3, R2, 0x10, 0x1f ;", SassClass::kWarp},
      {"ELECT P0, URZ, PT ;", SassClass::kWarp},
      {"RED.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R5 ;", SassClass::kAtomic},
      {"BAR.SYNC.DEFER_BLOCKING 0x0 ;", SassClass::kBarrier},
      {"BSSY B0, 0x1c0 ;", SassClass::kBarrier},
      {"BRA.U.ANY 0x2c0 ;", SassClass::kControl},
      {"EXIT ;", SassClass::kControl},
      {"UIADD3 UR4, UR4, 0x1, URZ ;", SassClass::kUniform},
      {"S2UR UR4, SR_CTAID.X ;", SassClass::kUniform},
      {"S2R R0, SR_TID.X ;", SassClass::kOther},
      {"NOP;", SassClass::kOther},
  };
  for (const auto& c : cases)
    EXPECT_EQ(to_string(classify_line(h, c.line)), std::string(to_string(c.expected))) << c.line;
}

TEST(SassArchTest, GenericTableDoesNotKnowHopperOpcodes) {
  const SassArch& g = generic_sass_arch();
  EXPECT_EQ(g.classify("HGMMA"), SassClass::kOther);
  EXPECT_EQ(g.classify("SYNCS"), SassClass::kOther);
  EXPECT_EQ(g.classify("UTMALDG"), SassClass::kUniform);  // the 'U' rule, lacking a table entry
  EXPECT_EQ(g.classify("HMMA"), SassClass::kTensorWarp);
  EXPECT_EQ(g.classify("LDG"), SassClass::kGlobalLoad);
  EXPECT_EQ(sass_arch(9, 0).classify("UTMALDG"), SassClass::kTma);
}

TEST(SassArchTest, ClassNamesRoundTrip) {
  for (int i = 0; i < kSassClassCount; ++i) {
    auto c = static_cast<SassClass>(i);
    auto back = sass_class_from_string(to_string(c));
    ASSERT_TRUE(back.has_value()) << to_string(c);
    EXPECT_EQ(*back, c);
  }
  EXPECT_EQ(std::string(to_string(SassClass::kTensorWarpgroup)), "tensor_warpgroup");
  EXPECT_FALSE(sass_class_from_string("tensor").has_value());
}

}  // namespace
}  // namespace kp::profile
