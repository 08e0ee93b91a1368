// Flawed: one thread per element runs the whole K loop: 304 long blocks, 1.15 waves.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kK = 32768;
__global__ void __launch_bounds__(1024) k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = rintf(x[i] * 16.0f);  // an integer: every partial sum below is exact in fp32
  float a = 0.0f;
  for (int k = 0; k < kK; ++k) a = fmaf(v, (float)((k & 7) + 1), a);
  y[i] = a * 0.0625f;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_tail_effect", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_tail_effect", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  k<<<(unsigned)((n + 1023) / 1024), 1024, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_tail_effect");
}
