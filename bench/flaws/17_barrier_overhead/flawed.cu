// Flawed: an unneeded barrier after every float4 a thread processes. It orders nothing (each
// thread sums its own elements), but no load may pass it and the SM's one block of 32 warps
// waits for its slowest warp at every step: each step exposes a load's latency and the
// barrier's, which the 64-FMA chains of four elements do not cover.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 1024;

// h(v): the 64-step chain a = a / 2 + v (2v within rounding).
__device__ __forceinline__ float h(float v) {
  float a = 0.0f;
#pragma unroll
  for (int k = 0; k < 64; ++k) a = fmaf(a, 0.5f, v);
  return a;
}

__global__ void __launch_bounds__(kThreads) k(const float4* __restrict__ x, float* __restrict__ y, int64_t cols4) {
  __shared__ float s[kThreads];
  float a = 0.0f;
  for (int64_t j = threadIdx.x; j < cols4; j += kThreads) {
    const float4 v = x[blockIdx.x * cols4 + j];
    a += (h(v.x) + h(v.y)) + (h(v.z) + h(v.w));
    __syncthreads();
  }
  s[threadIdx.x] = a;
  __syncthreads();
  for (int o = kThreads / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_barrier_overhead";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "y", {rows})) return rc;
  if (cols % (4 * kThreads)) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "cols must be a multiple of 4096");
  const float4* xp = static_cast<const float4*>(x.data);
  float* yp = static_cast<float*>(args->outputs[0].data);
  cudaStream_t st = (cudaStream_t)args->stream;
  k<<<(unsigned)rows, kThreads, 0, st>>>(xp, yp, cols / 4);
  return kp_check_launch(args, WHO);
}
