// Honest candidate for examples/transpose: 32 x 32 tiles staged through shared memory (one
// column of padding against bank conflicts), so that both the reads of x and the writes of y
// are coalesced. Must pass every anti-cheat rule: ok.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;

// x is [rows, cols], y is [cols, rows].
__global__ void transpose_tiles(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t c = (int64_t)blockIdx.x * kTile + threadIdx.x;
  const int64_t r0 = (int64_t)blockIdx.y * kTile;
  for (int dy = threadIdx.y; dy < kTile; dy += kRowsPerPass) {
    if (r0 + dy < rows && c < cols) tile[dy][threadIdx.x] = x[(r0 + dy) * cols + c];
  }
  __syncthreads();
  // Written as y[c', r'] with r' running along threadIdx.x.
  const int64_t r = r0 + threadIdx.x;
  const int64_t c0 = (int64_t)blockIdx.x * kTile;
  for (int dx = threadIdx.y; dx < kTile; dx += kRowsPerPass) {
    if (c0 + dx < cols && r < rows) y[(c0 + dx) * rows + r] = tile[threadIdx.x][dx];
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1 || args->inputs[0].rank != 2) return KP_ERR_INVALID_ARGUMENT;
  const int64_t rows = args->inputs[0].shape[0], cols = args->inputs[0].shape[1];
  if ((rows + kTile - 1) / kTile > 65535) return KP_ERR_UNSUPPORTED_SHAPE;
  const dim3 block(kTile, kRowsPerPass);
  const dim3 grid((unsigned)((cols + kTile - 1) / kTile), (unsigned)((rows + kTile - 1) / kTile));
  transpose_tiles<<<grid, block, 0, (cudaStream_t)args->stream>>>(static_cast<const float*>(args->inputs[0].data),
                                                                  static_cast<float*>(args->outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
