// Fixed: a float accumulator and f-suffixed literals, all fp32 (one FFMA a step).
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    float a = 1.0f;
#pragma unroll
    for (int j = 0; j < 64; ++j) a = a * 0.5f + v;
    y[i] = a;
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_accidental_fp64", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_accidental_fp64", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  const unsigned grid = (unsigned)((n + 255) / 256 < 132 * 16 ? (n + 255) / 256 : 132 * 16);
  k<<<grid, 256, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_accidental_fp64");
}
