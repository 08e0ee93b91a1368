#include "profile/sass/sass_arch.h"

#include <cctype>
#include <charconv>
#include <utility>
#include <vector>

namespace kp::profile {

namespace {

// Opcodes of Volta through Ada that Hopper keeps, by class (plus Blackwell's paired FP32
// FFMA2/FADD2/FMUL2, which no older listing contains); Hopper's own are in sass_sm90.cc.
struct ClassOpcodes {
  SassClass cls;
  std::vector<const char*> opcodes;
};

const std::vector<ClassOpcodes>& common_opcodes() {
  static const std::vector<ClassOpcodes> table = {
      {SassClass::kGlobalLoad, {"LDG", "LD"}},
      {SassClass::kGlobalStore, {"STG", "ST"}},
      {SassClass::kShared, {"LDS", "STS", "LDSM"}},
      {SassClass::kLocal, {"LDL", "STL"}},
      {SassClass::kConstant, {"LDC", "ULDC"}},
      {SassClass::kAsyncCopy, {"LDGSTS", "LDGDEPBAR", "DEPBAR"}},
      {SassClass::kTensorWarp, {"HMMA", "IMMA", "DMMA", "BMMA"}},
      {SassClass::kFp32,
       {"FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "FSET", "FSEL", "FCHK", "FRND", "FSWZADD", "FFMA32I", "FADD32I",
        "FMUL32I", "FFMA2", "FADD2", "FMUL2"}},
      {SassClass::kFp64, {"DFMA", "DADD", "DMUL", "DSETP", "DSET", "DMNMX"}},
      {SassClass::kHalf, {"HFMA2", "HADD2", "HMUL2", "HSETP2", "HSET2", "HMNMX2"}},
      {SassClass::kSpecialFunction, {"MUFU"}},
      {SassClass::kConversion, {"F2F", "F2I", "I2F", "I2I", "F2FP", "I2FP", "F2IP", "I2IP"}},
      {SassClass::kInteger,
       {"IMAD", "IMUL", "IADD3", "IADD",   "IADD32I", "IABS",     "IMNMX",     "ISETP", "ISCADD", "IDP",  "IDP4A",
        "LEA",  "LOP3", "LOP",   "LOP32I", "SHF",     "SHL",      "SHR",       "POPC",  "FLO",    "BREV", "BMSK",
        "SGXT", "PRMT", "SEL",   "MOV",    "MOV32I",  "VABSDIFF", "VABSDIFF4", "PLOP3", "PSETP",  "P2R",  "R2P"}},
      {SassClass::kWarp, {"SHFL", "VOTE", "VOTEU", "REDUX", "MATCH"}},
      {SassClass::kAtomic, {"ATOMG", "ATOM", "ATOMS", "RED"}},
      {SassClass::kBarrier, {"BAR", "MEMBAR", "FENCE", "ERRBAR", "WARPSYNC", "BSSY", "BSYNC"}},
      {SassClass::kControl,
       {"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT", "BREAK", "BPT", "KILL", "YIELD", "BMOV"}},
      {SassClass::kUniform, {"S2UR", "R2UR"}},
      {SassClass::kOther, {"NANOSLEEP", "NOP", "S2R", "CS2R"}},
  };
  return table;
}

SassArch make_generic() {
  SassArch a;
  a.name = "generic";
  for (const auto& row : common_opcodes())
    for (const char* opcode : row.opcodes) a.opcodes.emplace(opcode, row.cls);
  return a;
}

}  // namespace

const char* to_string(SassClass c) {
  switch (c) {
    case SassClass::kGlobalLoad: return "global_load";
    case SassClass::kGlobalStore: return "global_store";
    case SassClass::kShared: return "shared";
    case SassClass::kLocal: return "local";
    case SassClass::kConstant: return "constant";
    case SassClass::kAsyncCopy: return "async_copy";
    case SassClass::kTma: return "tma";
    case SassClass::kMbarrier: return "mbarrier";
    case SassClass::kTensorWarp: return "tensor_warp";
    case SassClass::kTensorWarpgroup: return "tensor_warpgroup";
    case SassClass::kFp32: return "fp32";
    case SassClass::kFp64: return "fp64";
    case SassClass::kHalf: return "half";
    case SassClass::kSpecialFunction: return "special_function";
    case SassClass::kConversion: return "conversion";
    case SassClass::kInteger: return "integer";
    case SassClass::kWarp: return "warp";
    case SassClass::kAtomic: return "atomic";
    case SassClass::kBarrier: return "barrier";
    case SassClass::kControl: return "control";
    case SassClass::kUniform: return "uniform";
    case SassClass::kOther: return "other";
  }
  return "other";
}

std::optional<SassClass> sass_class_from_string(std::string_view s) {
  for (int i = 0; i < kSassClassCount; ++i)
    if (s == to_string(static_cast<SassClass>(i))) return static_cast<SassClass>(i);
  return std::nullopt;
}

SassClass SassArch::classify(std::string_view opcode) const {
  if (auto it = opcodes.find(opcode); it != opcodes.end()) return it->second;
  if (!opcode.empty() && opcode.front() == 'U') return SassClass::kUniform;
  return SassClass::kOther;
}

const SassArch& generic_sass_arch() {
  static const SassArch generic = make_generic();
  return generic;
}

const SassArch& sass_arch(int cc_major, int /*cc_minor*/) {
  if (cc_major == 9) return sass_arch_sm90();
  return generic_sass_arch();
}

const SassArch& sass_arch(std::string_view arch_name) {
  if (arch_name.substr(0, 3) != "sm_") return generic_sass_arch();
  std::string_view digits = arch_name.substr(3);
  while (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back()))) digits.remove_suffix(1);
  int number = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (ec != std::errc() || end != digits.data() + digits.size() || number < 10) return generic_sass_arch();
  return sass_arch(number / 10, number % 10);
}

}  // namespace kp::profile
