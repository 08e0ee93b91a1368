// What the SASS of one kernel says about it, counted statically (each instruction once, however
// often it runs): instruction mix by class and opcode, global access widths, spills, tensor-core
// paths, TMA and mbarriers, special functions, FMA fusion. And the join with the ptxas
// resource report, so one record per kernel carries both.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "build/ptxas_report.h"
#include "profile/sass/sass_arch.h"
#include "profile/sass/sass_listing.h"

namespace kp::profile {

// Static instruction counts of one function. Alignment padding (the NOPs after the final
// self-branch "BRA <its own pc>", and that branch) is not counted anywhere.
struct SassSummary {
  std::string arch;  // the function's architecture ("sm_90a")
  int64_t instructions = 0;
  std::array<int64_t, kSassClassCount> by_class{};  // indexed by SassClass
  std::map<std::string, int64_t> by_opcode;         // mnemonic without modifiers: "FFMA" -> 12

  // Global accesses (LDG/STG and generic LD/ST) by width per thread in bits: 8 (.U8/.S8),
  // 16 (.U16/.S16), 32 (no width modifier), 64 (.64), 128 (.128), 256 (.256). A bit width
  // with no access is absent.
  std::map<int, int64_t> global_load_bits;
  std::map<int, int64_t> global_store_bits;

  int64_t local_loads = 0;   // LDL: spill reloads or local-array reads
  int64_t local_stores = 0;  // STL

  // Tensor-core instructions by full opcode, shape and types included:
  // "HGMMA.64x128x16.F32.BF16" -> 8, "HMMA.16816.F32.BF16" -> 4. WARPGROUP.* are not MMAs and
  // are not listed here (they are in by_class[kTensorWarpgroup]).
  std::map<std::string, int64_t> tensor_shapes;
  // MUFU by function, its first modifier: "EX2" -> 2, "RCP" -> 1.
  std::map<std::string, int64_t> mufu;

  // CUDA-core FP32 arithmetic: fused multiply-adds (FFMA, FFMA2, FFMA32I) against separate
  // adds (FADD*) and multiplies (FMUL*); ncu's FPInstructions rule flags a low fused share.
  int64_t fp32_fma = 0;
  int64_t fp32_add = 0;
  int64_t fp32_mul = 0;

  int64_t count(SassClass c) const { return by_class[static_cast<int>(c)]; }
  // Tensor-core MMAs of either kind (warp mma.sync and warpgroup wgmma), WARPGROUP.* excluded.
  int64_t tensor_instructions() const;
  int64_t global_loads() const;   // sum of global_load_bits
  int64_t global_stores() const;  // sum of global_store_bits
};

// Counts the instructions of `function`, classified with `arch`'s table.
SassSummary summarize(const SassFunction& function, const SassArch& arch);

// One kernel: its SASS summary and, when the ptxas report of the same build has it, its
// resources (registers, shared memory, stack, spill bytes).
struct KernelSass {
  std::string mangled_name;
  std::string name;  // demangled
  SassSummary sass;
  std::optional<build::KernelResources> resources;
};

// One KernelSass per function of the listing, in listing order, classified with `arch`. The
// resources are the ptxas entry (kernel or device function) with the same mangled name and
// architecture; failing that, the only entry with that name whatever its architecture (a log
// of one architecture against a listing of another); else none.
std::vector<KernelSass> join_with_ptxas(const SassListing& listing, const build::PtxasReport& report,
                                        const SassArch& arch);

// JSON forms, for reports and the agent's tools. Keys are the field names; by_class is an
// object keyed by to_string(SassClass) holding the non-zero classes; bit widths are string
// keys ("128"). SassSummary also carries the derived "tensor_instructions", "global_loads" and
// "global_stores". KernelSass: {"mangled_name", "name", "sass", "resources"} ("resources" null
// when unknown; otherwise registers, register_limit, barriers, shared_bytes, stack_frame_bytes,
// spill_store_bytes, spill_load_bytes).
nlohmann::json to_json(const SassSummary& summary);
nlohmann::json to_json(const KernelSass& kernel);

// One or two lines for people and LLMs, e.g. (from tests/data/sass/)
//   copy_float4(float4 const*, float4*, int) [sm_90a]: 16 instructions, 14 registers; 128-bit
//   global loads 1 of 1, 128-bit stores 1 of 1; no spills; 0 tensor instructions
// and for a wgmma kernel a second line "tensor: 1 HGMMA.64x8x16.F32.BF16; BAR 1". The widest
// width seen is the one quoted ("32-bit global loads 32 of 32"). The second line lists, when
// non-zero: tensor MMAs by shape; "TMA n, mbarrier n, cp.async n"; "MUFU 2 EX2, 1 RCP";
// "FP64 n"; "BAR n"; "FP32 FFMA a of b" (fused among FFMA+FADD+FMUL). Spills quote ptxas when
// the resources are known ("spills: 81 STL, 85 LDL (ptxas: 328 B stores, 344 B loads)");
// LDL/STL without a ptxas spill read "local memory: ..." (a local array or call stack).
std::string describe(const KernelSass& kernel);

}  // namespace kp::profile
