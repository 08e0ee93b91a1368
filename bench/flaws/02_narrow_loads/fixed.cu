// Fixed: float4 (16-byte) loads and stores, the same grid of 3 blocks of 256 per SM: four times
// the bytes in flight per warp. n is a multiple of 4.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += (int64_t)gridDim.x * blockDim.x) {
    float4 v = x4[i];
    v.x = fmaf(2.0f, v.x, 1.0f); v.y = fmaf(2.0f, v.y, 1.0f); v.z = fmaf(2.0f, v.z, 1.0f); v.w = fmaf(2.0f, v.w, 1.0f);
    y4[i] = v;
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_narrow", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_narrow", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  if (n % 4) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "n must be a multiple of 4");
  const unsigned grid = 132 * 3;  // a grid sized to the GPU, as many grid-stride kernels are
  k<<<grid, 256, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_narrow");
}
