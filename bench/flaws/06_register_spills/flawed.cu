// Flawed: __launch_bounds__(256, 8) forces <= 32 registers per thread; the 64 live values spill.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTerms = 64;
__global__ void __launch_bounds__(256, 8) k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float p[kTerms];
#pragma unroll
  for (int t = 0; t < kTerms; ++t) p[t] = 1.0f + v * (float)(t + 1) * (1.0f / kTerms);
  // Four rounds that read every live value: keeps all 64 in registers (or spilled) at once.
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int t = 0; t < kTerms; ++t) p[t] = p[t] * p[(t + 17 * (r + 1)) % kTerms] * 0.5f + 0.25f;
  }
  float s = 0.0f;
#pragma unroll
  for (int t = 0; t < kTerms; ++t) s += p[t];
  y[i] = s;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_register_spills", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_register_spills", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  k<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_register_spills");
}
