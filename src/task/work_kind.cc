#include "task/work_kind.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <utility>

namespace kp::task {

namespace {

constexpr std::array<std::string_view, 12> kKinds = {"gemm",          "conv",      "attention", "scan",
                                                     "loss",          "softmax",   "normalization",
                                                     "reduction",     "pooling",   "elementwise",
                                                     "data-movement", "network"};

// Name fragments (lower case) in the order they are tried: the first that matches names the kind.
constexpr std::array<std::pair<std::string_view, std::string_view>, 27> kByName = {{
    {"conv", "conv"},
    {"gemm", "gemm"},
    {"matmul", "gemm"},
    {"matrix_multiplication", "gemm"},
    {"matrix_vector", "gemm"},
    {"matrix_scalar", "elementwise"},
    {"linear", "gemm"},
    {"bmm", "gemm"},
    {"einsum", "gemm"},
    {"pool", "pooling"},
    {"attention", "attention"},
    {"cumsum", "scan"},
    {"cumprod", "scan"},
    {"scan", "scan"},
    {"loss", "loss"},
    {"softmax", "softmax"},
    {"norm", "normalization"},
    {"reduction", "reduction"},
    {"argmin", "reduction"},
    {"argmax", "reduction"},
    {"_max_", "reduction"},
    {"_min_", "reduction"},
    {"mean", "reduction"},
    {"sum", "reduction"},
    {"transpose", "data-movement"},
    {"concat", "data-movement"},
    {"copy", "data-movement"},
}};

}  // namespace

const std::vector<std::string>& work_kinds() {
  static const std::vector<std::string> kinds(kKinds.begin(), kKinds.end());
  return kinds;
}

std::string work_kind(const Task& task) {
  if (task.kind == TaskKind::kNative)
    return std::find(kKinds.begin(), kKinds.end(), task.category) != kKinds.end() ? task.category : "";
  if (task.level >= 3) return "network";
  std::string name = "_" + task.name + "_";
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [fragment, kind] : kByName)
    if (name.find(fragment) != std::string::npos) return std::string(kind);
  return "elementwise";  // the activations (ReLU, Swish, HardTanh...) and other maps
}

}  // namespace kp::task
