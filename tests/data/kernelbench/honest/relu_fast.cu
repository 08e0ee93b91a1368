// ReLU, vectorized: each thread handles four floats through one 16-byte load and store.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}

__global__ void relu_tail(const float* __restrict__ x, float* __restrict__ y, int64_t from, int64_t n) {
  int64_t i = from + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

extern "C" void relu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  int64_t n4 = n / 4;
  if (n4 > 0) {
    int64_t blocks = (n4 + 255) / 256;
    relu_vec4<<<(unsigned)(blocks < 132 * 32 ? blocks : 132 * 32), 256, 0, stream>>>(
        reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  }
  if (n % 4) relu_tail<<<1, 4, 0, stream>>>(x, y, n4 * 4, n);
}
