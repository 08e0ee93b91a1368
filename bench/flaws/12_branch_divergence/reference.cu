// Reference for flaw_branch_divergence (the same fp32 fma steps: bit-compatible).
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ float path(float a, bool odd) {
  if (odd) {
#pragma unroll 4
    for (int k = 0; k < 256; ++k) a = fmaf(a, 0.999f, 0.5f);
  } else {
#pragma unroll 4
    for (int k = 0; k < 256; ++k) a = fmaf(a, 1.001f, -0.5f);
  }
  return a;
}
__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = path(x[i], i & 1);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_branch_divergence", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_branch_divergence", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  k<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_branch_divergence");
}
