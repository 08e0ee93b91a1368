// Softmax over rows: one block per row, max and sum reduced in shared memory, three passes
// over the row (max, sum of exponentials, write).
#include <cstdint>
#include <cuda_runtime.h>

template <typename Op>
__device__ float block_reduce(float v, float* smem, Op op, float identity) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  int warps = blockDim.x / 32;
  v = threadIdx.x < warps ? smem[threadIdx.x] : identity;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x == 0) smem[0] = v;
  __syncthreads();
  float r = smem[0];
  __syncthreads();
  return r;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  __shared__ float smem[32];
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_reduce(m, smem, [](float a, float b) { return fmaxf(a, b); }, -INFINITY);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
  s = block_reduce(s, smem, [](float a, float b) { return a + b; }, 0.f);
  float inv = 1.f / s;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) * inv;
}

extern "C" void softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  softmax_rows<<<(unsigned)rows, 1024, 0, stream>>>(x, y, cols);
}
