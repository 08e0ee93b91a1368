// Which libraries a candidate may use. A native candidate's work must be its own kernels: a
// task lets it link a CUDA library (cuBLAS, cuDNN, ...) only by listing the library in
// task.toml's [build] candidate_libraries. The Builder records what each .so links (DT_NEEDED)
// and what the candidate's own code imports (build::BuildResult); this decides, without a GPU,
// whether that breaks the task's rule. A candidate that imports dlopen is refused whatever the
// task allows: it could load any library behind the rule's back.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "build/builder.h"

namespace kp::eval {

struct LibraryViolation {
  std::string library;  // the library's name as candidate_libraries spells it ("cublas"), or "dlopen"
  std::string reason;   // names the library and the evidence, and says how a task allows it
};

// The CUDA library a soname or an imported C symbol belongs to, as candidate_libraries spells
// it: "libcublas.so.13" and "cublasSgemm_v2" -> "cublas", "libcublasLt.so.13" and
// "cublasLtMatmul" -> "cublasLt"; also cudnn, cufft, curand, cusparse, cusolver, nccl, nvrtc,
// nvJitLink, cutensor, npp (sonames only). nullopt for anything else (libc, libstdc++, the CUDA
// runtime and driver, which every candidate may use).
std::optional<std::string> cuda_library_of_soname(const std::string& soname);
std::optional<std::string> cuda_library_of_symbol(const std::string& symbol);

// The first violation of `allowed` (task.candidate_libraries) by the candidate's build: a
// needed CUDA library or an imported symbol of one that is not allowed, or an import of dlopen,
// dlmopen, __libc_dlopen_mode, dlsym or dlvsym (dlsym(RTLD_DEFAULT, "dlopen") finds the loader
// without importing it). nullopt when there is none, or when the build recorded
// neither list (readelf and nm missing: nothing can be said).
std::optional<LibraryViolation> find_forbidden_library(const build::BuildResult& build,
                                                       const std::vector<std::string>& allowed);

}  // namespace kp::eval
