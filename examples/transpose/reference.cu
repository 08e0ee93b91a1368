// Reference for the transpose task: y[j, i] = x[i, j], x [R, C] and y [C, R], fp32, row-major.
// One thread per output element: writes are coalesced, reads gather down a column of x. Values
// are copied, never computed, so the result is exact.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>

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
__global__ void transpose_reference(const float* __restrict__ x, float* __restrict__ y,
                                    int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
    const int64_t j = o / rows;  // row of y = column of x
    const int64_t i = o % rows;  // column of y = row of x
    y[o] = x[i * cols + j];
  }
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

  constexpr int kBlock = 256;
  const int64_t blocks_needed = (rows * cols + kBlock - 1) / kBlock;
  const unsigned grid = (unsigned)(blocks_needed < (1 << 20) ? blocks_needed : (1 << 20));
  transpose_reference<<<grid, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), rows, cols);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "transpose: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
