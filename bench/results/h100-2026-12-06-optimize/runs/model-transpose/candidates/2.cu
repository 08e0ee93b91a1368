// Transpose, fp32: y[j, i] = x[i, j]. 32x32 tiles staged through shared memory (padded to 33
// columns against bank conflicts), so both the reads of x and the writes of y are full
// 128-byte rows per warp.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // a 32x8 block moves a 32x32 tile in four passes

__global__ void __launch_bounds__(kTile * kRowsPerPass)
transpose_tiled(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t c0 = (int64_t)blockIdx.x * kTile;  // first column of x in this tile
  const int64_t r0 = (int64_t)blockIdx.y * kTile;  // first row of x in this tile
  const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int k = 0; k < kTile; k += kRowsPerPass) {
    const int64_t r = r0 + ty + k, c = c0 + tx;
    if (r < rows && c < cols) tile[ty + k][tx] = __ldcs(x + r * cols + c);
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kTile; k += kRowsPerPass) {
    const int64_t c = c0 + ty + k, r = r0 + tx;  // y is [cols, rows]: row c of y, column r
    if (c < cols && r < rows) __stcs(y + c * rows + r, tile[tx][ty + k]);
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "transpose", {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 2, 2}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (int rc = kp_expect_shape(args, "transpose", y, "y", {cols, rows})) return rc;
  const int64_t grid_x = (cols + kTile - 1) / kTile;
  const int64_t grid_y = (rows + kTile - 1) / kTile;
  if (int rc = kp_expect_at_most(args, "transpose", "grid x", grid_x, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, "transpose", "grid y", grid_y, 65535)) return rc;
  if (grid_x > 0 && grid_y > 0) {
    transpose_tiled<<<dim3((unsigned)grid_x, (unsigned)grid_y), dim3(kTile, kRowsPerPass), 0,
                      (cudaStream_t)args->stream>>>(static_cast<const float*>(x.data), static_cast<float*>(y.data),
                                                    rows, cols);
  }
  return kp_check_launch(args, "transpose");
}
