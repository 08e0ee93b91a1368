// Running cuobjdump: finding it, and disassembling a compiled object (a cubin, a .o, a shared
// object or executable with embedded fat binaries) into a SassListing.
//
// Where cuobjdump comes from: the CUDA toolkit (<toolkit>/bin), or the PyPI wheels
// nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm, which scripts/setup.sh installs into the
// git-ignored .kp-tools/python of the source tree (the binaries land in nvidia/cu13/bin/).
// cuobjdump 13 disassembles through nvdisasm, which it looks for beside itself and in PATH.
#pragma once

#include <filesystem>
#include <vector>

#include "profile/sass/sass_listing.h"
#include "util/result.h"

namespace kp::profile {

struct SassToolOptions {
  // The cuobjdump to run. Empty (the default): search as find_cuobjdump says.
  std::filesystem::path cuobjdump;
  // Extra directories to search after PATH and /usr/local/cuda/bin: each directory itself,
  // its bin/, and where the wheels put the binary (nvidia/cu13/bin, nvidia/cuda_cuobjdump/bin,
  // triton/backends/nvidia/bin). The CLI passes <source dir>/.kp-tools/python. Default none.
  std::vector<std::filesystem::path> search_dirs;
  // cuobjdump is killed after this many seconds. Default 120.
  double timeout_s = 120;
};

// The cuobjdump to use: options.cuobjdump when set (it must be an executable file: no fallback
// to a search); else the first executable "cuobjdump" in the directories of this process's
// PATH, /usr/local/cuda/bin, then each search directory as SassToolOptions says.
// Errors: kNotFound, with the places searched and the fix (install the CUDA toolkit, or
// `pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`, or pass --cuobjdump PATH).
Result<std::filesystem::path> find_cuobjdump(const SassToolOptions& options);

// Runs `cuobjdump -sass <object>` and parses its output (parse_cuobjdump_sass). An object that
// holds no device code gives an empty listing.
// Errors: kNotFound when the object or cuobjdump is missing; kTimeout past timeout_s; kTool
// when cuobjdump fails (the message quotes its stderr; a missing nvdisasm says to install
// nvidia-cuda-nvdisasm beside it), its output exceeds 1 GiB, or the output does not parse.
Result<SassListing> disassemble(const SassToolOptions& options, const std::filesystem::path& object);

}  // namespace kp::profile
