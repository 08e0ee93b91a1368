// Transpose, fp32: y[j, i] = x[i, j]. A 256-thread block moves a 64x64 tile through shared
// memory padded to 65 columns, with 16-byte accesses on both sides: each thread reads four
// float4 of x (row segments of the tile) and writes four float4 of y (columns of the tile).
// Shapes that are not multiples of 64, or pointers not 16-byte aligned, take a 32x32 scalar path.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace {

constexpr int kTile = 64;

__global__ void __launch_bounds__(256)
transpose_tile64_vec4(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t c0 = (int64_t)blockIdx.x * kTile;  // first column of x in this tile
  const int64_t r0 = (int64_t)blockIdx.y * kTile;  // first row of x in this tile
  const int q = threadIdx.x & 15;                   // which float4 of a 64-float row
  const int r = threadIdx.x >> 4;                   // 0..15
#pragma unroll
  for (int k = 0; k < kTile; k += 16) {
    const float4 v = __ldcs(reinterpret_cast<const float4*>(x + (r0 + r + k) * cols + c0) + q);
    float* d = &tile[r + k][4 * q];
    d[0] = v.x;
    d[1] = v.y;
    d[2] = v.z;
    d[3] = v.w;
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kTile; k += 16) {
    const int j = r + k;  // column of x = row of y, within the tile
    float4 v;
    v.x = tile[4 * q + 0][j];
    v.y = tile[4 * q + 1][j];
    v.z = tile[4 * q + 2][j];
    v.w = tile[4 * q + 3][j];
    __stcs(reinterpret_cast<float4*>(y + (c0 + j) * rows + r0) + q, v);
  }
}

constexpr int kSmallTile = 32;

__global__ void __launch_bounds__(kSmallTile * 8)
transpose_tile32(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
  __shared__ float tile[kSmallTile][kSmallTile + 1];
  const int64_t c0 = (int64_t)blockIdx.x * kSmallTile;
  const int64_t r0 = (int64_t)blockIdx.y * kSmallTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int k = 0; k < kSmallTile; k += 8) {
    const int64_t r = r0 + ty + k, c = c0 + tx;
    if (r < rows && c < cols) tile[ty + k][tx] = x[r * cols + c];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kSmallTile; k += 8) {
    const int64_t c = c0 + ty + k, r = r0 + tx;
    if (c < cols && r < rows) y[c * rows + r] = tile[tx][ty + k];
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
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t stream = (cudaStream_t)args->stream;
  const bool aligned = ((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(yp)) & 15) == 0;
  const int tile = (aligned && rows % kTile == 0 && cols % kTile == 0) ? kTile : kSmallTile;
  const int64_t grid_x = (cols + tile - 1) / tile;
  const int64_t grid_y = (rows + tile - 1) / tile;
  if (int rc = kp_expect_at_most(args, "transpose", "grid x", grid_x, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, "transpose", "grid y", grid_y, 65535)) return rc;
  if (grid_x > 0 && grid_y > 0) {
    const dim3 grid((unsigned)grid_x, (unsigned)grid_y);
    if (tile == kTile)
      transpose_tile64_vec4<<<grid, 256, 0, stream>>>(xp, yp, rows, cols);
    else
      transpose_tile32<<<grid, dim3(kSmallTile, 8), 0, stream>>>(xp, yp, rows, cols);
  }
  return kp_check_launch(args, "transpose");
}
