// Honest candidate for examples/row_sum: one block per row, coalesced float4 loads, per-thread
// partial sums reduced with warp shuffles and then across the block's warps. Must pass every
// anti-cheat rule: ok.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock) row_sum_shuffle(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  const float* row = x + (int64_t)blockIdx.x * cols;
  float sum = 0.0f;
  if (cols % 4 == 0) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    for (int64_t j = threadIdx.x; j < cols / 4; j += kBlock) {
      float4 v = r4[j];
      sum += (v.x + v.y) + (v.z + v.w);
    }
  } else {
    for (int64_t j = threadIdx.x; j < cols; j += kBlock) sum += row[j];
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xFFFFFFFFu, sum, off);
  __shared__ float warp_sums[kBlock / 32];
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < kBlock / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xFFFFFFFFu, sum, off);
    if (threadIdx.x == 0) y[blockIdx.x] = sum;
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1 || args->inputs[0].rank != 2) return KP_ERR_INVALID_ARGUMENT;
  const int64_t rows = args->inputs[0].shape[0], cols = args->inputs[0].shape[1];
  if (rows > 0x7FFFFFFF) return KP_ERR_UNSUPPORTED_SHAPE;
  row_sum_shuffle<<<(unsigned)rows, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
