#include "eval/library_policy.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace kp::eval {

namespace {

struct Library {
  const char* name;     // as candidate_libraries spells it
  const char* display;  // as people know it
  bool symbols;         // its C API has a distinctive prefix (name + an uppercase letter)
};
// Longest prefix first, so that cublasLt is not taken for cublas.
const Library kLibraries[] = {
    {"cublasLt", "cuBLASLt", true},   {"cublas", "cuBLAS", true},     {"cudnn", "cuDNN", true},
    {"cufft", "cuFFT", true},         {"curand", "cuRAND", true},     {"cusparse", "cuSPARSE", true},
    {"cusolver", "cuSOLVER", true},   {"nccl", "NCCL", true},         {"nvrtc", "NVRTC", true},
    {"nvJitLink", "nvJitLink", true}, {"cutensor", "cuTENSOR", true}, {"npp", "NPP", false},
};

const Library* find(const std::string& name) {
  for (const Library& l : kLibraries)
    if (name == l.name) return &l;
  return nullptr;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string allow_hint(const std::string& library) {
  return fmt::format("a task that allows it says so in task.toml: [build] candidate_libraries = [\"{}\"]", library);
}

}  // namespace

std::optional<std::string> cuda_library_of_soname(const std::string& soname) {
  if (!starts_with(soname, "lib")) return std::nullopt;
  std::string base =
      soname.substr(3, soname.find(".so") == std::string::npos ? std::string::npos : soname.find(".so") - 3);
  for (const Library& l : kLibraries) {
    // libcudnn_ops.so.9, libcufftw.so, libnvrtc-builtins.so belong to their family.
    if (starts_with(base, l.name)) return std::string(l.name);
  }
  return std::nullopt;
}

std::optional<std::string> cuda_library_of_symbol(const std::string& symbol) {
  for (const Library& l : kLibraries) {
    if (!l.symbols || !starts_with(symbol, l.name)) continue;
    size_t n = std::char_traits<char>::length(l.name);
    // cublasSgemm_v2, cudnnCreate, ncclAllReduce: the prefix and then a capital.
    if (symbol.size() > n && std::isupper(static_cast<unsigned char>(symbol[n]))) return std::string(l.name);
  }
  return std::nullopt;
}

std::optional<LibraryViolation> find_forbidden_library(const build::BuildResult& build,
                                                       const std::vector<std::string>& allowed) {
  auto is_allowed = [&](const std::string& lib) {
    return std::find(allowed.begin(), allowed.end(), lib) != allowed.end();
  };
  if (build.imported_symbols) {
    // dlsym too: dlsym(RTLD_DEFAULT, "dlopen") reaches the loader without importing it. And the
    // loader's lists of what is loaded (dl_iterate_phdr, dlinfo, dladdr): with them a candidate
    // finds the cuBLAS the task's reference loaded into the same process and calls it through
    // its own reading of the symbol table (issue 41's red team), no dlopen, no dlsym.
    for (const char* loader :
         {"dlopen", "dlmopen", "__libc_dlopen_mode", "dlsym", "dlvsym", "dl_iterate_phdr", "dlinfo", "dladdr", "dladdr1"}) {
      if (std::find(build.imported_symbols->begin(), build.imported_symbols->end(), loader) ==
          build.imported_symbols->end())
        continue;
      return LibraryViolation{
          "dlopen",
          fmt::format("the candidate calls {}: a library loaded at run time escapes the task's library rule (it "
                      "could be cuBLAS or cuDNN doing the work); link what it needs instead, which a task allows in "
                      "task.toml's [build] candidate_libraries",
                      loader)};
    }
  }
  if (build.needed_libraries) {
    for (const auto& soname : *build.needed_libraries) {
      auto lib = cuda_library_of_soname(soname);
      if (!lib || is_allowed(*lib)) continue;
      return LibraryViolation{*lib, fmt::format("the candidate links {} ({}), which this task does not allow: its work "
                                                "must be its own kernels; {}",
                                                soname, find(*lib)->display, allow_hint(*lib))};
    }
  }
  if (build.imported_symbols) {
    for (const auto& sym : *build.imported_symbols) {
      auto lib = cuda_library_of_symbol(sym);
      if (!lib || is_allowed(*lib)) continue;
      return LibraryViolation{*lib, fmt::format("the candidate calls {} from {}, which this task does not allow: its "
                                                "work must be its own kernels; {}",
                                                sym, find(*lib)->display, allow_hint(*lib))};
    }
  }
  return std::nullopt;
}

}  // namespace kp::eval
