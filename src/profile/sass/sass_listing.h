// The SASS of a compiled object, as plain structs: what `cuobjdump -sass` prints, parsed by
// parse_cuobjdump_sass (sass_parser.h). Nothing past the parser reads the raw text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kp::profile {

// One machine instruction. Volta and later encode every instruction in 16 bytes, so pcs step
// by 0x10. "@!P0 LDG.E.128.CONSTANT R8, desc[UR4][R4.64] ;" becomes predicate "!P0", opcode
// "LDG", modifiers {"E", "128", "CONSTANT"}, operands "R8, desc[UR4][R4.64]".
struct SassInstruction {
  uint64_t pc = 0;                     // byte offset from the start of the function
  std::string predicate;               // guard without the '@': "P0", "!PT", "UP1", "!UP0"; "" if none
  std::string opcode;                  // the mnemonic before the first '.': "LDG", "HGMMA", "SYNCS"
  std::vector<std::string> modifiers;  // the '.'-separated parts after it, in order
  std::string operands;                // the rest, trimmed, without the closing ';' ("" if none)

  // opcode and modifiers joined with '.': "LDG.E.128.CONSTANT", "HGMMA.64x8x16.F32.BF16".
  std::string full_opcode() const;
  // True when `m` is one of the modifiers ("128" for LDG.E.128).
  bool has_modifier(std::string_view m) const;
};

// One function (a __global__ kernel, or a device function the compiler kept out of line) for
// one architecture.
struct SassFunction {
  std::string mangled_name;                   // as cuobjdump prints it after "Function : ": "_Z5otherPf"
  std::string name;                           // demangled ("other(float*)"), or mangled_name when it does not
                                              // demangle (extern "C")
  std::string arch;                           // the real architecture it was compiled for: "sm_90", "sm_90a"
  std::vector<SassInstruction> instructions;  // in pc order, alignment NOPs included
};

// Every function of every ELF section of one object. A fat binary holding several
// architectures lists each function once per architecture.
struct SassListing {
  std::vector<SassFunction> functions;  // in the order cuobjdump printed them

  // The function with this mangled name for this architecture ("" matches any architecture:
  // the first one listed), or nullptr.
  const SassFunction* find(std::string_view mangled_name, std::string_view arch = "") const;
};

}  // namespace kp::profile
