// Softsign, fp32: y = x / (1 + |x|) in one pass. Each thread loads four independent float4
// (64 bytes) before it computes and stores them, in a grid-stride loop over chunks of
// 4 x blockDim float4 per block, so a warp has four 512-byte loads in flight at once. A
// scalar kernel covers a tail that is not a whole float4, or pointers not 16-byte aligned.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

__device__ __forceinline__ float softsign1(float v) { return v / (1.0f + fabsf(v)); }
__device__ __forceinline__ float4 softsign4(float4 v) {
  return make_float4(softsign1(v.x), softsign1(v.y), softsign1(v.z), softsign1(v.w));
}

__global__ void __launch_bounds__(kThreads) softsign_vec4_x4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t chunk = (int64_t)kThreads * kUnroll;
  for (int64_t base = (int64_t)blockIdx.x * chunk; base < n4; base += (int64_t)gridDim.x * chunk) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads + threadIdx.x;
      if (i < n4) v[u] = __ldcs(x + i);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * kThreads + threadIdx.x;
      if (i < n4) __stcs(y + i, softsign4(v[u]));
    }
  }
}

__global__ void __launch_bounds__(kThreads) softsign_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = softsign1(x[i]);
}

}  // namespace

extern "C" int softsign(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return 0;
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int64_t wave = (int64_t)sms * (2048 / kThreads);  // one full wave of resident blocks
  const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    const int64_t chunks = (n4 + kThreads * kUnroll - 1) / (kThreads * kUnroll);
    softsign_vec4_x4<<<(unsigned)(chunks < wave ? chunks : wave), kThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  }
  const int64_t rest = n - n4 * 4;
  if (rest > 0) {
    const int64_t blocks = (rest + kThreads - 1) / kThreads;
    softsign_scalar<<<(unsigned)(blocks < wave ? blocks : wave), kThreads, 0, stream>>>(x, y, n4 * 4, n);
  }
  return (int)cudaGetLastError();
}
