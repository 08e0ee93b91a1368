// A candidate or reference shared object loaded into the worker.
#pragma once

#include <memory>
#include <string>

#include "kernelpro/kp_abi.h"
#include "util/result.h"

namespace kp::worker {

class CandidateLibrary {
 public:
  // dlopens path (RTLD_NOW | RTLD_LOCAL) and resolves kp_run and the optional
  // kp_workspace_bytes. kNotFound when the file is missing; kInvalidInput with the dlerror text
  // when it does not load or does not export kp_run (the message says to add
  // `KP_EXPORT int kp_run(kp_args*)`).
  static Result<std::unique_ptr<CandidateLibrary>> open(const std::string& path);
  ~CandidateLibrary();

  kp_run_fn run() const { return run_; }
  // Workspace bytes asked for these args, or 0 when the library does not export the query.
  size_t workspace_bytes(const kp_args& args) const { return workspace_ ? workspace_(&args) : 0; }

 private:
  CandidateLibrary() = default;
  void* handle_ = nullptr;
  kp_run_fn run_ = nullptr;
  kp_workspace_bytes_fn workspace_ = nullptr;
};

}  // namespace kp::worker
