// The resource report that `nvcc -Xptxas -v` prints per function, parsed into plain structs.
// CUDA 13.0 format (profiling.md section 3.3; captured logs in tests/data/ptxas/):
//
//   ptxas info    : Overriding maximum register limit 256 for '_Z8pressurePKfPf' with  24 of maxrregcount option
//   ptxas info    : 0 bytes gmem                                    <- starts one module (one arch)
//   ptxas info    : Compiling entry function '_Z8pressurePKfPf' for 'sm_90a'
//   ptxas info    : Function properties for _Z8pressurePKfPf
//       1024 bytes stack frame, 2212 bytes spill stores, 2324 bytes spill loads
//   ptxas info    : Used 24 registers, used 0 barriers, 1024 bytes cumulative stack size
//   ptxas info    : Compile time = 151.197 ms
//   ptxas info    : Function properties for _Z9depth_sumPKfi       <- a device function: no
//       16 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads    "Compiling entry"
//
// After "Used N registers" every field is optional ("used N barriers", "N bytes smem", "N bytes
// cumulative stack size"; CUDA 12 also printed "N bytes cmem[0]", which is ignored).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace kp::build {

// What ptxas allocated for one function on one architecture. Sizes in bytes; stack and spill
// sizes are per thread, shared memory per block (static __shared__ only: dynamic shared memory
// is chosen at launch and never appears here).
struct KernelResources {
  std::string mangled_name;       // as ptxas prints it: "_Z10tiled_copyIfLi256EEvPKT_PS0_i"
  std::string name;               // demangled ("void tiled_copy<float, 256>(float const*, float*, int)"),
                                  // or mangled_name when it does not demangle (extern "C")
  std::string arch;               // "sm_90a"; "" for a device function in a module with no entry
  bool is_entry = true;           // a __global__ kernel; false for a non-inlined device function
  int registers = 0;              // per thread
  int register_limit = 0;         // the -maxrregcount cap ptxas reported overriding for it, 0 if none
  int barriers = 0;               // named barriers used (__syncthreads uses barrier 0: counts 1)
  int64_t shared_bytes = 0;       // static shared memory
  int64_t stack_frame_bytes = 0;  // local memory: spills, local arrays, ABI call frames
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t cumulative_stack_bytes = 0;  // own frame plus the deepest callee chain's, when printed
  int64_t gmem_bytes = 0;              // __device__ globals of the whole module it belongs to

  // True when ptxas spilled registers to local memory (a stack frame alone, e.g. a dynamically
  // indexed local array, is not a spill).
  bool has_spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
};

struct PtxasReport {
  std::vector<KernelResources> kernels;           // entry functions, in log order; one per
                                                  // kernel and architecture
  std::vector<KernelResources> device_functions;  // non-inlined device functions (is_entry false)
  std::vector<std::string> warnings;              // text after "ptxas warning : ", in log order
};

// Parses the ptxas -v lines out of a whole nvcc log; lines of other tools (front-end
// diagnostics, ptxas errors, ld) are skipped. An empty log or one without a report gives an
// empty report. Fails with kTool only when the report contradicts itself: a "N bytes stack
// frame" line or a "Used N registers" line that follows no "Function properties for" line, a
// second "Used" line for one function, or a number that does not fit.
Result<PtxasReport> parse_ptxas_report(std::string_view log);

}  // namespace kp::build
