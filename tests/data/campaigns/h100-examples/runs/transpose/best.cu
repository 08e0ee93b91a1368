// Seed candidate for the transpose task: y[j, i] = x[i, j], x [R, C] and y [C, R], fp32.
// Correct but naive: one thread per element of x with a 2-D block of BLOCK_X x BLOCK_Y
// threads. Reads are coalesced (consecutive threads read consecutive columns of a row of x),
// but the writes are not: consecutive threads write elements R floats apart, one 32-byte sector
// per 4-byte value. Left on the table: staging a tile through shared memory (padded or
// swizzled against bank conflicts) so that both the reads and the writes are coalesced,
// several elements per thread, 16-byte vector accesses, TMA tile copies.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

KP_TUNE(BLOCK_X, 16, 32, 64)
KP_TUNE(BLOCK_Y, 8, 4, 16)

namespace {

// x is [rows, cols]; y is [cols, rows].
__global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
transpose_seed(const float* x, float* y, int64_t rows, int64_t cols) {
  const int64_t j = (int64_t)blockIdx.x * BLOCK_X + threadIdx.x;  // column of x
  const int64_t i = (int64_t)blockIdx.y * BLOCK_Y + threadIdx.y;  // row of x
  if (i < rows && j < cols) y[j * rows + i] = x[i * cols + j];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "transpose", {{"x", KP_FP32, 2, 2}},
                                 {{"y", KP_FP32, 2, 2}})) {
    return rc;
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (int rc = kp_expect_shape(args, "transpose", y, "y", {cols, rows})) return rc;
  const int64_t grid_x = (cols + BLOCK_X - 1) / BLOCK_X;
  const int64_t grid_y = (rows + BLOCK_Y - 1) / BLOCK_Y;
  if (int rc = kp_expect_at_most(args, "transpose", "grid x", grid_x, INT_MAX)) return rc;
  if (int rc = kp_expect_at_most(args, "transpose", "grid y", grid_y, 65535)) return rc;

  const dim3 block(BLOCK_X, BLOCK_Y);
  const dim3 grid((unsigned)grid_x, (unsigned)grid_y);
  transpose_seed<<<grid, block, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), rows, cols);
  return kp_check_launch(args, "transpose");
}
