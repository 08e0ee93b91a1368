// Flawed: a shared-memory tree reduction per row, the textbook one: a __syncthreads() at each of
// its 10 steps over 1024 threads, and from step 6 on only warp 0 works while the other 31 warps
// wait at the barrier. Loads are prefetched 4 rows ahead, so memory is not what it waits on.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 1024;  // = the row length
constexpr int kAhead = 4;       // rows prefetched per block

__global__ void __launch_bounds__(kThreads, 2) k(const float* __restrict__ x, float* __restrict__ y, int64_t rows) {
  __shared__ float s[kThreads];
  const int t = threadIdx.x;
  const int64_t step = gridDim.x;
  float next[kAhead];
#pragma unroll
  for (int i = 0; i < kAhead; ++i) {
    const int64_t r = blockIdx.x + i * step;
    next[i] = r < rows ? x[r * kThreads + t] : 0.0f;
  }
  for (int64_t r0 = blockIdx.x; r0 < rows; r0 += kAhead * step) {
    float cur[kAhead];
#pragma unroll
    for (int i = 0; i < kAhead; ++i) {
      cur[i] = next[i];
      const int64_t r = r0 + (kAhead + i) * step;
      next[i] = r < rows ? x[r * kThreads + t] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kAhead; ++i) {
      s[t] = cur[i];
      __syncthreads();
      for (int o = kThreads / 2; o > 0; o >>= 1) {
        if (t < o) s[t] += s[t + o];
        __syncthreads();
      }
      const int64_t r = r0 + i * step;
      if (t == 0 && r < rows) y[r] = s[0];
    }
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_barrier_overhead";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "y", {rows})) return rc;
  if (cols != kThreads) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "rows must be 1024 wide");
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
    return kp_fail(args, KP_ERR_CUDA, "cudaDeviceGetAttribute failed");
  cudaStream_t st = (cudaStream_t)args->stream;
  // Two 1024-thread blocks per SM: every SM full (64 warps), each block walking its rows.
  k<<<(unsigned)(2 * sms), kThreads, 0, st>>>(static_cast<const float*>(x.data), static_cast<float*>(args->outputs[0].data),
                                             rows);
  return kp_check_launch(args, WHO);
}
