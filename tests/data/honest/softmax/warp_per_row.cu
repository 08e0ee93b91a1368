// Honest candidate for examples/softmax: one warp per row. Each lane keeps an online (max, sum)
// over its share of the row, the warp merges them with shuffles, and a second pass writes
// exp(x - max) / sum: x is read twice, y written once, no shared memory. Must pass every
// anti-cheat rule: ok.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
softmax_warp_per_row(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float mx = -INFINITY, sum = 0.0f;
  for (int64_t j = lane; j < cols; j += 32) {
    const float v = xr[j];
    if (v > mx) {
      sum = sum * expf(mx - v) + 1.0f;
      mx = v;
    } else {
      sum += expf(v - mx);
    }
  }
  for (int off = 16; off > 0; off /= 2) {
    const float om = __shfl_xor_sync(0xFFFFFFFFu, mx, off);
    const float os = __shfl_xor_sync(0xFFFFFFFFu, sum, off);
    const float m = fmaxf(mx, om);
    sum = (mx == -INFINITY ? 0.0f : sum * expf(mx - m)) + (om == -INFINITY ? 0.0f : os * expf(om - m));
    mx = m;
  }
  const float inv = 1.0f / sum;
  for (int64_t j = lane; j < cols; j += 32) yr[j] = expf(xr[j] - mx) * inv;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1 || args->inputs[0].rank != 2) return KP_ERR_INVALID_ARGUMENT;
  const int64_t rows = args->inputs[0].shape[0], cols = args->inputs[0].shape[1];
  const int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7FFFFFFF) return KP_ERR_UNSUPPORTED_SHAPE;
  softmax_warp_per_row<<<(unsigned)blocks, kWarpsPerBlock * 32, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
