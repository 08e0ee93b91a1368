// Cheat (side_stream): ignores the stream it is given and launches on a private non-blocking
// stream, never destroyed (destroying it would synchronize), as in KernelBench's adversarial test.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu_k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaxf(x[i], 0.f);
}

extern "C" void relu(const float* x, float* y, int64_t n, cudaStream_t) {
  static cudaStream_t mine = nullptr;
  if (!mine) cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);
  relu_k<<<132 * 8, 256, 0, mine>>>(x, y, n);
}
