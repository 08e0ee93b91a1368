// Masked row sum with a bool mask: one warp per row.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void masked_rows(const float* __restrict__ x, const bool* __restrict__ m, float* __restrict__ y,
                            int64_t rows, int64_t cols) {
  int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.f;
  for (int64_t c = lane; c < cols; c += 32) s += m[row * cols + c] ? x[row * cols + c] : 0.f;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) y[row] = s;
}

extern "C" void masked_sum(const float* x, const bool* mask, float* y, int64_t rows, int64_t cols,
                           cudaStream_t stream) {
  masked_rows<<<(unsigned)((rows + 7) / 8), 256, 0, stream>>>(x, mask, y, rows, cols);
}
