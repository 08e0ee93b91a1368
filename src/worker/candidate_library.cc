#include "worker/candidate_library.h"

#include <dlfcn.h>

#include <filesystem>

#include <fmt/format.h>

namespace kp::worker {

Result<std::unique_ptr<CandidateLibrary>> CandidateLibrary::open(const std::string& path) {
  if (!std::filesystem::exists(path)) return make_error(ErrorCode::kNotFound, fmt::format("{}: no such shared object", path));
  std::unique_ptr<CandidateLibrary> lib(new CandidateLibrary());
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) return make_error(ErrorCode::kInvalidInput, fmt::format("dlopen {}: {}", path, dlerror()));
  lib->run_ = reinterpret_cast<kp_run_fn>(dlsym(lib->handle_, "kp_run"));
  if (!lib->run_)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("{} does not export kp_run: define `KP_EXPORT int kp_run(kp_args* args)` "
                                  "(include <kernelpro/kp_abi.h>)", path));
  lib->workspace_ = reinterpret_cast<kp_workspace_bytes_fn>(dlsym(lib->handle_, "kp_workspace_bytes"));
  return lib;
}

CandidateLibrary::~CandidateLibrary() {
  // Deliberately not dlclose'd: a candidate may have registered CUDA modules or atexit handlers
  // that outlive the call; the worker process is disposable instead.
}

}  // namespace kp::worker
