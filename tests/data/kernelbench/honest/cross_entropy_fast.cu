// Cross entropy with int64 targets: one warp per row computes logsumexp(row) - row[target];
// a second kernel averages the per-row losses in a fixed order (deterministic).
#include <cstdint>
#include <cuda_runtime.h>

__global__ void row_loss(const float* __restrict__ p, const int64_t* __restrict__ t, float* __restrict__ loss,
                         int64_t rows, int64_t cols) {
  int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* r = p + row * cols;
  float m = -INFINITY;
  for (int64_t c = lane; c < cols; c += 32) m = fmaxf(m, r[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.f;
  for (int64_t c = lane; c < cols; c += 32) s += expf(r[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) loss[row] = logf(s) + m - r[t[row]];
}

__global__ void mean(const float* __restrict__ loss, float* __restrict__ out, int64_t rows) {
  __shared__ float part[1024];
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) s += loss[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0] / (float)rows;
}

extern "C" void cross_entropy(const float* p, const int64_t* t, float* loss, float* out, int64_t rows, int64_t cols,
                              cudaStream_t stream) {
  row_loss<<<(unsigned)((rows + 7) / 8), 256, 0, stream>>>(p, t, loss, rows, cols);
  mean<<<1, 1024, 0, stream>>>(loss, out, rows);
}
