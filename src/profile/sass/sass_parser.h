// Parses the text of `cuobjdump -sass` (CUDA 12 and 13; profiling.md section 3.1; captured
// listings in tests/data/sass/) into a SassListing:
//
//   Fatbin elf code:                        <- one ELF section (absent when the input is a cubin)
//   ================
//   arch = sm_90a
//   ...
//   	code for sm_90a                        <- the architecture of what follows
//   		Function : _Z11copy_float4PK6float4PS_i
//   	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
//           /*0000*/                   LDC R1, c[0x0][0x28] ;        /* 0x00000a00ff017b82 */
//                                                                    /* 0x000fe20000000800 */
//           /*0070*/               @P0 EXIT ;                        /* 0x000000000000094d */
//   Fatbin ptx code:                        <- PTX sections: skipped to the next ELF section
//
// The second hex word of each instruction (the control word: stall counts, barriers, reuse)
// sits alone on the next line and is not an instruction. Headers, ".headerflags", ".target",
// "..........", blank lines and anything else that is not an instruction are skipped.
#pragma once

#include <string_view>

#include "profile/sass/sass_listing.h"
#include "util/result.h"

namespace kp::profile {

// Returns every function of every ELF section, in order, each with the architecture of the
// "code for sm_XX" (or "arch = sm_XX") line before it. Text without any function (an object
// with no device code, an empty string) gives an empty listing.
// Fails with kTool, naming the line number, when an instruction line comes before any
// "Function :" line, has no opcode, or has a pc that is not hexadecimal.
Result<SassListing> parse_cuobjdump_sass(std::string_view text);

// The demangled form of a mangled C++ name, or the name itself when it does not demangle.
std::string demangle_name(const std::string& mangled);

}  // namespace kp::profile
