#include "task/task.h"

#include <string>

namespace kp::task {

const char* to_string(DistKind k) {
  switch (k) {
    case DistKind::kNormal: return "normal";
    case DistKind::kUniform: return "uniform";
    case DistKind::kRandint: return "randint";
    case DistKind::kBernoulli: return "bernoulli";
  }
  return "normal";
}

std::optional<DistKind> dist_kind_from_string(std::string_view n) {
  if (n == "normal") return DistKind::kNormal;
  if (n == "uniform") return DistKind::kUniform;
  if (n == "randint") return DistKind::kRandint;
  if (n == "bernoulli") return DistKind::kBernoulli;
  return std::nullopt;
}

const char* to_string(TaskKind k) { return k == TaskKind::kNative ? "native" : "kernelbench"; }

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t TensorSpec::bytes() const { return static_cast<uint64_t>(numel()) * dtype_size(dtype); }

Tolerance default_tolerance(DType d) {
  switch (d) {
    case DType::kFp64: return {1e-10, 1e-8, 1e-10};
    case DType::kFp32: return {1e-5, 1e-4, 1e-5};
    case DType::kFp16: return {1e-3, 1e-2, 1e-3};
    case DType::kBf16: return {1e-2, 2e-2, 8e-3};
    default: return {0, 0, 0};
  }
}

Tolerance Task::tolerance_for(size_t i) const {
  if (tolerance) return *tolerance;
  return default_tolerance(outputs.at(i).dtype);
}

uint64_t Task::io_bytes() const {
  uint64_t b = 0;
  for (const auto& t : inputs) b += t.bytes();
  for (const auto& t : outputs) b += t.bytes();
  return b;
}

}  // namespace kp::task
