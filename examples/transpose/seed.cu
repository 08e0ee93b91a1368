// Seed candidate for the transpose task: y[j, i] = x[i, j], x [R, C] and y [C, R], fp32.
// Correct but naive: one thread per element of x with a 2-D block of BLOCK_X x BLOCK_Y
// threads. Reads are coalesced (consecutive threads read consecutive columns of a row of x),
// but the writes are not: consecutive threads write elements R floats apart, one 32-byte sector
// per 4-byte value. Left on the table: staging a tile through shared memory (padded or
// swizzled against bank conflicts) so that both the reads and the writes are coalesced,
// several elements per thread, 16-byte vector accesses, TMA tile copies.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

KP_TUNE(BLOCK_X, 32, 16, 64)
KP_TUNE(BLOCK_Y, 8, 4, 16)

namespace {

__attribute__((format(printf, 3, 4)))
int fail(kp_args* args, int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args->message, sizeof(args->message), fmt, ap);
  va_end(ap);
  return code;
}

bool is_contiguous(const kp_tensor& t) {
  int64_t expected = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// x is [rows, cols]; y is [cols, rows].
__global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
transpose_seed(const float* x, float* y, int64_t rows, int64_t cols) {
  const int64_t j = (int64_t)blockIdx.x * BLOCK_X + threadIdx.x;  // column of x
  const int64_t i = (int64_t)blockIdx.y * BLOCK_Y + threadIdx.y;  // row of x
  if (i < rows && j < cols) y[j * rows + i] = x[i * cols + j];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "transpose: expected 1 input and 1 output, got %d and %d", args->num_inputs,
                args->num_outputs);
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (x.dtype != KP_FP32 || y.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "transpose: x and y must be fp32 (dtypes %d, %d)",
                x.dtype, y.dtype);
  }
  if (x.rank != 2 || y.rank != 2) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "transpose: x and y must be 2-D (ranks %d, %d)",
                x.rank, y.rank);
  }
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (rows <= 0 || cols <= 0 || y.shape[0] != cols || y.shape[1] != rows) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "transpose: x is [%lld, %lld], so y must be [%lld, %lld], not [%lld, %lld]",
                (long long)rows, (long long)cols, (long long)cols, (long long)rows,
                (long long)y.shape[0], (long long)y.shape[1]);
  }
  if (!is_contiguous(x) || !is_contiguous(y)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "transpose: x and y must be contiguous");
  }
  const int64_t grid_x = (cols + BLOCK_X - 1) / BLOCK_X;
  const int64_t grid_y = (rows + BLOCK_Y - 1) / BLOCK_Y;
  if (grid_x > INT_MAX || grid_y > 65535) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "transpose: x [%lld, %lld] needs too many blocks",
                (long long)rows, (long long)cols);
  }

  const dim3 block(BLOCK_X, BLOCK_Y);
  const dim3 grid((unsigned)grid_x, (unsigned)grid_y);
  transpose_seed<<<grid, block, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), rows, cols);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "transpose: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
