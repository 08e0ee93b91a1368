// Writes zeros: the "kernel" of the zeros and constant cheats.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void fill_k(float* y, int64_t n, float v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) y[i] = v;
}

extern "C" void fill(float* y, int64_t n, float v, cudaStream_t stream) { fill_k<<<132 * 8, 256, 0, stream>>>(y, n, v); }
