// Paths the tests need: the source tree, its test data, the build's binaries; and whether the
// tools of a tier are present (tests that need a missing one GTEST_SKIP with the reason).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>
#include <functional>

#include "build/builder.h"
#include "util/result.h"

namespace kp::testing {

std::filesystem::path source_dir();
std::filesystem::path test_data_dir();
std::filesystem::path binary_dir();
std::filesystem::path examples_dir();
std::filesystem::path kernelpro_binary();
std::filesystem::path worker_binary();

// Why nvcc cannot be used here, or nullopt when it can.
std::optional<std::string> nvcc_missing();
// Why no GPU can be used here (the worker's own words), or nullopt when one can.
std::optional<std::string> gpu_missing();
// Where scripts/setup.sh installs tools from PyPI wheels (cuobjdump, nvdisasm):
// <source dir>/.kp-tools/python.
std::filesystem::path kp_tools_python_dir();
// Why cuobjdump cannot be found (PATH, /usr/local/cuda/bin, kp_tools_python_dir()), or nullopt.
std::optional<std::string> cuobjdump_missing();

// CUTLASS as kernelpro would find it here (CUTLASS_PATH, else the nvidia-cutlass wheel that
// scripts/setup.sh puts in kp_tools_python_dir()), as the builder takes it; why not, if missing.
std::optional<std::string> cutlass_missing();
// The builder's finder for CuTe candidates (BuildOptions::find_cutlass).
std::function<Result<build::CutlassHeaders>()> cutlass_finder();

// Writes into dir a copy of examples/gelu with N = 4096: a call of a few microseconds, timed by
// graph replay. Returns dir. Fails the calling test when the example has changed shape.
std::filesystem::path tiny_gelu(const std::filesystem::path& dir);

}  // namespace kp::testing
