// What SASS opcodes mean on one GPU architecture: each opcode's class (global load, tensor
// warpgroup MMA, TMA, ...). The tables live in one file per architecture (sass_sm90.cc); the
// generic table (sass_arch.cc) holds the opcodes common to Volta through Hopper and stands in
// for architectures without a table of their own. Generic code asks a SassArch, never the
// compute capability.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "profile/sass/sass_listing.h"

namespace kp::profile {

// What an instruction does, coarsely: the classes the summary counts and the heuristics read
// (profiling.md section 3.4). Stored and printed by to_string's name.
enum class SassClass {
  kGlobalLoad,       // LDG, LD (generic address): "global_load"
  kGlobalStore,      // STG, ST: "global_store"
  kShared,           // LDS, STS, LDSM (ldmatrix), STSM (stmatrix): "shared"
  kLocal,            // LDL, STL: spills and local arrays: "local"
  kConstant,         // LDC, ULDC: "constant"
  kAsyncCopy,        // LDGSTS (cp.async), LDGDEPBAR, DEPBAR: "async_copy"
  kTma,              // UTMALDG, UTMASTG, UTMAREDG, UTMAPF, UTMACCTL, UBLKCP (bulk copy): "tma"
  kMbarrier,         // SYNCS.* (mbarrier init, arrive, try_wait): "mbarrier"
  kTensorWarp,       // HMMA, IMMA, DMMA, BMMA (mma.sync): "tensor_warp"
  kTensorWarpgroup,  // HGMMA, IGMMA, QGMMA, BGMMA, WARPGROUP.* (wgmma): "tensor_warpgroup"
  kFp32,             // FFMA, FADD, FMUL, FMNMX, FSETP, FFMA2, ...: "fp32"
  kFp64,             // DFMA, DADD, DMUL, DSETP, ...: "fp64"
  kHalf,             // HFMA2, HADD2, HMUL2, HSETP2, ...: "half"
  kSpecialFunction,  // MUFU.*: "special_function"
  kConversion,       // F2F, F2I, I2F, F2FP, I2I, ...: "conversion"
  kInteger,          // IMAD, IADD3, LOP3, SHF, ISETP, LEA, MOV, SEL, PRMT, ...: "integer"
  kWarp,             // SHFL, VOTE, REDUX, MATCH, ELECT: "warp"
  kAtomic,           // ATOMG, ATOM, ATOMS, RED, REDG: "atomic"
  kBarrier,          // BAR, MEMBAR, FENCE, WARPSYNC, BSSY, BSYNC: "barrier"
  kControl,          // BRA, BRX, JMP, CALL, RET, EXIT: "control"
  kUniform,          // the uniform datapath, U* (UMOV, UIADD3, ...): "uniform"
  kOther,            // everything else (S2R, CS2R, NOP, texture, opcodes no table knows): "other"
};
inline constexpr int kSassClassCount = static_cast<int>(SassClass::kOther) + 1;
const char* to_string(SassClass c);
std::optional<SassClass> sass_class_from_string(std::string_view s);

// The opcode table of one architecture. Immutable once built; safe to share across threads.
struct SassArch {
  std::string name;                // "sm_90" (covers sm_90a); "generic" for the fallback
  int cc_major = 0, cc_minor = 0;  // 0, 0 for the generic table
  // Opcode (the mnemonic before the first '.', as SassInstruction::opcode) -> class.
  std::map<std::string, SassClass, std::less<>> opcodes;

  // The class of an opcode: its entry in `opcodes`; else kUniform when it starts with 'U' (the
  // uniform datapath's mnemonics all do); else kOther.
  SassClass classify(std::string_view opcode) const;
  SassClass classify(const SassInstruction& inst) const { return classify(inst.opcode); }
  // True when this architecture has a table of its own (false for the generic fallback).
  bool is_generic() const { return cc_major == 0; }
};

// The table for a compute capability: sm_90 for 9.x; the generic table for any other.
const SassArch& sass_arch(int cc_major, int cc_minor);
// The same for an architecture name as cuobjdump and ptxas print it: "sm_90a", "sm_90",
// "sm_80". A name that is not "sm_" followed by digits gets the generic table.
const SassArch& sass_arch(std::string_view arch_name);

// The generic table: opcodes common to Volta (sm_70) through Hopper. Per-architecture tables
// start from it.
const SassArch& generic_sass_arch();
// Per-architecture tables, one file each (sass_sm90.cc). Use sass_arch() instead.
const SassArch& sass_arch_sm90();

}  // namespace kp::profile
