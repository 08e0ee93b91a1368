// Element types of task tensors, mirroring kp_dtype in include/kernelpro/kp_abi.h.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace kp::task {

// Numeric values equal kp_dtype's, so a DType casts to the ABI value directly.
enum class DType { kFp32 = 0, kFp16 = 1, kBf16 = 2, kInt32 = 3, kInt64 = 4, kBool = 5, kFp64 = 6 };

// "fp32", "fp16", "bf16", "int32", "int64", "bool", "fp64".
const char* to_string(DType dtype);
// Accepts the names above and the common aliases (float32, float, half, float16, bfloat16,
// int, long, float64, double). nullopt for anything else.
std::optional<DType> dtype_from_string(std::string_view name);
// Bytes per element (bool: 1).
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);

}  // namespace kp::task
