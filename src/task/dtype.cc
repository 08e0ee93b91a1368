#include "task/dtype.h"

#include <string>

namespace kp::task {

const char* to_string(DType d) {
  switch (d) {
    case DType::kFp32: return "fp32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kFp64: return "fp64";
  }
  return "fp32";
}

std::optional<DType> dtype_from_string(std::string_view n) {
  std::string s(n);
  if (s == "fp32" || s == "float32" || s == "float") return DType::kFp32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::kFp16;
  if (s == "bf16" || s == "bfloat16") return DType::kBf16;
  if (s == "int32" || s == "int") return DType::kInt32;
  if (s == "int64" || s == "long") return DType::kInt64;
  if (s == "bool") return DType::kBool;
  if (s == "fp64" || s == "float64" || s == "double") return DType::kFp64;
  return std::nullopt;
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::kFp32: case DType::kInt32: return 4;
    case DType::kFp16: case DType::kBf16: return 2;
    case DType::kInt64: case DType::kFp64: return 8;
    case DType::kBool: return 1;
  }
  return 4;
}

bool is_floating(DType d) {
  return d == DType::kFp32 || d == DType::kFp16 || d == DType::kBf16 || d == DType::kFp64;
}

}  // namespace kp::task
