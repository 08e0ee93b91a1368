// Reference for the layernorm task: y = (x - mean) / sqrt(var + eps) * gamma + beta over the
// last dim, biased variance (as torch.nn.LayerNorm), fp32 in and out, eps from the scalars.
// One block per row; mean and the centred variance (two passes) are accumulated in double, and
// each output is computed in double and rounded once to fp32.
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

// Sum of v over the block, in double; every thread gets the result.
__device__ double block_sum(double v, double* red) {
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  const double total = red[0];
  __syncthreads();  // everyone has read red[0] before it is reused
  return total;
}

__global__ void layernorm_reference(const float* __restrict__ x, const float* __restrict__ gamma,
                                    const float* __restrict__ beta, float* __restrict__ y,
                                    int64_t cols, double eps) {
  __shared__ double red[kBlock];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;

  double sum = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) sum += (double)xr[j];
  const double mean = block_sum(sum, red) / (double)cols;

  double sq = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) {
    const double d = (double)xr[j] - mean;
    sq += d * d;
  }
  const double var = block_sum(sq, red) / (double)cols;
  const double rstd = 1.0 / sqrt(var + eps);

  for (int64_t j = tid; j < cols; j += kBlock) {
    yr[j] = (float)(((double)xr[j] - mean) * rstd * (double)gamma[j] + (double)beta[j]);
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "layernorm: expected 3 inputs (x, gamma, beta) and 1 output, got %d and %d",
                args->num_inputs, args->num_outputs);
  }
  if (args->num_scalars != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "layernorm: expected 1 scalar (eps), got %d",
                args->num_scalars);
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& gamma = args->inputs[1];
  const kp_tensor& beta = args->inputs[2];
  const kp_tensor& y = args->outputs[0];
  const double eps = args->scalars[0].f;
  if (!(eps >= 0.0) || !std::isfinite(eps)) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "layernorm: eps must be finite and >= 0, got %g",
                eps);
  }
  if (x.dtype != KP_FP32 || gamma.dtype != KP_FP32 || beta.dtype != KP_FP32 ||
      y.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "layernorm: all tensors must be fp32");
  }
  if (x.rank < 1 || x.rank > KP_MAX_RANK || x.rank != y.rank || gamma.rank != 1 ||
      beta.rank != 1) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "layernorm: need x, y of the same rank >= 1 and gamma, beta of rank 1 "
                "(ranks %d, %d, %d, %d)",
                x.rank, gamma.rank, beta.rank, y.rank);
  }
  int64_t rows = 1;
  for (int d = 0; d < x.rank; ++d) {
    if (x.shape[d] <= 0 || x.shape[d] != y.shape[d]) {
      return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "layernorm: dim %d: x has %lld, y has %lld", d,
                  (long long)x.shape[d], (long long)y.shape[d]);
    }
    if (d < x.rank - 1) rows *= x.shape[d];
  }
  const int64_t cols = x.shape[x.rank - 1];
  if (gamma.shape[0] != cols || beta.shape[0] != cols) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "layernorm: gamma (%lld) and beta (%lld) must match the last dim of x (%lld)",
                (long long)gamma.shape[0], (long long)beta.shape[0], (long long)cols);
  }
  if (!is_contiguous(x) || !is_contiguous(y) || !is_contiguous(gamma) || !is_contiguous(beta)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "layernorm: all tensors must be contiguous");
  }
  if (rows > INT_MAX) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "layernorm: %lld rows is too many",
                (long long)rows);
  }

  layernorm_reference<<<(unsigned)rows, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(gamma.data),
      static_cast<const float*>(beta.data), static_cast<float*>(y.data), cols, eps);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "layernorm: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
