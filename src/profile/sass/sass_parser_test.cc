#include "profile/sass/sass_parser.h"

#include <gtest/gtest.h>

#include "util/strings.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace kp::profile {
namespace {

// Listings captured with cuobjdump -sass (13.2, from the PyPI wheel) of objects that CUDA 13.0
// nvcc built; each .sass sits beside its .cu in tests/data/sass/, which says how it was built.
// h200_sample.sass: the first lines of `cuobjdump --dump-sass` on the H200 machine.
std::string read_data(const std::string& relative) {
  auto text = read_file(std::string(KP_TEST_DATA_DIR) + "/sass/" + relative);
  EXPECT_TRUE(text.ok()) << "missing test data sass/" << relative;
  return text.ok() ? *text : std::string();
}

SassListing parse_data(const std::string& relative) {
  auto listing = parse_cuobjdump_sass(read_data(relative));
  EXPECT_TRUE(listing.ok()) << relative << ": " << (listing.ok() ? "" : listing.error().message);
  return listing.ok() ? *listing : SassListing{};
}

// Lines of the form "/*0a30*/ ..." in a listing: one per instruction.
size_t count_pc_lines(const std::string& text) {
  static const std::regex pc(R"(^\s*/\*[0-9a-f]{4,}\*/)");
  std::istringstream in(text);
  size_t n = 0;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, pc)) ++n;
  return n;
}

TEST(SassParserTest, H200SampleFromTheTargetMachine) {
  SassListing l = parse_data("h200_sample.sass");
  ASSERT_EQ(l.functions.size(), 1u);
  const SassFunction& f = l.functions[0];
  EXPECT_EQ(f.mangled_name, "_Z7stridediPKfPf");
  EXPECT_EQ(f.name, "strided(int, float const*, float*)");
  EXPECT_EQ(f.arch, "sm_90");
  ASSERT_EQ(f.instructions.size(), 7u);  // control words are not instructions
  for (size_t i = 0; i < f.instructions.size(); ++i) EXPECT_EQ(f.instructions[i].pc, 0x10 * i);
  const SassInstruction& first = f.instructions[0];
  EXPECT_EQ(first.opcode, "LDC");
  EXPECT_TRUE(first.modifiers.empty());
  EXPECT_EQ(first.operands, "R1, c[0x0][0x28]");
  EXPECT_EQ(first.predicate, "");
  const SassInstruction& shift = f.instructions[6];
  EXPECT_EQ(shift.full_opcode(), "SHF.L.U32");
  EXPECT_EQ(shift.modifiers, (std::vector<std::string>{"L", "U32"}));
  EXPECT_EQ(shift.operands, "R5, R7, 0x5, RZ");
}

TEST(SassParserTest, SharedObjectWithSeveralKernels) {
  std::string text = read_data("kernels.sass");
  SassListing l = parse_data("kernels.sass");
  std::vector<std::string> names;
  for (const auto& f : l.functions) {
    names.push_back(f.mangled_name);
    EXPECT_EQ(f.arch, "sm_90a") << f.mangled_name;
    EXPECT_FALSE(f.instructions.empty()) << f.mangled_name;
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"_Z10copy_bytesPKhPhi", "_Z11copy_float4PK6float4PS_i", "_Z11copy_scalarPKfPfi",
                                      "_Z8fast_expPKfPfi", "_Z9block_sumPKfPf", "_Z9daxpy_sumPKdS0_Pddi"}));
  size_t instructions = 0;
  for (const auto& f : l.functions) instructions += f.instructions.size();
  EXPECT_EQ(instructions, count_pc_lines(text));
  const SassFunction* copy = l.find("_Z11copy_float4PK6float4PS_i");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->name, "copy_float4(float4 const*, float4*, int)");
  bool saw_load = false;
  for (const auto& i : copy->instructions) {
    if (i.opcode != "LDG") continue;
    saw_load = true;
    EXPECT_EQ(i.modifiers, (std::vector<std::string>{"E", "128", "CONSTANT"}));
    EXPECT_TRUE(i.has_modifier("128"));
    EXPECT_FALSE(i.has_modifier("64"));
    EXPECT_NE(i.operands.find("desc[UR4]"), std::string::npos) << i.operands;
  }
  EXPECT_TRUE(saw_load);
}

TEST(SassParserTest, OneKernelForTwoArchitectures) {
  SassListing l = parse_data("spills.sass");
  ASSERT_EQ(l.functions.size(), 2u);
  EXPECT_EQ(l.functions[0].mangled_name, "_Z8pressurePKfPf");
  EXPECT_EQ(l.functions[1].mangled_name, "_Z8pressurePKfPf");
  EXPECT_EQ(l.functions[0].arch, "sm_90");
  EXPECT_EQ(l.functions[1].arch, "sm_90a");
  EXPECT_EQ(l.find("_Z8pressurePKfPf", "sm_90a"), &l.functions[1]);
  EXPECT_EQ(l.find("_Z8pressurePKfPf"), &l.functions[0]);
  EXPECT_EQ(l.find("_Z8pressurePKfPf", "sm_80"), nullptr);
}

TEST(SassParserTest, PredicatesOfEveryForm) {
  SassListing l = parse_data("async_copy.sass");
  const SassFunction* bulk = l.find("_Z9bulk_copyPKfPf");
  ASSERT_NE(bulk, nullptr);
  bool saw_uniform_guard = false;
  for (const auto& i : bulk->instructions) {
    if (i.opcode == "SYNCS" && i.predicate == "!UP0") {
      saw_uniform_guard = true;
      EXPECT_EQ(i.full_opcode(), "SYNCS.EXCH.64");
      EXPECT_EQ(i.operands, "URZ, [UR6], UR4");
    }
  }
  EXPECT_TRUE(saw_uniform_guard);

  const char* text =
      "\tcode for sm_90\n"
      "\t\tFunction : k\n"
      "        /*0000*/               @P0 IMAD.MOV.U32 R9, RZ, RZ, 0x4 ;  /* 0x000000ffff097424 */\n"
      "                                                                   /* 0x000fe200078e00ff */\n"
      "        /*0010*/              @!PT LDS RZ, [RZ] ;                  /* 0x00000000ffff7984 */\n"
      "        /*0020*/              @UP1 EXIT ;\n"
      "        /*0030*/                   BRA 0x30;                        /* 0xfffffffc00fc7947 */\n"
      "        /*0040*/                   NOP;\n";
  auto parsed = parse_cuobjdump_sass(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->functions.size(), 1u);
  const auto& insts = parsed->functions[0].instructions;
  ASSERT_EQ(insts.size(), 5u);
  EXPECT_EQ(parsed->functions[0].name, "k");  // does not demangle: kept as printed
  EXPECT_EQ(insts[0].predicate, "P0");
  EXPECT_EQ(insts[0].operands, "R9, RZ, RZ, 0x4");
  EXPECT_EQ(insts[1].predicate, "!PT");
  EXPECT_EQ(insts[2].predicate, "UP1");
  EXPECT_EQ(insts[2].opcode, "EXIT");
  EXPECT_EQ(insts[2].operands, "");
  EXPECT_EQ(insts[3].operands, "0x30");  // no space before ';'
  EXPECT_EQ(insts[4].opcode, "NOP");
  EXPECT_EQ(insts[4].pc, 0x40u);
}

TEST(SassParserTest, PtxSectionsAreSkipped) {
  const char* text =
      "Fatbin elf code:\n================\narch = sm_90\n\n\tcode for sm_90\n"
      "\t\tFunction : _Z1fv\n"
      "        /*0000*/                   EXIT ;      /* 0x000000000000794d */\n"
      "\nFatbin ptx code:\n================\narch = sm_80\ncode version = [9,0]\ncompressed\n"
      ".visible .entry _Z1fv()\n{\n\tret;\n}\n"
      "        /*0000*/                   BOGUS ;\n"
      "\nFatbin elf code:\n================\narch = sm_100\n\n"
      "\t\tFunction : _Z1fv\n"
      "        /*0000*/                   EXIT ;\n";
  auto l = parse_cuobjdump_sass(text);
  ASSERT_TRUE(l.ok()) << l.error().message;
  ASSERT_EQ(l->functions.size(), 2u);
  EXPECT_EQ(l->functions[0].arch, "sm_90");
  EXPECT_EQ(l->functions[1].arch, "sm_100");  // from "arch =" when "code for" is absent
  EXPECT_EQ(l->functions[0].instructions.size(), 1u);
  EXPECT_EQ(l->functions[1].instructions.size(), 1u);
}

TEST(SassParserTest, NoDeviceCodeIsAnEmptyListing) {
  auto empty = parse_cuobjdump_sass("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->functions.empty());
  auto headers = parse_cuobjdump_sass("\nFatbin elf code:\n================\narch = sm_90\n\n\tcode for sm_90\n");
  ASSERT_TRUE(headers.ok());
  EXPECT_TRUE(headers->functions.empty());
}

TEST(SassParserTest, MalformedInstructionLinesAreErrorsNamingTheLine) {
  auto orphan = parse_cuobjdump_sass("\tcode for sm_90\n        /*0000*/  EXIT ;\n");
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.error().code, ErrorCode::kTool);
  EXPECT_NE(orphan.error().message.find("line 2"), std::string::npos) << orphan.error().message;
  EXPECT_NE(orphan.error().message.find("outside any"), std::string::npos) << orphan.error().message;

  auto no_opcode = parse_cuobjdump_sass("\t\tFunction : f\n        /*0000*/   @P0 ;\n");
  ASSERT_FALSE(no_opcode.ok());
  EXPECT_NE(no_opcode.error().message.find("without an opcode"), std::string::npos) << no_opcode.error().message;

  auto bad_pc = parse_cuobjdump_sass("\t\tFunction : f\n        /*00g0*/   EXIT ;\n");
  ASSERT_FALSE(bad_pc.ok());
  EXPECT_NE(bad_pc.error().message.find("not hexadecimal"), std::string::npos) << bad_pc.error().message;
}

}  // namespace
}  // namespace kp::profile
