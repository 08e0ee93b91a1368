// Reference: the chains of the task, walked plainly, summed in double.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kChains = 8;   // chains per warp
constexpr int kSteps = 32;   // dependent loads per chain
constexpr int kRowFloats = 8;  // a row is one 32-byte sector; lane l reads float l % 8 of it

// The first row of chain c of warp w, and the row after p: a hash of the value lane 0 read
// (warp-uniform, so every lane of the warp reads the same sector: coalesced, one sector per
// request).
__device__ __forceinline__ uint32_t first_row(uint64_t w, int c, uint32_t mask) {
  return (uint32_t)((w * kChains + c) * 2654435761ull) & mask;
}
__device__ __forceinline__ uint32_t next_row(uint32_t p, float v, uint32_t mask) {
  const uint32_t u = __shfl_sync(0xffffffffu, __float_as_uint(v), 0);
  return (u ^ (p * 2654435761u)) & mask;
}

__global__ void ref(const float* x, float* y, uint32_t mask) {
  const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t w = t / 32;
  const int lane = (int)(threadIdx.x & 31);
  double sum = 0.0;
  for (int c = 0; c < kChains; ++c) {
    uint32_t p = first_row(w, c, mask);
    for (int s = 0; s < kSteps; ++s) {
      const float v = x[(uint64_t)p * kRowFloats + (lane % kRowFloats)];
      sum += v;
      p = next_row(p, v, mask);
    }
  }
  y[t] = (float)sum;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_low_ilp";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  const int64_t rows = kp_numel(x) / kRowFloats, threads = kp_numel(y);
  if (rows <= 0 || (rows & (rows - 1)) || rows * kRowFloats != kp_numel(x))
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "x must hold a power of two times 8 floats");
  if (threads % 256) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "y's length must be a multiple of 256");
  cudaStream_t st = (cudaStream_t)args->stream;
  ref<<<(unsigned)(threads / 256), 256, 0, st>>>(static_cast<const float*>(x.data), static_cast<float*>(y.data),
                                                   (uint32_t)(rows - 1));
  return kp_check_launch(args, WHO);
}
