// Reference for the softmax task: y[i, :] = exp(x[i, :] - max_i) / sum_j exp(x[i, j] - max_i),
// over the last dim, fp32 in and out. One block per row; the max is taken in fp32 (exact), the
// exponentials and the row sum in double, and each output is rounded once to fp32.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
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

__global__ void softmax_reference(const float* __restrict__ x, float* __restrict__ y,
                                  int64_t cols) {
  __shared__ double red[kBlock];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;

  float m = -INFINITY;
  for (int64_t j = tid; j < cols; j += kBlock) m = fmaxf(m, xr[j]);
  red[tid] = m;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = fmax(red[tid], red[tid + s]);
    __syncthreads();
  }
  const double row_max = red[0];
  __syncthreads();

  double sum = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) sum += exp((double)xr[j] - row_max);
  red[tid] = sum;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  const double row_sum = red[0];

  for (int64_t j = tid; j < cols; j += kBlock) {
    yr[j] = (float)(exp((double)xr[j] - row_max) / row_sum);
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "softmax: expected 1 input and 1 output, got %d and %d", args->num_inputs,
                args->num_outputs);
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (x.dtype != KP_FP32 || y.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "softmax: x and y must be fp32 (dtypes %d, %d)",
                x.dtype, y.dtype);
  }
  if (x.rank < 1 || x.rank > KP_MAX_RANK || x.rank != y.rank) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "softmax: x and y need the same rank >= 1 (got %d, %d)", x.rank, y.rank);
  }
  int64_t rows = 1;
  for (int d = 0; d < x.rank; ++d) {
    if (x.shape[d] <= 0 || x.shape[d] != y.shape[d]) {
      return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "softmax: dim %d: x has %lld, y has %lld", d,
                  (long long)x.shape[d], (long long)y.shape[d]);
    }
    if (d < x.rank - 1) rows *= x.shape[d];
  }
  const int64_t cols = x.shape[x.rank - 1];
  if (!is_contiguous(x) || !is_contiguous(y)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "softmax: x and y must be contiguous");
  }
  if (rows > INT_MAX) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "softmax: %lld rows is too many",
                (long long)rows);
  }

  softmax_reference<<<(unsigned)rows, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), cols);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "softmax: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
