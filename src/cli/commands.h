// The subcommands of the kernelpro CLI. Each returns the process exit code (see main.cc).
#pragma once

#include <optional>
#include <string>

#include "eval/eval_options.h"

namespace kp::cli {

struct CommonFlags {
  std::string arch, nvcc = "nvcc", cache_dir, worker;
  bool json = false;
  bool keep_scratch = false;
};

struct EvalFlags {
  std::string task, candidate;
  std::optional<uint64_t> seed;
  bool no_energy = false;
  eval::EvalOptions options;
};

struct BuildFlags {
  std::string task, candidate;
};

int run_eval(const EvalFlags& flags, const CommonFlags& common);
int run_build(const BuildFlags& flags, const CommonFlags& common);
int run_doctor(const CommonFlags& common);

}  // namespace kp::cli
