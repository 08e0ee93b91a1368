// Reference for flaw_register_spills: the same recurrence, double final sum.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTerms = 64;
__global__ void ref(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float p[kTerms];
  for (int t = 0; t < kTerms; ++t) p[t] = 1.0f + v * (float)(t + 1) * (1.0f / kTerms);
  for (int r = 0; r < 4; ++r) {
    float q[kTerms];
    for (int t = 0; t < kTerms; ++t) q[t] = p[t];
    for (int t = 0; t < kTerms; ++t) {
      // The same in-place order as the candidates: p[(t + off) % 64] may already be updated.
      const int j = (t + 17 * (r + 1)) % kTerms;
      q[t] = q[t] * q[j] * 0.5f + 0.25f;
    }
    for (int t = 0; t < kTerms; ++t) p[t] = q[t];
  }
  double s = 0.0;
  for (int t = 0; t < kTerms; ++t) s += p[t];
  y[i] = (float)s;
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
  ref<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_register_spills");
}
