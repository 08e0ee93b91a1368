// Fixed: each thread adds 8 elements (8 independent loads in flight), warp shuffles, then the
// block's 8 warp sums through shared memory: one atomic per 2048 elements (2 per row, 2048x
// fewer than the flawed).
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;
constexpr int kSpan = kThreads * kPerThread;  // columns per block

__global__ void __launch_bounds__(kThreads) k(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  const int64_t row = blockIdx.y;
  const float* p = x + row * cols + (int64_t)blockIdx.x * kSpan + threadIdx.x;
  __shared__ float warp_sums[kThreads / 32];
  float e[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) e[i] = p[i * kThreads];  // coalesced, all in flight
  float v = ((e[0] + e[1]) + (e[2] + e[3])) + ((e[4] + e[5]) + (e[6] + e[7]));
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 4; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) atomicAdd(&y[row], v);  // one atomic per block
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_atomics_contention";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "y", {rows})) return rc;
  if (cols % kSpan) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "cols must be a multiple of 2048");
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(args->outputs[0].data);
  cudaStream_t st = (cudaStream_t)args->stream;
  if (cudaMemsetAsync(yp, 0, rows * sizeof(float), st) != cudaSuccess) return kp_fail(args, KP_ERR_CUDA, "cudaMemsetAsync failed");
  k<<<dim3((unsigned)(cols / kSpan), (unsigned)rows), kThreads, 0, st>>>(xp, yp, cols);
  return kp_check_launch(args, WHO);
}
