// Softsign, fp32: y = x / (1 + |x|) in one pass: x read once, y written once, 16-byte
// streaming loads and stores in a grid-stride loop; a scalar path for a tail of fewer than four
// elements or pointers that are not 16-byte aligned.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ float softsign1(float v) { return v / (1.0f + fabsf(v)); }

__global__ void __launch_bounds__(256) softsign_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = __ldcs(x + i);
    v.x = softsign1(v.x);
    v.y = softsign1(v.y);
    v.z = softsign1(v.z);
    v.w = softsign1(v.w);
    __stcs(y + i, v);
  }
}

__global__ void __launch_bounds__(256) softsign_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = softsign1(x[i]);
}

}  // namespace

extern "C" int softsign(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return 0;
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const int64_t max_blocks = (int64_t)sms * 8;  // 8 blocks of 256 threads per SM, a grid-stride loop
  const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    const int64_t blocks = (n4 + 255) / 256 < max_blocks ? (n4 + 255) / 256 : max_blocks;
    softsign_vec4<<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  }
  const int64_t rest = n - n4 * 4;
  if (rest > 0) {
    const int64_t blocks = (rest + 255) / 256 < max_blocks ? (rest + 255) / 256 : max_blocks;
    softsign_scalar<<<(unsigned)blocks, 256, 0, stream>>>(x, y, n4 * 4, n);
  }
  return (int)cudaGetLastError();
}
