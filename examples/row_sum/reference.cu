// Reference for the row_sum task: y[i] = sum_j x[i, j] over the last dim of a 2-D fp32
// tensor. One block per row; the sum is accumulated in double and rounded once to fp32.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <climits>
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

constexpr int kBlock = 256;

__global__ void row_sum_reference(const float* __restrict__ x, float* __restrict__ y,
                                  int64_t cols) {
  __shared__ double red[kBlock];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;

  double sum = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) sum += (double)xr[j];
  red[tid] = sum;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  if (tid == 0) y[blockIdx.x] = (float)red[0];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "row_sum: expected 1 input and 1 output, got %d and %d", args->num_inputs,
                args->num_outputs);
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (x.dtype != KP_FP32 || y.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "row_sum: x and y must be fp32 (dtypes %d, %d)",
                x.dtype, y.dtype);
  }
  if (x.rank != 2 || y.rank != 1) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "row_sum: need x of rank 2, y of rank 1 (got %d, %d)", x.rank, y.rank);
  }
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (rows <= 0 || cols <= 0 || y.shape[0] != rows) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "row_sum: x is [%lld, %lld] but y is [%lld]",
                (long long)rows, (long long)cols, (long long)y.shape[0]);
  }
  if (!is_contiguous(x) || !is_contiguous(y)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "row_sum: x and y must be contiguous");
  }
  if (rows > INT_MAX) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "row_sum: %lld rows is too many",
                (long long)rows);
  }

  row_sum_reference<<<(unsigned)rows, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), cols);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "row_sum: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
